"""A named collection: its corpus store and indexes, and the all-or-nothing ingest.

Ingest writes the new corpus database and the new Lucene index beside the old ones and swaps
them in only when both are complete, so a failed or interrupted ingest leaves the previous
corpus searchable and unchanged.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stores.citations import CitationGraph
from stores.corpus import CorpusStore, source_fingerprint, write_corpus_db
from stores.errors import QuarryError
from stores.home import CollectionPaths, collection_paths, quarry_home
from stores.lucene import DEFAULT_B, DEFAULT_K1, IndexMeta, LuceneIndex, build_index, replace_dir
from stores.readers import ProgressFn, read_corpus

if TYPE_CHECKING:
    from stores.dense import DenseIndex


@dataclass(frozen=True)
class IngestReport:
    name: str
    documents: int
    citations: int
    queries: int
    splits: list[str]
    unchanged: bool
    indexed: bool
    warnings: list[str]
    answers: int = 0


class Collection:
    """Opened lazily: the corpus store and the Lucene index are loaded on first use."""

    def __init__(self, name: str, home: Path | None = None) -> None:
        self.name = name
        self.paths: CollectionPaths = collection_paths(name, home)
        if not self.paths.corpus_db.is_file():
            raise QuarryError("no_collection", f"collection {name!r} does not exist under {self.paths.root.parent}",
                              f"ingest it first: quarry ingest PATH --name {name}")
        self._corpus: CorpusStore | None = None
        self._lucene: LuceneIndex | None = None
        self._citations: CitationGraph | None = None
        self._dense: DenseIndex | None = None

    @property
    def corpus(self) -> CorpusStore:
        if self._corpus is None:
            self._corpus = CorpusStore(self.paths.corpus_db, self.name)
        return self._corpus

    @property
    def lucene(self) -> LuceneIndex:
        if self._lucene is None:
            index = LuceneIndex(self.paths.lucene_dir, self.name)
            if index.meta.fingerprint != self.corpus.fingerprint:
                raise QuarryError("stale_index", f"the Lucene index of {self.name!r} is older than its corpus",
                                  f"rebuild it: quarry index {self.name}")
            self._lucene = index
        return self._lucene

    @property
    def dense(self) -> DenseIndex:
        """The MiniLM/Chroma chunk index; `no_dense_index` / `stale_dense_index` if not current."""
        if self._dense is None:
            from stores.dense import DenseIndex  # chromadb and torch load only when used

            index = DenseIndex(self.paths, self.name)
            index.require_current(self.corpus.fingerprint)
            self._dense = index
        return self._dense

    @property
    def citations(self) -> CitationGraph:
        """The citation graph (built on first use, shared per corpus version; empty without links)."""
        if self._citations is None:
            self._citations = CitationGraph.from_store(self.corpus)
        return self._citations


def _staging(paths: CollectionPaths) -> Path:
    paths.root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".staging-", dir=paths.root))


def ingest(path: str | Path, name: str, *, home: Path | None = None, build_lucene: bool = True,
           force: bool = False, k1: float | None = None, b: float | None = None,
           progress: ProgressFn | None = None) -> IngestReport:
    """Validate `path`, then atomically replace collection `name` with it (and its BM25 index)."""
    paths = collection_paths(name, home or quarry_home())
    src = read_corpus(path, progress)
    fingerprint = source_fingerprint(src)
    report = IngestReport(name, len(src.records), len(src.citations), len(src.queries), sorted(src.qrels),
                          unchanged=False, indexed=build_lucene, warnings=src.warnings,
                          answers=len(src.answers))
    if paths.corpus_db.is_file() and not force:
        old = CorpusStore(paths.corpus_db, name)
        same = old.fingerprint == fingerprint
        old.close()
        index_ok = (paths.lucene_dir / "quarry-index.json").is_file() and \
            IndexMeta.load(paths.lucene_dir).fingerprint == fingerprint
        if same and (index_ok or not build_lucene):
            if index_ok and (k1 is not None or b is not None):
                reindex(name, home=home, k1=k1, b=b)  # same documents: only the stored BM25 parameters change
            return replace(report, unchanged=True, indexed=index_ok)
    staging = _staging(paths)
    try:
        db = staging / "corpus.sqlite"
        write_corpus_db(db, src, name, progress)
        new_index = staging / "lucene"
        if build_lucene:
            previous = IndexMeta.load(paths.lucene_dir) if (paths.lucene_dir / "quarry-index.json").is_file() else None
            build_index(src.records, new_index, fingerprint=fingerprint,
                        k1=k1 if k1 is not None else (previous.k1 if previous else DEFAULT_K1),
                        b=b if b is not None else (previous.b if previous else DEFAULT_B),
                        progress=progress, total=len(src.records))
        # Commit point: corpus first via atomic rename, then the index folder.
        os.replace(db, paths.corpus_db)
        if build_lucene:
            replace_dir(new_index, paths.lucene_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def reindex(name: str, *, home: Path | None = None, k1: float | None = None, b: float | None = None,
            progress: ProgressFn | None = None) -> IndexMeta:
    """(Re)build the BM25 index of an ingested collection; keep stored k1/b unless given."""
    col = Collection(name, home)
    meta_file = col.paths.lucene_dir / "quarry-index.json"
    previous = IndexMeta.load(col.paths.lucene_dir) if meta_file.is_file() else None
    k1 = k1 if k1 is not None else (previous.k1 if previous else DEFAULT_K1)
    b = b if b is not None else (previous.b if previous else DEFAULT_B)
    if previous and previous.fingerprint == col.corpus.fingerprint:
        # Same documents: only the scoring parameters change, no need to re-index.
        meta = replace(previous, k1=float(k1), b=float(b))
        meta.dump(col.paths.lucene_dir)
        return meta
    staging = _staging(col.paths)
    try:
        new_index = staging / "lucene"
        meta = build_index(col.corpus.iter_records(), new_index, fingerprint=col.corpus.fingerprint,
                           k1=k1, b=b, progress=progress, total=col.corpus.count())
        replace_dir(new_index, col.paths.lucene_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return meta
