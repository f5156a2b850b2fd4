"""The graphs' state schema and the initial state of a job.

The schema itself (`JobState` and its value types) is the nodes' vocabulary and lives in
`nodes.state`; this module builds a job's first state from its input and says which graph a
policy runs on.
"""
from __future__ import annotations

from nodes.config import JobConfig
from nodes.state import JobState, Mode

SEARCH_GRAPH = "quarry-search"  # navigator → retrieval → verification → reflection → answer
REACT_GRAPH = "quarry-react"    # agent ⇄ tools → finish


def graph_for(policy: str) -> str:
    """The registered graph a policy runs on (`react` has its own; the others share the rounds)."""
    return REACT_GRAPH if policy == "react" else SEARCH_GRAPH


def initial_state(job_id: str, collection: str, intent: str, *, mode: Mode = "list", policy: str = "heuristic",
                  config: JobConfig | None = None) -> JobState:
    config = config or JobConfig()
    return JobState(job_id=job_id, collection=collection, intent=intent, mode=mode, policy=policy,
                    config=config.to_dict(), plan={}, queries=[], searches=[], pool={}, top=[], judgements=[], round=0,
                    node="start", stop_reason="", steering=[], new_high=0, top_ids=[], previewed=[], opened=[],
                    stats={"tool_calls": 0, "searches": 0, "reads": 0}, usage={}, fallbacks=[], result={})


__all__ = ["JobState", "REACT_GRAPH", "SEARCH_GRAPH", "graph_for", "initial_state"]
