"""The `DenseIndexBuild` workflow: a collection version's dense index built as durable work.

One activity fixes the plan (`stores.dense_staging`); batches of documents are then embedded as
activities on the home's embed queue, up to `max_in_flight` at a time, each taken by whichever
worker polls it (a worker embeds `EMBED_CONCURRENCY` at once), each heartbeating so a killed
worker's batch goes to another within the heartbeat timeout; a batch already staged is skipped. The
staged build is swapped in by one last activity, exactly as an in-process build is, so the live
index is untouched until then: a cancelled build leaves it as it was, and keeps its staged batches
for the next run of the same build, which resumes from them. The version the build writes is pinned
for it (`workflows.dense_activities`), so changes to the collection meanwhile never prune it; the pin
goes with the commit, or with a last activity when the build fails or is cancelled (a run that
continues as new keeps it). Every `segment_batches` batches the run continues as new with its
counts, so a million-document build keeps a small history. The `progress` query and the Web UI's
current details show batches done / total, chunks/s and the time left.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, FailureError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from graphs.search_graph import NON_RETRYABLE
    from stores.dense_staging import BatchOutcome, DensePlan, Segment
    from workflows.dense_activities import (
        DenseBuildInput,
        commit_dense_build,
        dense_segment,
        embed_dense_batch,
        embed_queue,
        plan_dense_build,
        release_dense_pin,
    )
    from workflows.dense_progress import progress_line

# Retried by time, without a cap on attempts (a batch must outlive any number of lost workers), but a
# bug or a typed Quarry error (non-retryable unless its code says otherwise) fails the build at once.
RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=NON_RETRYABLE,
)
QUICK = timedelta(minutes=10)  # plan, next batches, commit (a commit adds every staged vector to Chroma)
BATCH_LIMIT = timedelta(hours=2)  # one batch's start-to-close: generous, the heartbeat notices a dead worker
# Releasing a pin is one file removed; should it keep failing the pin goes stale instead (stores.versions).
RELEASE_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5)
RELEASE_PATCH = "release-pin-on-failure"  # builds that failed before releasing pins replay without it


@workflow.defn(name="DenseIndexBuild")
class DenseIndexBuild:
    def __init__(self) -> None:
        self._inp: DenseBuildInput | None = None
        self._stage = "planning"

    @workflow.run
    async def run(self, inp: DenseBuildInput) -> dict[str, Any]:
        try:
            return await self._build(inp)
        except (FailureError, asyncio.CancelledError):  # failed or cancelled: a last activity may still run
            if workflow.patched(RELEASE_PATCH):
                with suppress(ActivityError):  # else left to go stale: the build's own failure is what counts
                    await workflow.execute_activity(
                        release_dense_pin, inp.collection, start_to_close_timeout=QUICK, retry_policy=RELEASE_RETRY
                    )
            raise

    async def _build(self, inp: DenseBuildInput) -> dict[str, Any]:
        self._inp = inp
        # the first run plans; a run continued as new carries the plan
        plan: DensePlan = (
            inp.plan
            if inp.plan is not None
            else await workflow.execute_activity(
                plan_dense_build, inp, start_to_close_timeout=QUICK, retry_policy=RETRY
            )
        )
        self._inp = inp = replace(inp, plan=plan)
        self._stage = "embedding"
        self._show()
        if inp.next_batch < plan.batches:
            await self._segment(plan)
            if self._inp.next_batch < plan.batches:  # more to do: a fresh history for the next segment
                workflow.continue_as_new(self._inp)
        self._stage = "committing"
        self._show()
        meta = await workflow.execute_activity(
            commit_dense_build,
            plan,
            start_to_close_timeout=QUICK,
            retry_policy=RETRY,
            # a cancel during the swap lets the swap finish: the index is then whole, never half-swapped
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        self._stage = "done"
        self._show()
        done = self._inp
        return {
            "collection": plan.collection,
            "version": plan.version,
            "meta": meta,
            "batches": plan.batches,
            "embedded_batches": done.embedded_batches,
            "reused_batches": done.reused_batches,
        }

    async def _segment(self, plan: DensePlan) -> None:
        inp = self._inp
        assert inp is not None
        seg: Segment = await workflow.execute_activity(
            dense_segment,
            args=[plan, inp.after, max(1, inp.segment_batches)],
            start_to_close_timeout=QUICK,
            retry_policy=RETRY,
        )
        slots = asyncio.Semaphore(max(1, inp.max_in_flight))
        queue = embed_queue(workflow.info().task_queue)

        async def one(batch: int, after: str) -> None:
            async with slots:
                out: BatchOutcome = await workflow.execute_activity(
                    embed_dense_batch,
                    args=[plan, batch, after],
                    task_queue=queue,
                    start_to_close_timeout=BATCH_LIMIT,
                    heartbeat_timeout=timedelta(seconds=inp.heartbeat_seconds),
                    retry_policy=RETRY,
                )
            self._record(out)

        await asyncio.gather(*(one(inp.next_batch + i, after) for i, after in enumerate(seg.afters)))
        now = self._inp
        assert now is not None
        # an empty segment: the corpus ended early (it cannot change under its version), nothing is left
        self._inp = replace(
            now, next_batch=inp.next_batch + len(seg.afters) if seg.afters else plan.batches, after=seg.next_after
        )

    def _record(self, out: BatchOutcome) -> None:
        inp = self._inp
        assert inp is not None
        if out.embedded:
            inp = replace(
                inp, embedded_batches=inp.embedded_batches + 1, embedded_chunks=inp.embedded_chunks + out.chunks
            )
        else:
            inp = replace(inp, reused_batches=inp.reused_batches + 1)
        self._inp = replace(inp, chunks_done=inp.chunks_done + out.chunks)
        self._show()

    @workflow.query
    def progress(self) -> dict[str, Any]:
        """Where the build stands: batches and chunks done of all, chunks/s, seconds left."""
        inp = self._inp
        plan = inp.plan if inp else None
        out: dict[str, Any] = {"stage": self._stage, "collection": inp.collection if inp else None}
        if inp is None or plan is None:
            return out
        batches_done = inp.embedded_batches + inp.reused_batches
        elapsed = max(0.0, workflow.now().timestamp() - plan.planned_at)
        rate = inp.embedded_chunks / elapsed if elapsed > 0 and inp.embedded_chunks else None
        left = plan.chunks - inp.chunks_done
        return out | {
            "version": plan.version,
            "batches": plan.batches,
            "batches_done": batches_done,
            "embedded_batches": inp.embedded_batches,
            "reused_batches": inp.reused_batches,
            "chunks": plan.chunks,
            "chunks_done": inp.chunks_done,
            "chunks_per_s": round(rate, 2) if rate else None,
            "eta_s": round(left / rate, 1) if rate else None,
            "elapsed_s": round(elapsed, 1),
        }

    def _show(self) -> None:
        """The Web UI's current details: the progress line a person reads at a glance."""
        workflow.set_current_details(progress_line(self.progress()))
