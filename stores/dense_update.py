"""Update a dense index for a corpus change without re-embedding what did not change.

A staged update writes a complete new build beside the current one, like `DenseIndex.build`:
the vectors of unchanged documents are copied over from the current build (no model call), the
chunks of new and changed documents are embedded, removed documents' vectors are left behind.
`StagedDense.commit()` swaps it in with `replace_dir`; until then readers see the old build, and
`discard()` drops it, so a failed change leaves the dense index as it was.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from stores.corpus import CorpusStore
from stores.dense import STEP_BATCHES, DenseIndex, DenseMeta, NewBuild, _drop_server_collection, chroma_server
from stores.incremental import Delta
from stores.lucene import replace_dir
from stores.readers import ProgressFn

COPY_BATCH = 2000  # vectors read from the current build per Chroma call


@dataclass
class StagedDense:
    index: DenseIndex
    staging: Path
    folder: Path
    meta: DenseMeta
    previous: DenseMeta
    embedded: int  # chunks embedded by the model (new and changed documents only)
    copied: int  # vectors carried over unchanged

    def commit(self) -> None:
        with self.index._lock:
            self.index._close_locked()
            replace_dir(self.folder, self.index.folder)  # commit point of the dense index
        shutil.rmtree(self.staging, ignore_errors=True)
        server = chroma_server()
        if server and self.previous.collection != self.meta.collection:
            _drop_server_collection(server, self.previous.collection)

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        server = chroma_server()
        if server:
            _drop_server_collection(server, self.meta.collection)


def stage_dense_update(index: DenseIndex, corpus: CorpusStore, delta: Delta, *,
                       progress: ProgressFn | None = None, batch_size: int = 64) -> StagedDense:
    """Stage the dense index of `corpus` (the changed corpus) from the current build plus `delta`.
    The current build must match the corpus before the change (the caller checks)."""
    started = time.perf_counter()
    previous, old = index._collection()
    build = NewBuild.start(index.name, index.paths.root, corpus.fingerprint, batch_size)
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
                build.coll.add(ids=[page["ids"][i] for i in keep], embeddings=[page["embeddings"][i] for i in keep],
                               metadatas=[page["metadatas"][i] for i in keep])
                copied += len(keep)
        chunks = [c for rec in delta.upserts for c in corpus.chunks(rec.docid)]
        step = max(1, batch_size * STEP_BATCHES)
        if progress:
            progress("embedding", 0, len(chunks))
        for start in range(0, len(chunks), step):
            batch = chunks[start:start + step]
            build.add_chunks(batch)
            if progress:
                progress("embedding", start + len(batch), len(chunks))
        documents = previous.documents - len(delta.removed) + delta.added
        meta = build.meta(corpus.fingerprint, copied + len(chunks), documents, started)
        build.seal(meta)
        ok = True
        return StagedDense(index, build.staging, build.folder, meta, previous, len(chunks), copied)
    finally:
        if ok:
            build.close()
        else:
            build.abandon()
