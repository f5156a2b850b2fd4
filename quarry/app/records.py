"""A job's record in this home's job store as the job commands read and complete it: its row,
its trace file, a job terminated outside Quarry recorded as such (its trace closed with a root
span), the result of a job that ended, and the exit status a result gives."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import typer

from quarry.app import temporal
from stores.errors import QuarryError
from stores.home import quarry_home, traces_dir
from stores.job_status import CUT_SHORT, JobStatus
from stores.jobs import FINAL, JobStore
from workflows.processes.dev_server import reachable


def store() -> JobStore:
    return JobStore(quarry_home() / "jobs.sqlite")


def known_job(job_id: str) -> dict[str, Any] | None:
    """The job's row in the job store, None if only Temporal might know it; a finished job's row
    says so, which stop and steer turn into a clear message."""
    try:
        return store().get(job_id)
    except QuarryError:
        return None


def has_ended(job_id: str) -> bool:
    """Whether the job store holds this job as ended, with its result: `job watch` then shows that
    result and `job stop` says there is nothing to stop — answers that no longer change."""
    row = known_job(job_id)
    return row is not None and row["status"] in FINAL and bool(row.get("result"))


def trace_file(trace_id: str | None) -> str:
    """Where the job's trace can be read: its local file when one exists, else where it went."""
    if not trace_id:
        return ""
    path = traces_dir(quarry_home()) / f"{trace_id}.jsonl"
    if path.is_file():
        return str(path)
    from observability.setup import trace_files_on  # lazy: observability costs ~30 ms of start-up

    if not trace_files_on():
        return f"trace {trace_id} in your OTLP backend (local files are off: QUARRY_TRACE_FILES=0)"
    return ""


async def record_termination(job_id: str, row: dict[str, Any] | None, address: str | None = None) -> str | None:
    """A job the job store calls running but that was terminated outside Quarry (the Web UI,
    `temporal workflow terminate`) ran no code at its end: record it as terminated with the reason
    its terminator gave, and close its trace with the root span, as `job terminate` does. Returns
    the reason, or None when the job was not terminated (or the server cannot say)."""
    from workflows.client import termination  # lazy: temporalio's client costs over a second of start-up

    try:
        ended = await termination(await temporal.client(address), job_id)
    except Exception:  # the server's view is an addition, never a reason to fail the command
        return None
    if ended is None:
        return None
    if store().mark(job_id, JobStatus.TERMINATED, ended.reason[:300]) and ended.trace:
        close_terminated_trace(ended.trace, job_id, row, ended.reason[:300])
    return ended.reason


def seen_terminated(job_id: str, row: dict[str, Any], address: str | None = None) -> dict[str, Any]:
    """The job's row, after asking the server (if it answers) whether a job the store calls
    running was terminated outside Quarry."""
    import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

    if (
        not reachable(temporal.current_address(address))
        or asyncio.run(record_termination(job_id, row, address)) is None
    ):
        return row
    return known_job(job_id) or row


def close_terminated_trace(trace: dict[str, Any], job_id: str, row: dict[str, Any] | None, reason: str) -> None:
    """Emit the terminated job's `invoke_agent` span (status ERROR, the reason as its message), so
    its trace has a root like every other job's; recorded in the job store as finish_job does."""
    from observability.agent_span import AgentTrace, emit_agent_span  # lazy: observability costs ~40 ms
    from observability.setup import build_provider

    ref = AgentTrace.from_dict(trace)
    if ref is None:  # the callers pass a recorded trace: never reached
        return
    provider = build_provider("quarry-cli", quarry_home())  # its own, not the process's global one
    try:
        emit_agent_span(
            ref,
            job_id=job_id,
            intent=str((row or {}).get("intent", "")),
            output={"ranked": []},
            status="terminated",
            error=reason,
            attributes={"quarry.collection": str((row or {}).get("collection", ""))},
            tracer=provider.get_tracer("quarry"),
        )
    finally:
        provider.shutdown()  # flushes an OTLP batch too
    if row:
        store().set_trace(job_id, ref.trace_id)


async def final(awaitable: Awaitable[dict[str, Any]], job_id: str, address: str | None = None) -> dict[str, Any]:
    """A job's result; a job that ended failed, cancelled or terminated has its record in the job
    store. A failed job's workflow ends Failed, typed by its error's code, after storing its result:
    the stored result is read, else the one the failure carries (workflows.job_failure)."""
    from temporalio.client import WorkflowFailureError  # lazy: temporalio costs ~170 ms of start-up
    from temporalio.exceptions import TerminatedError

    from workflows.job_failure import failed_result

    try:
        return await awaitable
    except WorkflowFailureError as err:
        row = known_job(job_id) or {}
        if isinstance(err.cause, TerminatedError) and row.get("status") not in FINAL:
            await record_termination(job_id, row or None, address)  # terminated outside Quarry, while we waited
            row = known_job(job_id) or {}
        return (
            row.get("result")
            or failed_result(err, job_id)
            or {
                "job_id": job_id,
                "status": row.get("status", JobStatus.FAILED),
                "ranked": [],
                "intent": row.get("intent"),
                "collection": row.get("collection"),
                "error": row.get("error") or str(err.cause or err)[:300],
            }
        )


def exit_for(result: dict[str, Any]) -> None:
    """Exit 1 for a job that failed, or ran out of budget with nothing to show."""
    if result.get("status") in CUT_SHORT or (
        result.get("status") == JobStatus.BUDGET_EXHAUSTED and not result.get("ranked")
    ):
        raise typer.Exit(1)
