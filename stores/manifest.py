"""What a result was computed from: the collection's data and index parameters, and the code.

A job's result carries a manifest (built by the final activity through the node runtime) so a
reader can tell whether two results are comparable and rebuild the conditions of either. The
store part lives here because it reads store metadata and the checkout; the policy part (prompt
hashes, model names) is the nodes' (nodes.job.manifest).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any

from stores.collection import Collection
from stores.errors import QuarryError
from stores.lucene import ANALYZER

REPO = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version and, in a git checkout, the commit (read from .git, no subprocess)."""
    try:
        version = metadata.version("quarry")
    except metadata.PackageNotFoundError:
        version = "unknown"
    head = REPO / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            target = REPO / ".git" / ref[5:]
            commit = target.read_text().strip() if target.is_file() else _packed_ref(ref[5:])
        else:
            commit = ref
    except OSError:
        commit = ""
    return f"{version}+{commit[:12]}" if commit else version


def _packed_ref(name: str) -> str:
    packed = REPO / ".git" / "packed-refs"
    for line in packed.read_text().splitlines() if packed.is_file() else []:
        if line.endswith(" " + name):
            return line.split(" ", 1)[0]
    return ""


def collection_manifest(col: Collection) -> dict[str, Any]:
    """Corpus content hash and version, BM25 parameters and analyzer, and the embedding model
    (None when the collection has no current dense index)."""
    lucene = col.lucene.meta
    try:
        meta = col.dense.meta
        dense_model: str | None = meta.model if meta else None
        runtime: str | None = meta.runtime if meta else None
    except QuarryError:
        dense_model = runtime = None
    return {
        "collection": col.name,
        "collection_version": col.version,
        "corpus_sha256": col.corpus.fingerprint,
        "documents": lucene.documents,
        "bm25": {"k1": lucene.k1, "b": lucene.b, "analyzer": ANALYZER},
        "embedding_model": dense_model,
        "embedding_runtime": runtime,  # the index's vectors; queries are embedded by this process's runtime
        "code_version": code_version(),
    }
