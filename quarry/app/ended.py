"""What `quarry job result` says about a job that ended without a result.

A terminated job runs no more code, so it builds no result: its job store row is all there is —
its status, the reason its terminator gave (`quarry job terminate --reason`, the Web UI, the
temporal CLI: recorded by whichever Quarry command saw it end), its intent and last round. Saying
"wait for it" about such a job, or printing an empty result ("None · rounds ?"), misleads: this
says how it ended and how to run it again.
"""

from __future__ import annotations

from typing import Any

from stores.job_status import JobStatus

ENDED_WORDS: dict[str, str] = {
    JobStatus.TERMINATED: "was terminated",
    JobStatus.FAILED: "failed",
    JobStatus.CANCELLED: "was cancelled",
    JobStatus.STOPPED: "was stopped",
    JobStatus.BUDGET_EXHAUSTED: "ran out of budget",
}


def ended_record(row: dict[str, Any]) -> dict[str, Any]:
    """The job as a result-shaped record (for --json): no ranked documents, how it ended."""
    return {
        "job_id": row["job_id"],
        "status": row["status"],
        "collection": row.get("collection"),
        "intent": row.get("intent"),
        "round": row.get("round"),
        "ranked": [],
        "error": row.get("error"),
        "rerun": f"quarry job rerun {row['job_id']}",
    }
