"""A worker's warm-up (`NodeRuntime.warm`): what it opens, and what it leaves for the jobs."""

from __future__ import annotations

import shutil
from pathlib import Path

from nodes.job.runtime import NodeRuntime
from stores.collection import Collection, ingest
from stores.embedder import model_available
from tests.fakes import search_docs, write_jsonl


def test_warm_up_opens_each_usable_collection_and_skips_a_broken_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = write_jsonl(tmp_path / "lit.jsonl", search_docs())
    ingest(src, "good", home=home)
    ingest(src, "broken", home=home)
    shutil.rmtree(Collection("broken", home).paths.lucene_dir)  # its jobs will say: no_index
    rt = NodeRuntime(home)
    opened = rt.warm()
    assert "good" in opened and "broken" not in opened
    assert ("MiniLM" in opened) == model_available()
    assert ("good", Collection("good", home).paths.version) in rt._collections, "the searcher stays open for jobs"


def test_warm_up_of_an_empty_home_opens_no_collection(tmp_path: Path) -> None:
    opened = NodeRuntime(tmp_path / "empty").warm()
    assert set(opened) <= {"verifier"}
