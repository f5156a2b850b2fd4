"""A dense index built as durable work (`workflows.dense_index`): documents in batches, each batch
embedded by whichever worker takes it and kept in a staged build that outlives every process, the
whole swapped in at the end exactly as `DenseIndex.build` swaps in a build made in one process.

Batches are runs of `batch_docs` documents in docid order, each named by its number and the docid
before it (`after`): any worker finds a batch again from the corpus alone, at any corpus size (an
index range scan, `CorpusStore.docids_after`). What a batch leaves behind depends on where Chroma is:

- embedded Chroma: one `.npz` file per batch (chunk ids, line ranges, vectors) in
  `versions/<id>/dense-staging/<key>/`, written atomically; several processes must never write one
  embedded Chroma database, so the files are added to a new build in one process at the commit;
- a Chroma server (`QUARRY_CHROMA_HOST`): upserted straight into the build's server collection, so
  workers on several machines write one index.

A batch is done when its file exists (its name carries the hash of its chunk ids and texts) or all its
chunk ids are on the server: a retried, re-delivered or resumed batch is found done and skipped, never
embedded twice. The staging key covers the corpus fingerprint, the model, the embedding runtime, the
batch size and the Chroma location, so a build cancelled or interrupted is resumed by running it
again, and a changed corpus never reuses another's vectors. `ledger.jsonl` records every embedding
started and finished (batch, pid, attempt): what the scale-out drill counts. The staging folder lives
inside its version, so pruning the version removes it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from stores.atomic import write_atomic
from stores.chroma_build import NewBuild, _http_client, _server_label, add_to, chroma_server, chunk_id
from stores.corpus import CorpusStore
from stores.dense import DenseIndex, DenseMeta
from stores.dense_sizes import BATCH_CHUNKS, MODEL_BATCH
from stores.embedder import MODEL_NAME, embed_in_steps, embed_texts, embedding_runtime
from stores.errors import QuarryError
from stores.home import CollectionPaths
from stores.records import Chunk

STAGING_DIR = "dense-staging"
LEDGER = "ledger.jsonl"


@dataclass(frozen=True)
class DensePlan:
    """What every activity of one durable build agrees on (fixed by the first activity)."""

    collection: str
    version: str | None
    fingerprint: str
    key: str  # the staging key (see the module docstring)
    documents: int
    chunks: int
    batch_docs: int
    batches: int
    server: str | None  # "host:port" of the Chroma server, None for embedded Chroma
    build_id: str
    planned_at: float  # epoch seconds: the build's time counts from here, across resumes


@dataclass(frozen=True)
class Segment:
    """The `after` key of each of the next batches, and the key the batches after them start from."""

    afters: list[str]
    next_after: str


@dataclass(frozen=True)
class BatchOutcome:
    batch: int
    chunks: int
    embedded: bool  # False: it was staged already (a retry, a re-delivery, a resumed build)


def plan_build(paths: CollectionPaths, name: str, corpus: CorpusStore, batch_chunks: int = BATCH_CHUNKS) -> DensePlan:
    """The plan of a durable build of `corpus` (the version `paths` names); creates the staging
    folder, and on a Chroma server the build's collection. Planning again gives the same plan
    (and finds the same staged batches) while nothing it depends on changed."""
    stats = corpus.stats()
    documents, chunks = int(stats["documents"]), int(stats["chunks"])
    batch_docs = max(1, round(max(1, batch_chunks) * documents / max(1, chunks)))
    server = chroma_server()
    identity = json.dumps([corpus.fingerprint, MODEL_NAME, embedding_runtime(), batch_docs, _server_label(server)])
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    folder = paths.version_dir / STAGING_DIR / key
    folder.mkdir(parents=True, exist_ok=True)
    plan_file = folder / "plan.json"
    planned_at = time.time()
    if plan_file.is_file():  # a resumed build: its time counts from its first plan
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            planned_at = float(json.loads(plan_file.read_text())["planned_at"])
    plan = DensePlan(
        collection=name,
        version=paths.version,
        fingerprint=corpus.fingerprint,
        key=key,
        documents=documents,
        chunks=chunks,
        batch_docs=batch_docs,
        batches=math.ceil(documents / batch_docs),
        server=_server_label(server),
        build_id=f"durable-{key}",
        planned_at=planned_at,
    )
    write_atomic(plan_file, json.dumps(asdict(plan), indent=2))  # a resumed build reads it back
    if server:  # the server collection every worker upserts into
        NewBuild.start(name, paths.root, corpus.fingerprint, MODEL_BATCH, build_id=plan.build_id).release()
    return plan


def segment(plan: DensePlan, corpus: CorpusStore, after: str, count: int) -> Segment:
    """The `after` keys of the next `count` batches (fewer at the end of the corpus)."""
    afters: list[str] = []
    cursor = after
    for _ in range(count):
        ids = corpus.docids_after(cursor, plan.batch_docs)
        if not ids:
            break
        afters.append(cursor)
        cursor = ids[-1]
    return Segment(afters, cursor)


def read_ledger(folder: Path) -> list[dict[str, Any]]:
    """The ledger lines of a staged build, or of the index a durable build committed (its folder)."""
    try:
        text = (folder / LEDGER).read_text()
    except OSError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def batch_hash(chunks: list[Chunk]) -> str:
    """The hash of a batch's chunk ids and texts: a staged file is reused only for these chunks."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(f"{chunk_id(c)}\0{c.line_start}\0{c.line_end}\0{c.text}\0".encode())
    return h.hexdigest()[:16]


class StagedBuild:
    """One durable build's staged batches (see the module docstring)."""

    def __init__(self, paths: CollectionPaths, plan: DensePlan) -> None:
        self.paths = paths
        self.plan = plan
        self.folder = paths.version_dir / STAGING_DIR / plan.key
        self._server_coll: Any = None

    # -- batches -------------------------------------------------------------------------

    def chunks_of(self, corpus: CorpusStore, after: str) -> list[Chunk]:
        """The chunks of the batch that starts after `after`, in docid and chunk order."""
        docids = corpus.docids_after(after, self.plan.batch_docs)
        found = corpus.chunks_many(docids)
        return [c for d in docids for c in found.get(d, [])]

    def embed_batch(
        self,
        corpus: CorpusStore,
        batch: int,
        after: str,
        *,
        attempt: int = 1,
        should_stop: Callable[[], bool] = lambda: False,
        on_embedded: Callable[[int], None] | None = None,
    ) -> BatchOutcome:
        """Embed batch `batch` into the staged build unless it is there already. `should_stop` is
        asked between model calls (a cancelled build stops within one); `on_embedded(n)` is told
        after each."""
        chunks = self.chunks_of(corpus, after)
        digest = batch_hash(chunks)
        if self._staged(batch, digest, chunks):
            return BatchOutcome(batch, len(chunks), embedded=False)
        self._log("start", batch, attempt)

        def stop_if_asked() -> None:
            if should_stop():
                self._log("stopped", batch, attempt)
                raise QuarryError("cancelled", f"batch {batch} of the dense build was cancelled", "")

        vectors = embed_in_steps(
            [c.text for c in chunks],
            MODEL_BATCH,
            lambda texts: embed_texts(texts, MODEL_BATCH),
            before=stop_if_asked,
            after=on_embedded,
        )
        self._stage(batch, digest, chunks, vectors)
        self._log("done", batch, attempt)
        return BatchOutcome(batch, len(chunks), embedded=True)

    def _file(self, batch: int, digest: str) -> Path:
        return self.folder / f"batch-{batch:07d}-{digest}.npz"

    def _staged(self, batch: int, digest: str, chunks: list[Chunk]) -> bool:
        if self.plan.server is None:
            return self._file(batch, digest).is_file()
        if not chunks:
            return True
        got = self._server().get(ids=[chunk_id(c) for c in chunks], include=[])
        return len(got["ids"]) == len(chunks)

    def _stage(self, batch: int, digest: str, chunks: list[Chunk], vectors: np.ndarray) -> None:
        if self.plan.server is not None:
            add_to(self._server(), chunks, vectors, upsert=True)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".batch-", suffix=".npz", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(
                    f,
                    docid=np.array([c.docid for c in chunks], dtype=str),
                    numbers=np.array([[c.chunk_no, c.line_start, c.line_end] for c in chunks], dtype=np.int64).reshape(
                        -1, 3
                    ),
                    vectors=vectors.astype(np.float32),
                )
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._file(batch, digest))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _server(self) -> Any:
        if self._server_coll is None:
            server = chroma_server()
            if server is None or _server_label(server) != self.plan.server:
                raise QuarryError(
                    "stale_dense_index",
                    f"this durable build writes to the Chroma server at {self.plan.server}, "
                    f"but this worker is configured for {_server_label(server) or 'embedded Chroma'}",
                    "give every worker the same QUARRY_CHROMA_HOST and QUARRY_CHROMA_PORT",
                )
            client = _http_client(server)
            self._server_coll = client.get_collection(f"{self.plan.collection}-chunks-{self.plan.build_id}")
        return self._server_coll

    def _log(self, event: str, batch: int, attempt: int) -> None:
        """One ledger line (best effort: a worker on another machine may not see the folder)."""
        line = json.dumps({"event": event, "batch": batch, "pid": os.getpid(), "attempt": attempt, "t": time.time()})
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())  # one write with O_APPEND: lines never interleave
            finally:
                os.close(fd)
        except OSError:
            pass

    def ledger(self) -> list[dict[str, Any]]:
        return read_ledger(self.folder)

    # -- the commit ----------------------------------------------------------------------

    def commit(self, index: DenseIndex, corpus: CorpusStore) -> DenseMeta:
        """Swap the staged build in as the version's dense index (the caller holds the writer
        lock). Refuses when the corpus is no longer the planned one or batches are missing."""
        if corpus.fingerprint != self.plan.fingerprint:
            raise QuarryError(
                "stale_dense_index",
                f"collection {self.plan.collection!r} changed while its dense index was being built",
                f"build it again: quarry index {self.plan.collection} --dense",
            )
        build = NewBuild.start(
            self.plan.collection,
            self.paths.root,
            self.plan.fingerprint,
            MODEL_BATCH,
            build_id=self.plan.build_id if self.plan.server else None,
        )
        try:
            added = self._add_files(build) if self.plan.server is None else int(build.coll.count())
            if added != self.plan.chunks:
                raise QuarryError(
                    "dense_build_incomplete",
                    f"the staged dense build of {self.plan.collection!r} holds {added} of {self.plan.chunks} chunks",
                    f"run the build again to embed what is missing: quarry index {self.plan.collection} --dense",
                )
            meta = build.meta(self.plan.fingerprint, added, self.plan.documents, time.perf_counter())
            meta = replace(meta, built_seconds=round(time.time() - self.plan.planned_at, 3))  # across resumes
        except BaseException:
            build.release()  # the server collection stays: a rerun resumes it
            raise
        ledger = self.folder / LEDGER
        if ledger.is_file():  # the index keeps how it was built: which batches, which processes, which attempts
            shutil.copyfile(ledger, build.folder / LEDGER)
        index.swap_in(build, meta, keep_on_failure=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        return meta

    def _add_files(self, build: NewBuild) -> int:
        """Add every staged batch file to `build`; the number of chunks added."""
        files = {int(f.name.split("-")[1]): f for f in sorted(self.folder.glob("batch-*.npz"))}
        missing = [n for n in range(self.plan.batches) if n not in files]
        if missing:
            raise QuarryError(
                "dense_build_incomplete",
                f"{len(missing)} of {self.plan.batches} batches of the dense build of {self.plan.collection!r} "
                "are not embedded yet",
                f"run the build again to embed them: quarry index {self.plan.collection} --dense",
            )
        added = 0
        for n in range(self.plan.batches):
            with np.load(files[n], allow_pickle=False) as data:
                chunks = [
                    Chunk(docid=str(d), chunk_no=int(x[0]), line_start=int(x[1]), line_end=int(x[2]), text="")
                    for d, x in zip(data["docid"], data["numbers"], strict=True)
                ]
                build.add_vectors(chunks, data["vectors"])
                added += len(chunks)
        return added
