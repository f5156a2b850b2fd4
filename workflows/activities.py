"""Activities outside the graph: checkpoints, the final write, and answering after a hard stop."""
from __future__ import annotations

from typing import Any

from temporalio import activity

from nodes.answer import answer
from nodes.runtime import runtime


@activity.defn
def checkpoint_job(state: dict[str, Any]) -> None:
    """Persist the state between rounds so an interrupted job can always be shown."""
    runtime().jobs.checkpoint(state["job_id"], state)


@activity.defn
def answer_from_state(state: dict[str, Any]) -> dict[str, Any]:
    """Build the answer from the best state so far (after a hard stop or a failure)."""
    return answer(state)["result"]


@activity.defn
def finish_job(state: dict[str, Any], result: dict[str, Any], status: str, error: str | None) -> dict[str, Any]:
    """Add status, trajectory tiers and stats to the result and store it for good."""
    jobs = runtime().jobs
    surfaced = jobs.surfaced(state["job_id"])
    final = dict(result) | {
        "status": status,
        "error": error,
        "trajectory": {"surfaced": len(surfaced), "previewed": state.get("previewed", []),
                       "opened": state.get("opened", []), "cited": result.get("cited", [])},
        "stats": dict(state.get("stats", {})) | {"rounds": state.get("round", 0)},
    }
    jobs.finish(state["job_id"], final, state)
    return final
