"""The activities of a durable dense index build (`workflows.dense_index`): plan, find the next
batches, embed one batch, commit, release. Thin: what they do is `stores.dense_staging`'s; here they
open the collection of the worker's home and turn its errors into Temporal's.

The build pins the version it writes (`stores.versions.pin_version`, held by the build's workflow
id), so `quarry add`s meanwhile never prune it: pinned when the build starts (`quarry.app.dense_build`)
and again by its plan, refreshed with every segment, released by its commit — or, when the build
fails or is cancelled, by `release_dense_pin`."""

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
from stores.home import collection_paths
from stores.locks import writer_lock
from stores.versions import pin_version, unpin

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


def _version_gone(name: str, version: str | None) -> QuarryError:
    return QuarryError(
        "version_gone",
        f"version {version} of collection {name!r} is gone (pruned or replaced)",
        f"build the dense index of the current version: quarry index {name} --dense",
    )


def _pinned(col: Collection, plan: DensePlan) -> None:
    if col.version != plan.version:
        raise _version_gone(plan.collection, plan.version)


def _holder() -> str:
    """Who holds a build's pin: its workflow id (the same across the runs it continues as)."""
    holder = activity.info().workflow_id
    assert holder, "a dense build's activities run in its workflow"
    return holder


def _pin(col: Collection, version: str | None) -> None:
    """Pin (or refresh the pin of) the build's version for this build's workflow."""
    if version is not None:
        pin_version(col.paths.root, _holder(), version)


@activity.defn
@beating
def plan_dense_build(inp: DenseBuildInput) -> DensePlan:
    """Fix the build's plan (see `stores.dense_staging.plan_build`) on its pinned version; a
    version asked for that is gone already is `version_gone`, not silently the current one."""
    col = _collection(inp.collection, inp.version)
    if inp.version is not None and col.version != inp.version:
        raise _version_gone(inp.collection, inp.version)
    _pin(col, col.version)
    return plan_build(col.paths, col.name, col.corpus, inp.batch_chunks)


@activity.defn
@beating
def dense_segment(plan: DensePlan, after: str, count: int) -> Segment:
    """The next `count` batches' keys (the version's pin refreshed)."""
    col = _collection(plan)
    _pinned(col, plan)
    _pin(col, plan.version)
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
        unpin(col.paths.root, _holder())
    return asdict(meta)


@activity.defn
def release_dense_pin(collection: str) -> None:
    """Release the pin of a build that failed or was cancelled (its staged batches stay for a rerun,
    which pins the version again). A collection removed meanwhile has nothing to release."""
    unpin(collection_paths(collection, runtime().home).root, _holder())


ACTIVITIES = [plan_dense_build, dense_segment, commit_dense_build, release_dense_pin]  # on the job queue
EMBED_ACTIVITIES = [embed_dense_batch]  # on the embed queue
