"""A named collection: its corpus store and indexes, and the all-or-nothing ingest.

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
deletions would skew BM25 statistics until a merge (docs/performance.md).
Everything is staged first and committed last: a change that fails leaves every store as it was.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stores.additions import read_additions, refuse_replacing_other_files
from stores.atomic import write_atomic
from stores.citations import CitationGraph
from stores.corpus import CorpusStore, source_fingerprint, write_corpus_db
from stores.errors import QuarryError
from stores.home import CURRENT_FILE, VERSIONS_DIR, CollectionPaths, collection_paths, ensure_home, quarry_home
from stores.incremental import Delta, delta_fingerprint, diff, removal, update_corpus_db
from stores.locks import writer_lock
from stores.lucene import DEFAULT_B, DEFAULT_K1, META_FILE, IndexMeta, LuceneIndex, build_index
from stores.readers import CorpusSource, ProgressFn, docids, read_corpus
from stores.versions import STAGING_PREFIX, mark_committed, prune, tidy

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
        parts += [f"{n} {what}" for n, what in ((self.updated, "updated"), (self.removed, "removed"),
                                                (self.kept, "unchanged"), (len(self.skipped), "skipped"),
                                                (len(self.unsupported), "of unsupported type")) if n]
        return ", ".join(parts)


class Collection:
    """Opened lazily: the corpus store and the Lucene index are loaded on first use."""

    def __init__(self, name: str, home: Path | None = None, version: str | None = None) -> None:
        self.name = name
        self.paths: CollectionPaths = collection_paths(name, home, version)
        if not self.paths.corpus_db.is_file():
            raise QuarryError("no_collection", f"collection {name!r} does not exist under {self.paths.root.parent}",
                              f"ingest it first: quarry ingest PATH --name {name}")
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


KEEP_VERSIONS = 3  # the current one and the two before it (readers may still hold them)


def _staging(paths: CollectionPaths) -> Path:
    ensure_home(paths.root.parent.parent)  # the first ingest usually creates the home: private from the start
    paths.root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=paths.root))


def _commit(paths: CollectionPaths, staging: Path, fingerprint: str) -> str:
    """Make `staging` (a complete corpus + BM25 index + dense index, if any) the current
    version; then mark it committed and prune what nobody may read (`stores.versions`)."""
    version = f"{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 10**9:09d}-{fingerprint[:8]}"
    versions = paths.root / VERSIONS_DIR
    versions.mkdir(exist_ok=True)
    staging.rename(versions / version)
    write_atomic(paths.root / CURRENT_FILE, version)  # the commit point
    try:  # after the commit point the change stands: bookkeeping that fails is reported, not raised
        mark_committed(paths.root, version)
        prune(paths, paths.root.name, paths.root.parent.parent, KEEP_VERSIONS)
    except Exception as exc:  # the next writer marks and prunes again
        warnings.warn(f"collection {paths.root.name!r} switched to version {version}, but its old versions "
                      f"could not be pruned ({exc}); the next change tries again", RuntimeWarning, stacklevel=2)
    if paths.version is None:  # a collection from before versions: its root files are superseded
        for legacy in ("corpus.sqlite", "lucene", "chroma"):
            target = paths.root / legacy
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
    return version


def _index_meta(paths: CollectionPaths) -> tuple[IndexMeta | None, bool]:
    """(the version's BM25 settings, whether it has a BM25 index). Unreadable settings (a kill
    while an older Quarry rewrote them in place) give (None, True): the writer rebuilds the
    index, with the parameters of the newest older version that still has readable ones."""
    if not (paths.lucene_dir / META_FILE).is_file():
        return None, False
    try:
        return IndexMeta.load(paths.lucene_dir), True
    except QuarryError:
        return None, True


def _params(paths: CollectionPaths, previous: IndexMeta | None, k1: float | None,
            b: float | None) -> tuple[float, float]:
    """k1/b for a new index: the given ones, else the stored ones, else (settings unreadable)
    those of the newest older version that has them, else Anserini's defaults."""
    if previous is None and paths.version is not None:
        for folder in sorted((paths.root / VERSIONS_DIR).iterdir(), key=lambda p: p.name, reverse=True):
            if folder.name != paths.version and (folder / "lucene" / META_FILE).is_file():
                try:
                    previous = IndexMeta.load(folder / "lucene")
                    break
                except QuarryError:
                    continue
    return (k1 if k1 is not None else (previous.k1 if previous else DEFAULT_K1),
            b if b is not None else (previous.b if previous else DEFAULT_B))


def _has_dense(paths: CollectionPaths) -> bool:
    """Whether any version (or the root, before per-version indexes) has a dense index: only
    then are chromadb and torch loaded."""
    return (paths.legacy_chroma_dir.is_dir()
            or any((p / "chroma").is_dir() for p in (paths.root / VERSIONS_DIR).glob("*")))


def _carry_dense(paths: CollectionPaths, name: str, staging: Path, fingerprint: str) -> str | None:
    if not _has_dense(paths):
        return None
    from stores.dense_update import carry_dense

    return carry_dense(paths, name, staging, fingerprint)


def _stage_dense(paths: CollectionPaths, name: str, corpus: CorpusStore, delta: Delta, old_fp: str,
                 staging: Path, progress: ProgressFn | None):
    if not _has_dense(paths):
        return None, []  # a lexical-only collection
    from stores.dense_update import stage_version_dense

    return stage_version_dense(paths, name, corpus, delta, old_fp, staging, progress)


def ingest(path: str | Path, name: str, *, home: Path | None = None, build_lucene: bool = True,
           force: bool = False, k1: float | None = None, b: float | None = None, strict: bool = False,
           progress: ProgressFn | None = None) -> IngestReport:
    """Validate `path`, then atomically make it the new version of collection `name` (with its BM25 index).

    Into an existing collection only what changed is applied (see the module docstring);
    `force` rebuilds everything. Bad document files are skipped and reported unless `strict`."""
    paths = collection_paths(name, home or quarry_home())
    src = read_corpus(path, progress, strict=strict)
    fingerprint = source_fingerprint(src)
    report = IngestReport(name, len(src.records), len(src.citations), len(src.queries), sorted(src.qrels),
                          unchanged=False, indexed=build_lucene, warnings=src.warnings,
                          answers=len(src.answers), added=len(src.records), skipped=tuple(src.skipped),
                          unsupported=tuple(src.unsupported))
    with writer_lock(paths.root, name):
        paths = collection_paths(name, home or quarry_home())  # the version current now that we hold the lock
        tidy(paths)
        previous, _ = _index_meta(paths)
        if paths.corpus_db.is_file() and not force:
            old = CorpusStore(paths.corpus_db, name)
            same, old_fp, hashes = old.fingerprint == fingerprint, old.fingerprint, old.hashes()
            old.close()
            index_ok = previous is not None and previous.fingerprint == fingerprint
            if same and (index_ok or not build_lucene):
                if index_ok and previous is not None and (k1 is not None or b is not None):
                    _set_params(paths, previous, k1, b)  # same documents: only the stored BM25 parameters change
                return replace(report, unchanged=True, indexed=index_ok, added=0, kept=len(src.records))
            delta = diff(hashes, src.records, remove_missing=True)
            embedded, notes = _apply(paths, name, delta, old_fp, fingerprint, src=src, build_lucene=build_lucene,
                                     k1=k1, b=b, previous=previous, progress=progress)
            return replace(report, added=delta.added, updated=delta.updated, removed=len(delta.removed),
                           kept=delta.kept, embedded=embedded, warnings=[*report.warnings, *notes])
        staging = _staging(paths)
        try:
            write_corpus_db(staging / "corpus.sqlite", src, name, progress)
            if build_lucene:
                k1_, b_ = _params(paths, previous, k1, b)
                build_index(src.records, staging / "lucene", fingerprint=fingerprint, k1=k1_, b=b_,
                            progress=progress, total=len(src.records))
            note = _carry_dense(paths, name, staging, fingerprint) if paths.corpus_db.is_file() else None
            _commit(paths, staging, fingerprint)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return replace(report, warnings=[*report.warnings, note]) if note else report


def _apply(paths: CollectionPaths, name: str, delta: Delta, old_fp: str, fingerprint: str, *,
           src: CorpusSource | None, build_lucene: bool, k1: float | None, b: float | None,
           previous: IndexMeta | None, progress: ProgressFn | None) -> tuple[int | None, list[str]]:
    """Stage a new version = current version + `delta` (corpus, BM25 index, dense index), then
    commit all three with one switch; the caller holds the writer lock. Returns the chunks
    embedded (None: no dense index updated) and warnings (a dense index left behind)."""
    staging = _staging(paths)
    staged, notes = None, []
    try:
        count = update_corpus_db(paths.corpus_db, staging / "corpus.sqlite", delta, fingerprint=fingerprint,
                                 src=src, order=docids(src.records) if src else None)
        if count == 0:
            raise QuarryError("empty_collection", f"that would leave collection {name!r} without documents",
                              "keep at least one document, or ingest a new source with --force")
        corpus = CorpusStore(staging / "corpus.sqlite", name)
        try:
            if build_lucene:
                k1_, b_ = _params(paths, previous, k1, b)
                build_index(corpus.iter_records(), staging / "lucene", fingerprint=fingerprint, k1=k1_, b=b_,
                            progress=progress, total=count)
            staged, notes = _stage_dense(paths, name, corpus, delta, old_fp, staging, progress)
        finally:
            corpus.close()
        _commit(paths, staging, fingerprint)
    except BaseException:
        if staged is not None:
            staged.discard()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return (None if staged is None else staged.embedded), notes


def add(name: str, sources: list[str | Path], *, home: Path | None = None, root: Path | None = None,
        strict: bool = False, progress: ProgressFn | None = None) -> IngestReport:
    """Add or update documents from files, folders or JSONL files, leaving the others untouched.

    Ids follow the folder-ingest rule relative to `root` (default: the folder the collection was
    ingested from, for files inside it); a file whose id is another file's document is refused
    (`stores.additions`)."""
    col = Collection(name, home)
    found = read_additions(sources, col.corpus, root=root, strict=strict, progress=progress)
    records, skipped, unsupported, warnings = found.records, found.skipped, found.unsupported, found.warnings
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        previous, has_index = _index_meta(col.paths)
        refuse_replacing_other_files(records, col.corpus, root_given=root is not None)
        delta = diff(col.corpus.hashes(), records, remove_missing=False)
        report = IngestReport(name, col.corpus.count() + delta.added, 0, 0, [], unchanged=delta.empty,
                              indexed=has_index, warnings=warnings, added=delta.added,
                              updated=delta.updated, kept=col.corpus.count() - delta.updated, skipped=tuple(skipped),
                              unsupported=tuple(unsupported))
        if delta.empty:
            return report
        old_fp = col.corpus.fingerprint
        embedded, notes = _apply(col.paths, name, delta, old_fp, delta_fingerprint(old_fp, delta), src=None,
                                 build_lucene=has_index, k1=None, b=None, previous=previous, progress=progress)
    return replace(report, embedded=embedded, warnings=[*report.warnings, *notes])


def remove(name: str, docids: list[str], *, home: Path | None = None,
           progress: ProgressFn | None = None) -> IngestReport:
    """Remove documents (and their citations, chunks and vectors); every docid must exist."""
    col = Collection(name, home)
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        hashes = col.corpus.hashes()
        unknown = [d for d in dict.fromkeys(docids) if d not in hashes]
        if unknown:
            raise QuarryError("unknown_document", f"collection {name!r} has no document "
                              + ", ".join(repr(d) for d in unknown[:10]) + "; nothing was removed",
                              f"check the ids: quarry read {name} DOCID shows a document by its id")
        previous, has_index = _index_meta(col.paths)
        delta = removal(hashes, docids)
        old_fp = col.corpus.fingerprint
        embedded, notes = _apply(col.paths, name, delta, old_fp, delta_fingerprint(old_fp, delta), src=None,
                                 build_lucene=has_index, k1=None, b=None, previous=previous, progress=progress)
    return IngestReport(name, delta.kept, 0, 0, [], unchanged=False, indexed=has_index, warnings=notes,
                        removed=len(delta.removed), kept=delta.kept, embedded=embedded)


def _set_params(paths: CollectionPaths, meta: IndexMeta, k1: float | None, b: float | None) -> IndexMeta:
    """Store new BM25 parameters with an index in place (its documents are unchanged)."""
    meta = replace(meta, k1=float(meta.k1 if k1 is None else k1), b=float(meta.b if b is None else b))
    meta.dump(paths.lucene_dir)
    return meta


def reindex(name: str, *, home: Path | None = None, k1: float | None = None, b: float | None = None,
            progress: ProgressFn | None = None) -> IndexMeta:
    """(Re)build the BM25 index of an ingested collection; keep stored k1/b unless given. An
    index whose settings are unreadable is rebuilt (into a new version, with its dense index)."""
    col = Collection(name, home)
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        previous, _ = _index_meta(col.paths)
        if previous and previous.fingerprint == col.corpus.fingerprint:
            # Same documents: only the scoring parameters change, no need to re-index.
            return _set_params(col.paths, previous, k1, b)
        k1, b = _params(col.paths, previous, k1, b)
        staging = _staging(col.paths)
        try:
            os.link(col.paths.corpus_db, staging / "corpus.sqlite")  # the same corpus, a new index
            meta = build_index(col.corpus.iter_records(), staging / "lucene", fingerprint=col.corpus.fingerprint,
                               k1=k1, b=b, progress=progress, total=col.corpus.count())
            _carry_dense(col.paths, name, staging, col.corpus.fingerprint)
            _commit(col.paths, staging, col.corpus.fingerprint)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return meta
