"""A named collection: its corpus store and indexes, the all-or-nothing ingest, and reindex.

Ingest writes a complete new version — corpus database and Lucene index — and only then points
the collection at it (`stores.home.CollectionPaths`), holding the collection's writer lock
(`stores.locks`) throughout: a failed or interrupted ingest leaves the previous version
searchable and unchanged, readers see the old or the new version and never a mix, and a second
ingest of the same name is refused while one runs. The two previous committed versions and every
version a running job pinned are kept (`stores.versions`), so a job or search that opened one goes
on reading it.

Changes are incremental (`stores.incremental`): re-ingesting a source into an existing
collection, `add` and `remove` compare documents by content hash and write a new version in
which only new, changed and removed documents differ; the dense index, when the current version
has one, is updated the same way into the new version (`stores.dense_update`), so unchanged chunks
are never re-embedded and corpus and vectors switch together (they cannot drift apart).
The BM25 index of the new version is rebuilt from its staged corpus, so it scores exactly as a
fresh ingest would. Why not append: Anserini's `IndexCollection` (Pyserini 1.6.0) parses
`-append` but opens the index with `OpenMode.CREATE` (tried here: the "appended" index held only
the new documents), and a child JVM indexing just 5 documents took 2.1–2.5 s against 3.6 s for
rebuilding CACM's 3,204, so an in-process IndexWriter would save little at this scale, and its
deletions would skew BM25 statistics until a merge (docs/notes/performance-history.md).
Everything is staged first and committed last: a change that fails leaves every store as it was
(`stores.collection_versions` stages and commits; `add` and `remove` are `stores.collection_edits`).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stores.citations import CitationGraph
from stores.collection_versions import (
    bm25_params,
    carry_dense_over,
    commit_version,
    index_meta,
    new_staging,
    set_params,
    stage_dense_update,
)
from stores.corpus import CorpusStore, source_fingerprint, write_corpus_db
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import CorpusSource, ProgressFn, RecordStream, docids, read_corpus
from stores.home import CollectionPaths, collection_paths, quarry_home
from stores.incremental import Delta, diff, update_corpus_db
from stores.locks import writer_lock
from stores.lucene import IndexMeta, LuceneIndex
from stores.lucene_build import IndexFeed, build_index, write_meta
from stores.versions import tidy

if TYPE_CHECKING:
    from stores.chunk_vectors import ChunkVectors
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
    added: int = 0  # documents new to the collection
    updated: int = 0  # documents whose content changed
    removed: int = 0
    kept: int = 0  # documents already stored unchanged (untouched)
    skipped: tuple[str, ...] = ()  # "path: reason" of bad files left out
    unsupported: tuple[str, ...] = ()  # files of types Quarry does not read
    embedded: int | None = None  # chunks embedded into the dense index (None: no dense index updated)

    def summary(self) -> str:
        """One line: "812 added, 3 skipped" (with updated/removed/unchanged/unsupported when any)."""
        parts = [] if self.removed and not self.added else [f"{self.added} added"]
        parts += [
            f"{n} {what}"
            for n, what in (
                (self.updated, "updated"),
                (self.removed, "removed"),
                (self.kept, "unchanged"),
                (len(self.skipped), "skipped"),
                (len(self.unsupported), "of unsupported type"),
            )
            if n
        ]
        return ", ".join(parts)


class Collection:
    """Opened lazily: the corpus store and the Lucene index are loaded on first use."""

    def __init__(self, name: str, home: Path | None = None, version: str | None = None) -> None:
        self.name = name
        self.paths: CollectionPaths = collection_paths(name, home, version)
        if not self.paths.corpus_db.is_file():
            raise QuarryError(
                "no_collection",
                f"collection {name!r} does not exist under {self.paths.root.parent}",
                f"ingest it first: quarry ingest PATH --name {name}",
            )
        self._corpus: CorpusStore | None = None
        self._lucene: LuceneIndex | None = None
        self._citations: CitationGraph | None = None
        self._dense: DenseIndex | None = None
        self._chunk_vectors: ChunkVectors | None = None

    @property
    def version(self) -> str | None:
        """The version these stores belong to (None for a collection written before versions)."""
        return self.paths.version

    @property
    def corpus(self) -> CorpusStore:
        if self._corpus is None:
            self._corpus = CorpusStore(self.paths.corpus_db, self.name)
        return self._corpus

    @property
    def lucene(self) -> LuceneIndex:
        if self._lucene is None:
            index = LuceneIndex(self.paths.lucene_dir, self.name)  # `bad_index_meta` if its settings are unreadable
            if index.meta.fingerprint != self.corpus.fingerprint:
                raise QuarryError(
                    "stale_index",
                    f"the Lucene index of {self.name!r} is older than its corpus",
                    f"rebuild it: quarry index {self.name}",
                )
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
    def chunk_vectors(self) -> ChunkVectors:
        """Chunk vectors embedded on demand and cached with this version (no dense index needed)."""
        if self._chunk_vectors is None:
            from stores.chunk_vectors import ChunkVectors  # numpy only; the model loads on first embedding

            self._chunk_vectors = ChunkVectors(self.paths.chunk_vectors_db, self.corpus)
        return self._chunk_vectors

    @property
    def citations(self) -> CitationGraph:
        """The citation graph (built on first use, shared per corpus version; empty without links)."""
        if self._citations is None:
            self._citations = CitationGraph.from_store(self.corpus)
        return self._citations


def ingest(
    path: str | Path,
    name: str,
    *,
    home: Path | None = None,
    build_lucene: bool = True,
    force: bool = False,
    k1: float | None = None,
    b: float | None = None,
    strict: bool = False,
    progress: ProgressFn | None = None,
) -> IngestReport:
    """Validate `path`, then atomically make it the new version of collection `name` (with its BM25 index).

    Into an existing collection only what changed is applied (see the module docstring);
    `force` rebuilds everything. Bad document files are skipped and reported unless `strict`.
    A new collection (or `force`) from a BEIR folder or JSONL file is validated in the pass that
    stores and indexes it (`read_corpus(one_pass=True)`): a bad record fails the ingest at that
    pass's end, naming every problem, and the staged version is dropped — nothing changes."""
    paths = collection_paths(name, home or quarry_home())
    src = read_corpus(
        path, progress, strict=strict, one_pass=force or not paths.corpus_db.is_file(), home=home or quarry_home()
    )
    with writer_lock(paths.root, name, drop_if_new=True):  # a failed first ingest leaves no folder
        paths = collection_paths(name, home or quarry_home())  # the version current now that we hold the lock
        tidy(paths)
        previous, _ = index_meta(paths)
        if paths.corpus_db.is_file() and not force:
            return _update(paths, name, src, previous, build_lucene=build_lucene, k1=k1, b=b, progress=progress)
        staging = new_staging(paths)
        try:
            if build_lucene:
                fingerprint = store_and_index(
                    staging, src, name, bm25_params(paths, previous, k1, b), progress
                ).fingerprint
            else:
                fingerprint = write_corpus_db(staging / "corpus.sqlite", src, name, progress)
            note = carry_dense_over(paths, name, staging, fingerprint) if paths.corpus_db.is_file() else None
            commit_version(paths, staging, fingerprint)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    report = _report(name, src, build_lucene)
    return replace(report, warnings=[*report.warnings, note]) if note else report


def _update(
    paths: CollectionPaths,
    name: str,
    src: CorpusSource,
    previous: IndexMeta | None,
    *,
    build_lucene: bool,
    k1: float | None,
    b: float | None,
    progress: ProgressFn | None,
) -> IngestReport:
    """Ingest into an existing collection, its writer lock held: nothing when the documents are the
    same (only new BM25 parameters stored), else only what changed applied."""
    if isinstance(src.records, RecordStream) and not src.records.checked:
        src.records.check()  # made by another ingest since: compared, not written afresh
    fingerprint = source_fingerprint(src)
    report = _report(name, src, build_lucene)
    old = CorpusStore(paths.corpus_db, name)
    same, old_fp, hashes = old.fingerprint == fingerprint, old.fingerprint, old.hashes()
    old.close()
    index_ok = previous is not None and previous.fingerprint == fingerprint
    if same and (index_ok or not build_lucene):
        if index_ok and previous is not None and (k1 is not None or b is not None):
            set_params(paths, previous, k1, b)  # same documents: only the stored BM25 parameters change
        return replace(report, unchanged=True, indexed=index_ok, added=0, kept=len(src.records))
    delta = diff(hashes, src.records, remove_missing=True)
    embedded, notes = apply_delta(
        paths,
        name,
        delta,
        old_fp,
        fingerprint,
        src=src,
        build_lucene=build_lucene,
        k1=k1,
        b=b,
        previous=previous,
        progress=progress,
    )
    return replace(
        report,
        added=delta.added,
        updated=delta.updated,
        removed=len(delta.removed),
        kept=delta.kept,
        embedded=embedded,
        warnings=[*report.warnings, *notes],
    )


def _report(name: str, src: CorpusSource, indexed: bool) -> IngestReport:
    """What an ingest of `src` reports before it is compared with the collection: all added."""
    return IngestReport(
        name,
        len(src.records),
        len(src.citations),
        len(src.queries),
        sorted(src.qrels),
        unchanged=False,
        indexed=indexed,
        warnings=src.warnings,
        answers=len(src.answers),
        added=len(src.records),
        skipped=tuple(src.skipped),
        unsupported=tuple(src.unsupported),
    )


def store_and_index(
    staging: Path, src: CorpusSource, name: str, params: tuple[float, float], progress: ProgressFn | None
) -> IndexMeta:
    """Store the documents and build their BM25 index in one pass: each record goes to the
    corpus database and to Anserini's pipes as it is read (and, from an unchecked stream, as it
    is validated), so the two run side by side (`stores.lucene_build`); then the indexer
    finishes (merges its segments)."""
    began = time.perf_counter()
    with IndexFeed(staging / "lucene") as feed:
        fingerprint = write_corpus_db(staging / "corpus.sqlite", src, name, progress, each=feed.add)
        if progress:  # the indexer ends with what the pipes still hold and its merge: no count to show
            progress("indexing", 0, None)
        count = feed.finish()
    if progress:
        progress("indexing", count, count)
    return write_meta(staging / "lucene", fingerprint, *params, count, time.perf_counter() - began)


def apply_delta(
    paths: CollectionPaths,
    name: str,
    delta: Delta,
    old_fp: str,
    fingerprint: str,
    *,
    src: CorpusSource | None,
    build_lucene: bool,
    k1: float | None,
    b: float | None,
    previous: IndexMeta | None,
    progress: ProgressFn | None,
) -> tuple[int | None, list[str]]:
    """Stage a new version = current version + `delta` (corpus, BM25 index, dense index), then
    commit all three with one switch; the caller holds the writer lock. Returns the chunks
    embedded (None: no dense index updated) and warnings (a dense index left behind)."""
    staging = new_staging(paths)
    staged, notes = None, []
    try:
        count = update_corpus_db(
            paths.corpus_db,
            staging / "corpus.sqlite",
            delta,
            fingerprint=fingerprint,
            src=src,
            order=docids(src.records) if src else None,
        )
        if count == 0:
            raise QuarryError(
                "empty_collection",
                f"that would leave collection {name!r} without documents",
                "keep at least one document, or ingest a new source with --force",
            )
        corpus = CorpusStore(staging / "corpus.sqlite", name)
        try:
            if build_lucene:
                k1_, b_ = bm25_params(paths, previous, k1, b)
                build_index(
                    corpus.iter_records(),
                    staging / "lucene",
                    fingerprint=fingerprint,
                    k1=k1_,
                    b=b_,
                    progress=progress,
                    total=count,
                )
            staged, notes = stage_dense_update(paths, name, corpus, delta, old_fp, staging, progress)
        finally:
            corpus.close()
        commit_version(paths, staging, fingerprint)
    except BaseException:
        if staged is not None:
            staged.discard()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return (None if staged is None else staged.embedded), notes


def reindex(
    name: str,
    *,
    home: Path | None = None,
    k1: float | None = None,
    b: float | None = None,
    progress: ProgressFn | None = None,
) -> IndexMeta:
    """(Re)build the BM25 index of an ingested collection; keep stored k1/b unless given. An
    index whose settings are unreadable is rebuilt (into a new version, with its dense index)."""
    col = Collection(name, home)
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        previous, _ = index_meta(col.paths)
        if previous and previous.fingerprint == col.corpus.fingerprint:
            # Same documents: only the scoring parameters change, no need to re-index.
            return set_params(col.paths, previous, k1, b)
        k1, b = bm25_params(col.paths, previous, k1, b)
        staging = new_staging(col.paths)
        try:
            os.link(col.paths.corpus_db, staging / "corpus.sqlite")  # the same corpus, a new index
            meta = build_index(
                col.corpus.iter_records(),
                staging / "lucene",
                fingerprint=col.corpus.fingerprint,
                k1=k1,
                b=b,
                progress=progress,
                total=col.corpus.count(),
            )
            carry_dense_over(col.paths, name, staging, col.corpus.fingerprint)
            commit_version(col.paths, staging, col.corpus.fingerprint)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return meta
