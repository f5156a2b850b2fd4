"""Session fixtures: a private QUARRY_HOME and one shared, real (Lucene-indexed) collection.

Building an index spawns a JVM (~1-2 s), so the shared collection is built once per session;
tests that change collections build their own under their own names.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import long_doc, topic_docs, write_jsonl

SHARED = "shared"
SHARED_TOPIC_DOCS = 70  # > 50 so that the page-limit cap of read_search_results is observable


@pytest.fixture(scope="session")
def quarry_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh QUARRY_HOME for the whole session (also exported, so nothing writes ./.quarry)."""
    home = tmp_path_factory.mktemp("quarry-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        yield home


@pytest.fixture(scope="session")
def shared_collection(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory):
    """`shared`: 70 topic documents that all mention "retrieval", plus one 302-line document."""
    from stores.collection import Collection, ingest

    long_rec, _ = long_doc()
    src = write_jsonl(tmp_path_factory.mktemp("shared-src") / "shared.jsonl",
                      [*topic_docs(SHARED_TOPIC_DOCS), long_rec])
    ingest(src, SHARED, home=quarry_home)
    return Collection(SHARED, home=quarry_home)
