"""Update a dense index for a corpus change without re-embedding what did not change.

A staged update writes a complete new build into the staged collection version (its `chroma/`
folder), like `DenseIndex.build` writes a whole one: the vectors of unchanged documents are
copied over from the current version's build (no model call), the chunks of new and changed
documents are embedded, removed documents' vectors are left behind. The new version's switch
(`stores.collection_versions.commit_version`) commits corpus, BM25 index and vectors together, so the dense index
can never lag behind the corpus, and a version pinned by a job keeps its own vectors. Until then
readers see the old version; `discard()` drops the build (and its collection on a Chroma server).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from stores.corpus import CorpusStore
from stores.dense import STEP_BATCHES, DenseIndex, DenseMeta, NewBuild, _drop_server_collection, chroma_server
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.home import CollectionPaths
from stores.incremental import Delta

COPY_BATCH = 2000  # vectors read from the current build per Chroma call


@dataclass
class StagedDense:
    folder: Path  # the staged version's chroma/ folder
    meta: DenseMeta
    previous: DenseMeta
    embedded: int  # chunks embedded by the model (new and changed documents only)
    copied: int  # vectors carried over unchanged

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        server = chroma_server()
        if server:
            _drop_server_collection(server, self.meta.collection)


def stage_dense_update(
    index: DenseIndex,
    corpus: CorpusStore,
    delta: Delta,
    target: Path,
    *,
    progress: ProgressFn | None = None,
    batch_size: int = 64,
) -> StagedDense:
    """Stage the dense index of `corpus` (the changed corpus) into `target` (a new folder inside
    the staged version) from the current build plus `delta`. The current build must match the
    corpus before the change (the caller checks)."""
    started = time.perf_counter()
    previous, old = index._collection()
    build = NewBuild.start(index.name, index.paths.root, corpus.fingerprint, batch_size, folder=target)
    ok = False
    try:
        gone = set(delta.replaced)
        copied, offset = 0, 0
        while True:
            page = old.get(include=["embeddings", "metadatas"], limit=COPY_BATCH, offset=offset)
            if not page["ids"]:
                break
            offset += len(page["ids"])
            keep = [i for i, md in enumerate(page["metadatas"]) if str(md["docid"]) not in gone]
            if keep:
                build.coll.add(
                    ids=[page["ids"][i] for i in keep],
                    embeddings=[page["embeddings"][i] for i in keep],
                    metadatas=[page["metadatas"][i] for i in keep],
                )
                copied += len(keep)
        chunks = [c for rec in delta.upserts for c in corpus.chunks(rec.docid)]
        step = max(1, batch_size * STEP_BATCHES)
        if progress:
            progress("embedding", 0, len(chunks))
        for start in range(0, len(chunks), step):
            batch = chunks[start : start + step]
            build.add_chunks(batch)
            if progress:
                progress("embedding", start + len(batch), len(chunks))
        documents = previous.documents - len(delta.removed) + delta.added
        meta = build.meta(corpus.fingerprint, copied + len(chunks), documents, started)
        build.seal(meta)
        ok = True
        return StagedDense(build.folder, meta, previous, len(chunks), copied)
    finally:
        if ok:
            build.close()
        else:
            build.abandon()


def _behind(name: str) -> str:
    return (
        f"the dense index of {name!r} is behind its documents and was not updated; "
        f"build it: quarry index {name} --dense"
    )


def stage_version_dense(
    paths: CollectionPaths,
    name: str,
    corpus: CorpusStore,
    delta: Delta,
    old_fp: str,
    staging: Path,
    progress: ProgressFn | None,
) -> tuple[StagedDense | None, list[str]]:
    """The staged version's dense index from the current version's, when that one is current for
    the documents before the change; otherwise nothing, and a warning that says the vectors are
    behind and what rebuilds them (instead of a silently stale semantic channel)."""
    dense = DenseIndex(paths, name)
    try:
        if not dense.is_current(old_fp):
            return None, [_behind(name)]
        return stage_dense_update(dense, corpus, delta, staging / "chroma", progress=progress), []
    except QuarryError as exc:
        if exc.code not in ("bad_dense_meta", "no_dense_index", "stale_dense_index"):
            raise
        return None, [_behind(name)]
    finally:
        dense.close()


def carry_dense(paths: CollectionPaths, name: str, staging: Path, fingerprint: str) -> str | None:
    """Give a staged version with the same documents as the current one (a rebuilt BM25 index, a
    forced re-ingest of the same source) the current version's dense index — its files copied,
    no vector re-embedded. Returns a warning when the documents changed and the vectors stay
    behind."""
    dense = DenseIndex(paths, name)
    try:
        meta = dense.meta
    except QuarryError:
        meta = None
    if meta is None or meta.fingerprint != fingerprint:
        return _behind(name)
    if meta.server is None:
        shutil.copytree(dense.where(), staging / "chroma")
    else:  # on a Chroma server both versions name the same server collection (pruning keeps it while named)
        (staging / "chroma").mkdir()
        meta.dump(staging / "chroma")
    return None
