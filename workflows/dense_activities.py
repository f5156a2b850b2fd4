"""The activities of a durable dense index build (`workflows.dense_index`): plan, find the next
batches, embed one batch, commit. Thin: what they do is `stores.dense_staging`'s; here they open the
collection of the worker's home and turn its errors into Temporal's."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from temporalio import activity
from temporalio.exceptions import CancelledError

from nodes.job.heartbeat import beating
from nodes.job.runtime import runtime
from stores.collection import Collection
from stores.dense import DenseIndex
from stores.dense_sizes import BATCH_CHUNKS, BATCHES_IN_FLIGHT, SEGMENT_BATCHES
from stores.dense_staging import BatchOutcome, DensePlan, Segment, StagedBuild, plan_build, segment
from stores.errors import QuarryError
from stores.locks import writer_lock

EMBED_QUEUE_SUFFIX = "-embed"  # the queue of embedding batches: its own per-worker concurrency


def embed_queue(queue: str) -> str:
    """The task queue of embedding batches beside a home's job queue `queue`."""
    return queue + EMBED_QUEUE_SUFFIX


@dataclass
class DenseBuildInput:
    """A durable dense build: what the caller asks for, and what a run hands to the run it
    continues as (`plan`, where the batches stand, and the counts so far)."""

    collection: str
    version: str | None = None  # None: the current version, fixed by the plan
    batch_chunks: int = BATCH_CHUNKS
    max_in_flight: int = BATCHES_IN_FLIGHT  # scheduled at once (each worker embeds EMBED_CONCURRENCY of them)
    heartbeat_seconds: float = 30.0  # a worker silent this long is taken as gone; its batch goes elsewhere
    segment_batches: int = SEGMENT_BATCHES  # batches per run before it continues as new
    plan: DensePlan | None = None
    next_batch: int = 0
    after: str = ""
    chunks_done: int = 0
    embedded_batches: int = 0
    reused_batches: int = 0
    embedded_chunks: int = 0


def _collection(plan_or_name: DensePlan | str, version: str | None = None) -> Collection:
    if isinstance(plan_or_name, DensePlan):
        return Collection(plan_or_name.collection, runtime().home, plan_or_name.version)
    return Collection(plan_or_name, runtime().home, version)


def _pinned(col: Collection, plan: DensePlan) -> None:
    if col.version != plan.version:
        raise QuarryError(
            "version_gone",
            f"version {plan.version} of collection {plan.collection!r} is gone (pruned or replaced)",
            f"build the dense index of the current version: quarry index {plan.collection} --dense",
        )


@activity.defn
@beating
def plan_dense_build(inp: DenseBuildInput) -> DensePlan:
    """Fix the build's plan (see `stores.dense_staging.plan_build`)."""
    col = _collection(inp.collection, inp.version)
    return plan_build(col.paths, col.name, col.corpus, inp.batch_chunks)


@activity.defn
@beating
def dense_segment(plan: DensePlan, after: str, count: int) -> Segment:
    """The next `count` batches' keys."""
    col = _collection(plan)
    _pinned(col, plan)
    return segment(plan, col.corpus, after, count)


@activity.defn
@beating
def embed_dense_batch(plan: DensePlan, batch: int, after: str) -> BatchOutcome:
    """Embed one batch into the staged build (skipped when it is there already). Heartbeats from a
    side thread while it runs (`beating`), so a killed worker's batch is handed to another within
    the heartbeat timeout; a cancelled build stops it between model calls."""
    col = _collection(plan)
    _pinned(col, plan)
    try:
        return StagedBuild(col.paths, plan).embed_batch(
            col.corpus, batch, after, attempt=activity.info().attempt, should_stop=activity.is_cancelled
        )
    except QuarryError as err:
        if err.code == "cancelled":
            raise CancelledError(err.message) from err
        raise


@activity.defn
@beating
def commit_dense_build(plan: DensePlan) -> dict[str, Any]:
    """Swap the staged build in as the version's dense index, under the collection's writer lock
    (a busy collection is retried: `collection_busy` is a retryable code)."""
    col = _collection(plan)
    _pinned(col, plan)
    with writer_lock(col.paths.root, col.name):
        meta = StagedBuild(col.paths, plan).commit(DenseIndex(col.paths, col.name), col.corpus)
    return asdict(meta)


ACTIVITIES = [plan_dense_build, dense_segment, commit_dense_build]  # on the job queue
EMBED_ACTIVITIES = [embed_dense_batch]  # on the embed queue
