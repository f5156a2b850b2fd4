"""Reading jobs, for every front door: the job list, a job's progress, its result so far, and the
result in an export format."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from quarry.app import temporal
from quarry.app.progress import step_detail, with_round_so_far
from quarry.app.records import known_job, record_termination, seen_terminated, store
from stores.errors import QuarryError
from stores.job_status import JobStatus

JOBS_LISTED = 20  # jobs `job list` (and `quarry mcp`'s list_jobs) show by default, newest first


def job_rows(
    limit: int = JOBS_LISTED, status: str | None = None, collection: str | None = None, address: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, str] | None]:
    """This home's jobs, newest first (`job list`, `quarry mcp`'s list_jobs): the job store's rows,
    those still running as Temporal sees them, a failed one with its error's code; and Temporal's
    view (None when no server answers)."""
    rows = store().list(limit, status=status, collection=collection)
    running = any(r["status"] == JobStatus.RUNNING for r in rows)
    temporal_view = temporal.temporal_statuses(max(limit * 2, 100), address) if running else {}
    for r in rows:
        seen = (temporal_view or {}).get(r["job_id"])
        if r["status"] == JobStatus.RUNNING and seen and seen not in ("running", "continued_as_new"):
            r["status"] = seen  # e.g. terminated or timed out outside Quarry
            import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

            if (
                seen == "terminated"
                and (reason := asyncio.run(record_termination(r["job_id"], r, address))) is not None
            ):
                r["error"] = reason
        if r["status"] == JobStatus.FAILED:  # with its error's code (the type its workflow failed with)
            failed = known_job(r["job_id"]) or {}
            error = (failed.get("result") or {}).get("error")
            r["error"] = failed.get("error")
            r["error_code"] = error.get("code") if isinstance(error, dict) else None
    return rows, temporal_view


def progress_of(job_id: str, address: str | None = None) -> dict[str, Any]:
    """A running job's answer to the `progress` query (round, node, top 5 with titles, budget),
    with Temporal's own status for one ended outside Quarry and the running step's detail — what
    `job progress` and `quarry mcp`'s job_status show. Runs its own event loop; a failure
    (worker_warming_up included) comes out as one QuarryError."""

    async def main():
        client = await temporal.client(address)
        handle = client.get_workflow_handle(job_id)
        p = await handle.query("progress", rpc_timeout=timedelta(seconds=5))
        # A workflow terminated from outside keeps answering queries with the state it had, which
        # still says "running": Temporal's own status says what happened to it.
        if p.get("status") == JobStatus.RUNNING:
            status = (await handle.describe(rpc_timeout=timedelta(seconds=5))).status
            if status is not None and status.name != "RUNNING":
                p["status"] = status.name.lower()
        return p

    p = with_round_so_far(job_id, temporal.attempt(main(), job_id, address))
    if detail := step_detail(job_id, p):
        p["step_detail"] = detail
    try:
        col = p.get("job_id") and store().get(job_id)["collection"]
        from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up

        titles = Collection(col).corpus.titles([t["docid"] for t in p["top"]]) if col else {}
        for t in p["top"]:
            t["title"] = titles.get(t["docid"], "")
    except QuarryError:
        pass
    return p


def result_so_far(
    job_id: str, address: str | None = None, look: bool = True
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A job's row and its stored result (None while it runs, or when it ended without one) —
    what `job result` and `quarry mcp`'s job_result read. With `look`, a job the store still calls
    running is checked against Temporal: one terminated outside Quarry is recorded as such now.
    An unknown job id is a QuarryError."""
    row = store().get(job_id)
    result = row.get("result")
    if result is None and row["status"] == JobStatus.RUNNING and look:
        row = seen_terminated(job_id, row, address)  # ended outside Quarry: the store learns it now
    return row, result


def exported(result: dict[str, Any], fmt: str) -> str:
    """A result in an export format (`job export`, `quarry mcp`'s job_result BibTeX), its ranked
    documents' records read from the collection when it still exists."""
    from quarry.exports.job_export import export  # lazy: the export formats load pydantic's records

    records = {}
    try:
        from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up

        records = Collection(result["collection"]).corpus.get_many([r["docid"] for r in result.get("ranked", [])])
    except QuarryError:
        pass  # the collection is gone: export what the result itself holds
    return export(result, records, fmt)
