"""Run blocking node code in a thread while the activity heartbeats from the event loop.

Temporal's heartbeat must be called on the activity's event loop, and heartbeats are how a
cancelled activity (hard budget stop) learns about it; node bodies are blocking (Lucene, SQLite,
MiniLM), so they run in a worker thread. A thread cannot be cancelled, so the wrapper tells it
through the call's step control (nodes.job.step_control), which a long loop checks between batches:

- a cancellation of the activity (job cancel, the hard budget stop) stops the step;
- while a long loop runs (it has reported progress), the wrapper reads the job's `progress` query
  every POLL_EVERY_S: `job stop`, the budget steer or a finished job stop the step, and the job's
  deadline (start + budget) bounds it — a `stop` signal alone never reaches an activity;
- outside an activity (in-process runs) the local nodes.job.control plays the workflow's part.

The loop's progress goes into the heartbeat details and the job store (`JobStore.step`, read by
`job progress`), at most every PROGRESS_EVERY_S.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from nodes.job.step_control import StepControl, using_step
from observability.tool_spans import node_span
from stores.error_catalogue import RETRYABLE_CODES
from stores.errors import QuarryError, disk_full, error_record
from stores.job_status import JobStatus

log = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 5.0
POLL_EVERY_S = 1.0  # how often a running long step's job is asked whether to stop
PROGRESS_EVERY_S = 1.0  # job-store progress writes at most this often (and at the end)
QUERY_TIMEOUT_S = 5.0
CANCEL_GRACE_S = 30.0  # a cancelled node's thread gets this long to end its batch and save it


def application_error(exc: BaseException) -> ApplicationError | None:
    """A QuarryError (or a full disk, `stores.errors.disk_full`) as the ApplicationError an
    activity raises for it: `type` is its code, `details` is `[{code, message, hint}]` (what a
    failed job reports), non-retryable unless its code is in RETRYABLE_CODES (stores.error_catalogue:
    a later attempt can fix it by itself, a server not up yet or a lock another writer holds; every
    other code is the user's to fix and fails the activity at once). None for any other error
    (Temporal then reports it by its class name; graphs.search_graph.NON_RETRYABLE lists the bugs
    that are not retried). The one place activities turn Quarry's errors into Temporal's."""
    err = exc if isinstance(exc, QuarryError) else disk_full(exc)
    if err is None:
        return None
    return ApplicationError(
        err.message, error_record(err), type=err.code, non_retryable=err.code not in RETRYABLE_CODES
    )


def _in_node_span(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a node body inside its `node {name}` span (job id and round from its state or task)."""
    first = args[0] if args and isinstance(args[0], dict) else {}
    with node_span(
        getattr(fn, "__name__", "node"),
        job_id=first.get("job_id"),
        round_no=first.get("round") if isinstance(first.get("round"), int) else None,
    ):
        return fn(*args)


def stop_reason(progress: Mapping[str, Any]) -> str:
    """Why a long step must stop, from the SearchJob `progress` query ('' to go on)."""
    if progress.get("stop_requested"):
        return "stopped"
    if progress.get("status", JobStatus.RUNNING) != JobStatus.RUNNING:
        return str(progress["status"])
    if (progress.get("budget") or {}).get("submit_now"):
        return "budget_steer"
    if progress.get("steering_pending"):  # a steer waits for the next round: end this step now
        return "steered"
    return ""


def deadline_from(progress: Mapping[str, Any], scheduled_at: float) -> float | None:
    """The job's deadline in wall-clock seconds, from its `progress` query.

    `budget.deadline` when the query gives it; else derived: a query answers with the time of the
    workflow's latest task, not the wall clock, so `used` counts to that task — the one that
    scheduled this activity (`scheduled_at`) unless another ran since. The deadline is then
    `scheduled_at - used + seconds`: exact but for the task's own milliseconds, and earlier than
    the true one (the step stops sooner, never later) when another task ran in between."""
    budget = progress.get("budget") or {}
    if isinstance(budget.get("deadline"), (int, float)):
        return float(budget["deadline"])
    seconds, used = budget.get("seconds"), budget.get("used")
    if not isinstance(seconds, (int, float)) or not isinstance(used, (int, float)) or seconds <= 0:
        return None
    return scheduled_at - float(used) + float(seconds)


async def _job_progress() -> dict[str, Any] | None:
    """This activity's workflow's `progress` query, or None when it has none (a workflow that is
    not a SearchJob) or cannot answer now. A raw service call: a client query would add a trace
    span per poll."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.workflowservice.v1 import QueryWorkflowRequest

    info = activity.info()
    client = activity.client()
    req = QueryWorkflowRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=info.workflow_id or "", run_id=info.workflow_run_id or ""),
    )
    req.query.query_type = "progress"
    resp = await client.workflow_service.query_workflow(req, retry=False, timeout=timedelta(seconds=QUERY_TIMEOUT_S))
    if resp.HasField("query_rejected") or not resp.query_result.payloads:
        return None
    value = (await client.data_converter.decode(resp.query_result.payloads))[0]
    return value if isinstance(value, dict) else None


class _Watcher:
    """Asks the job (or, in-process, the local control) whether the running step must stop."""

    def __init__(self, step: StepControl) -> None:
        self.step = step
        self.disabled = False
        self.in_activity = activity.in_activity()

    async def check(self) -> None:
        if self.disabled or self.step.why():
            return
        if not self.in_activity:
            from nodes.job.control import current_control

            reason = current_control().answer_reason()
            if reason:
                self.step.stop(reason)
            return
        try:
            progress = await _job_progress()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no query handler, server busy: heartbeats still cancel
            log.debug("progress query failed (%s); the step stops on cancellation only", exc)
            progress = None
        if progress is None:
            self.disabled = True
            return
        if self.step.deadline is None:
            self.step.deadline = deadline_from(progress, activity.info().scheduled_time.timestamp())
        reason = stop_reason(progress)
        if reason:
            self.step.stop(reason)


def _progress_sink(fn: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[str, int, int], None] | None:
    """Writes a node's long-step progress into the job store (throttled), for `job progress`."""
    first = args[0] if args and isinstance(args[0], dict) else {}
    job_id = first.get("job_id")
    if not isinstance(job_id, str):
        return None
    node = getattr(fn, "__name__", "node")
    last = [0.0]

    def write(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        try:
            from nodes.job.runtime import runtime

            runtime().jobs.set_step(job_id, node, stage, done, total)
        except Exception as exc:  # progress is a courtesy; it never fails the node
            log.debug("step progress not written: %s", exc)

    return write


def _clear_progress(args: tuple[Any, ...]) -> None:
    first = args[0] if args and isinstance(args[0], dict) else {}
    try:
        from nodes.job.runtime import runtime

        runtime().jobs.clear_step(str(first.get("job_id")))
    except Exception as exc:
        log.debug("step progress not cleared: %s", exc)


async def with_heartbeats(fn: Callable[..., Any], *args: Any) -> Any:
    """Run `fn(*args)` in a thread under a fresh step control; heartbeat, watch for a stop, and
    on cancellation let the thread end its batch (keeping what it computed) before re-raising.
    In an activity a QuarryError leaves as its ApplicationError (`application_error`)."""
    try:
        return await _with_heartbeats(fn, *args)
    except Exception as exc:
        converted = application_error(exc) if activity.in_activity() else None
        if converted is None:
            raise
        raise converted from exc


async def _with_heartbeats(fn: Callable[..., Any], *args: Any) -> Any:
    name = getattr(fn, "__name__", "node")
    step = StepControl(on_progress=_progress_sink(fn, args))
    with using_step(step):  # asyncio.to_thread copies the context, so the thread sees `step`
        task = asyncio.ensure_future(asyncio.to_thread(_in_node_span, fn, *args))
    watcher = _Watcher(step)
    loop = asyncio.get_running_loop()
    beat_at = loop.time() + HEARTBEAT_EVERY_S
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=POLL_EVERY_S)
            if done:
                return task.result()
            if step.active:
                await watcher.check()
            if loop.time() >= beat_at:
                beat_at = loop.time() + HEARTBEAT_EVERY_S
                if activity.in_activity():
                    activity.heartbeat(*filter(None, [name, step.progress_text]))
    except asyncio.CancelledError:
        step.stop("cancelled")
        await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
        raise
    finally:
        if step.active and step.on_progress is not None:
            await asyncio.to_thread(_clear_progress, args)


def beating(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A short blocking activity (a checkpoint, the final write) that heartbeats every
    HEARTBEAT_EVERY_S from a side thread while it runs, so it can have a heartbeat timeout: a
    worker killed while it held one was noticed only at its 60 s start-to-close timeout, and the
    job waited that long (the two-workers drill). Outside an activity it just runs. In an
    activity a QuarryError leaves as its ApplicationError (`application_error`)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not activity.in_activity():
            return fn(*args, **kwargs)
        try:
            return _beating(*args, **kwargs)
        except Exception as exc:
            converted = application_error(exc)
            if converted is None:
                raise
            raise converted from exc

    def _beating(*args: Any, **kwargs: Any) -> Any:
        context = contextvars.copy_context()  # the activity's context, for heartbeat() in the side thread
        done = threading.Event()

        def beat() -> None:
            while not done.wait(HEARTBEAT_EVERY_S):
                context.run(activity.heartbeat)

        side = threading.Thread(target=beat, name=f"heartbeat-{fn.__name__}", daemon=True)
        side.start()
        try:
            return fn(*args, **kwargs)
        finally:
            done.set()
            side.join()

    return run


def final_attempt(max_attempts: int) -> bool:
    """Whether this is the activity's last attempt (always true outside an activity).

    Model steps raise on earlier attempts, so Temporal retries a transient failure visibly and
    with backoff; on the last one they fall back to the heuristic decision instead of failing
    the job.
    """
    if not activity.in_activity():
        return True
    return activity.info().attempt >= max_attempts
