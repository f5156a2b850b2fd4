"""Activities outside the graph: checkpoints, the final write, and answering after a hard stop."""

from __future__ import annotations

import json
from typing import Any

from temporalio import activity

from nodes.job.config import config_of
from nodes.job.heartbeat import beating
from nodes.job.pool import further_along
from nodes.job.runtime import runtime
from nodes.job.state import rounds_run
from nodes.job.steering_notes import steering_report
from nodes.job.usage import Usage
from nodes.policy.registry import DEFAULT_POLICY, spec_of
from observability.agent_span import AgentTrace, emit_agent_span
from stores.errors import QuarryError, error_line
from stores.redact import redact


def react_steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call of a ReAct conversation with its reason and main arguments, in order."""
    steps = []
    for row in messages:
        for call in (row.get("data", {}).get("tool_calls") or []) if row.get("type") == "ai" else []:
            args = call.get("args") or {}
            steps.append(
                {
                    "tool": str(call.get("name", ""))[:60],
                    "reason": str(args.get("reason", ""))[:300],
                    **{k: str(args[k])[:200] for k in ("query", "search_id", "docid", "offset") if k in args},
                }
            )
    return steps


@activity.defn
@beating
def checkpoint_job(state: dict[str, Any]) -> None:
    """Persist the state between rounds so an interrupted job can always be shown."""
    runtime().jobs.checkpoint(state["job_id"], state)


@activity.defn
@beating
def answer_from_state(state: dict[str, Any]) -> None:
    """Build the answer from the best state so far (after a hard stop or a failure), without
    calling a model (the budget is spent, or the graph could not go on); it waits in the job
    store for `finish_job`. A one-step round stopped part-way has checkpointed the steps it did:
    the answer is built from that checkpoint when it is further along than `state`."""
    state = dict(further_along(state, _stored_state(state)))
    done = spec_of(state).result_builder()(state, use_model=False)
    runtime().jobs.save_draft(
        state["job_id"], done.result | {"fallbacks": done.state_update.get("fallbacks", state.get("fallbacks", []))}
    )


def _stored_state(state: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return runtime().jobs.get(str(state.get("job_id")))["state"]
    except QuarryError:  # never checkpointed
        return None


def _empty_result(state: dict[str, Any]) -> dict[str, Any]:
    """What a job that could not answer at all (e.g. its collection is gone) reports."""
    return {
        "job_id": state.get("job_id"),
        "collection": state.get("collection"),
        "intent": state.get("intent"),
        "mode": state.get("mode", "list"),
        "policy": state.get("policy", DEFAULT_POLICY),
        "ranked": [],
        "run": [],
        "cited": [],
        "rounds": rounds_run(state),
    }


def stored_error(error: dict[str, Any] | str | None) -> dict[str, str] | str | None:
    """A failed job's error as its result keeps it: `{code, message, hint}`, each redacted; a string
    (what a workflow started before errors had codes passes) redacted as it is."""
    if not error:
        return None
    if isinstance(error, dict):
        return {key: redact(str(error.get(key) or "")) for key in ("code", "message", "hint")}
    return redact(str(error))


@activity.defn
@beating
def finish_job(
    state: dict[str, Any],
    status: str,
    error: dict[str, Any] | str | None,
    stop_reason: str,
    trace: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Complete the stored result with status, trajectory tiers, stats and usage, and store it for
    good; `stop_reason` fills in why the job answered when the graph did not say (stop, clock);
    `error` is a failed job's `{code, message, hint}`; `steering` lists each steering note and where
    it took effect (nodes.job.steering_notes; the workflow adds those it never folded in). Then emit the job's `invoke_agent` span
    (`trace`: its identity fixed at submission)."""
    jobs = runtime().jobs
    cfg = config_of(state)
    result = jobs.load_draft(state["job_id"]) or _empty_result(state)
    if not result.get("stop_reason"):
        result["stop_reason"] = stop_reason
    surfaced = jobs.surfaced(state["job_id"])
    trajectory = {
        "surfaced": len(surfaced),
        "previewed": state.get("previewed", []),
        "opened": state.get("opened", []),
        "cited": result.get("cited", []),
    }
    spec = spec_of(state)
    if spec.conversation:
        trajectory["steps"] = react_steps(jobs.messages(state["job_id"]))
    final = dict(result) | {
        "status": status,
        "error": stored_error(error),
        "trajectory": trajectory,
        "stats": dict(state.get("stats", {})) | {"rounds": rounds_run(state)},
        "usage": Usage.from_dict(state.get("usage")).to_dict(),
        "fallbacks": result.get("fallbacks") or list(state.get("fallbacks", [])),
        "models": {"model": cfg.models.model, "judge_model": cfg.models.judge()} if spec.uses_models else None,
        "manifest": runtime().manifest(state, str(result.get("ranker") or spec.order_label())),
    }
    if notes := steering_report(state):
        final["steering"] = notes
    final = json.loads(redact(json.dumps(final, default=str)))  # it is returned through Temporal's history too
    jobs.finish(state["job_id"], final, state)
    ref = AgentTrace.from_dict(trace)
    if ref is not None:
        jobs.set_trace(state["job_id"], ref.trace_id)  # jobs submitted without the CLI get their trace too
        emit_agent_span(
            ref,
            job_id=state["job_id"],
            intent=str(state.get("intent", "")),
            output={"answer": final.get("answer") or "", "ranked": [r.get("docid") for r in final.get("ranked", [])]},
            status=status,
            error=error_line(final.get("error")) or None,
            attributes={
                "quarry.collection": str(state.get("collection", "")),
                "quarry.policy": spec.name,
                "quarry.rounds": int(state.get("round", 0) or 0),
            },
        )
    return final
