"""Staging and committing a collection's versions, and what a new version carries over.

Every change to a collection (`stores.collection`: ingest, reindex; `stores.collection_edits`:
add, remove) writes a complete new version into a staging folder and then switches the collection
to it with one atomic write of its `CURRENT` file: the machinery for that lives here, apart from
the operations, so that each operation only says what goes into the staged version. Also here is
what a new version takes from the old ones: the BM25 parameters k1/b (kept unless given; from an
older version when the current one's settings are unreadable) and the dense index (carried over
or updated in the staged version only when the collection has one, so chromadb and torch load
only then). Which versions are kept and for whom is `stores.versions`.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

from stores.atomic import write_atomic
from stores.corpus import CorpusStore
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.home import CURRENT_FILE, VERSIONS_DIR, CollectionPaths, ensure_home
from stores.incremental import Delta
from stores.lucene import DEFAULT_B, DEFAULT_K1, META_FILE, IndexMeta
from stores.versions import STAGING_PREFIX, mark_committed, prune

KEEP_VERSIONS = 3  # the current one and the two before it (readers may still hold them)


def new_staging(paths: CollectionPaths) -> Path:
    """A fresh staging folder inside the collection (created, with a private home, if needed)."""
    ensure_home(paths.root.parent.parent)  # the first ingest usually creates the home: private from the start
    paths.root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=paths.root))


def version_id(fingerprint: str, now_ns: int | None = None) -> str:
    """A new version's id: its local time to the nanosecond, then the fingerprint's head, so ids
    sort as the versions were made (`stores.versions.prune` orders them so). One clock reading:
    the second and its fraction read apart could cross a second's edge between them, and the id
    then sorted a second early (a test that pruned by that order failed once in a suite run)."""
    ns = time.time_ns() if now_ns is None else now_ns
    return f"{time.strftime('%Y%m%dT%H%M%S', time.localtime(ns // 10**9))}-{ns % 10**9:09d}-{fingerprint[:8]}"


def commit_version(paths: CollectionPaths, staging: Path, fingerprint: str) -> str:
    """Make `staging` (a complete corpus + BM25 index + dense index, if any) the current
    version; then mark it committed and prune what nobody may read (`stores.versions`)."""
    version = version_id(fingerprint)
    versions = paths.root / VERSIONS_DIR
    versions.mkdir(exist_ok=True)
    staging.rename(versions / version)
    write_atomic(paths.root / CURRENT_FILE, version)  # the commit point
    try:  # after the commit point the change stands: bookkeeping that fails is reported, not raised
        mark_committed(paths.root, version)
        prune(paths, paths.root.name, paths.root.parent.parent, KEEP_VERSIONS)
    except Exception as exc:  # the next writer marks and prunes again
        warnings.warn(
            f"collection {paths.root.name!r} switched to version {version}, but its old versions "
            f"could not be pruned ({exc}); the next change tries again",
            RuntimeWarning,
            stacklevel=2,
        )
    if paths.version is None:  # a collection from before versions: its root files are superseded
        for legacy in ("corpus.sqlite", "lucene", "chroma"):
            target = paths.root / legacy
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
    return version


def index_meta(paths: CollectionPaths) -> tuple[IndexMeta | None, bool]:
    """(the version's BM25 settings, whether it has a BM25 index). Unreadable settings (a kill
    while an older Quarry rewrote them in place) give (None, True): the writer rebuilds the
    index, with the parameters of the newest older version that still has readable ones."""
    if not (paths.lucene_dir / META_FILE).is_file():
        return None, False
    try:
        return IndexMeta.load(paths.lucene_dir), True
    except QuarryError:
        return None, True


def bm25_params(
    paths: CollectionPaths, previous: IndexMeta | None, k1: float | None, b: float | None
) -> tuple[float, float]:
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
    return (
        k1 if k1 is not None else (previous.k1 if previous else DEFAULT_K1),
        b if b is not None else (previous.b if previous else DEFAULT_B),
    )


def set_params(paths: CollectionPaths, meta: IndexMeta, k1: float | None, b: float | None) -> IndexMeta:
    """Store new BM25 parameters with an index in place (its documents are unchanged)."""
    meta = replace(meta, k1=float(meta.k1 if k1 is None else k1), b=float(meta.b if b is None else b))
    meta.dump(paths.lucene_dir)
    return meta


def has_dense(paths: CollectionPaths) -> bool:
    """Whether any version (or the root, before per-version indexes) has a dense index: only
    then are chromadb and torch loaded."""
    return paths.legacy_chroma_dir.is_dir() or any(
        (p / "chroma").is_dir() for p in (paths.root / VERSIONS_DIR).glob("*")
    )


def carry_dense_over(paths: CollectionPaths, name: str, staging: Path, fingerprint: str) -> str | None:
    """Carry the dense index into a staged version of the same documents (`stores.dense_update`)."""
    if not has_dense(paths):
        return None
    from stores.dense_update import carry_dense

    return carry_dense(paths, name, staging, fingerprint)


def stage_dense_update(
    paths: CollectionPaths,
    name: str,
    corpus: CorpusStore,
    delta: Delta,
    old_fp: str,
    staging: Path,
    progress: ProgressFn | None,
):
    """Update the dense index for `delta` into a staged version (`stores.dense_update`)."""
    if not has_dense(paths):
        return None, []  # a lexical-only collection
    from stores.dense_update import stage_version_dense

    return stage_version_dense(paths, name, corpus, delta, old_fp, staging, progress)
