"""The graphs' state schema and the initial state of a job.

The schema itself (`JobState` and its value types) is the nodes' vocabulary and lives in
`nodes.job.state`; this module builds a job's first state from its input and says which graph a
policy runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodes.job.config import JobConfig
from nodes.job.state import JobState, Mode
from nodes.policy.code_ref import CodeRef
from nodes.policy.registry import DEFAULT_POLICY, REACT_GRAPH, SEARCH_GRAPH, find_or_default, specs

# The builder of each graph a policy can name (`PolicySpec.graph`), as a reference imported on first
# use so this module stays light for the workflow; a policy with a graph of its own names its builder
# in its spec (`PolicySpec.graph_builder`).
GRAPH_BUILDERS: dict[str, CodeRef] = {
    SEARCH_GRAPH: CodeRef("graphs.search_graph", "make_search_graph"),
    REACT_GRAPH: CodeRef("graphs.react_graph", "make_react_graph"),
}


def graph_for(policy: str) -> str:
    """The registered graph a policy runs on (its spec's; the default policy's for an unknown name)."""
    return find_or_default(policy).graph


def graph_builders() -> dict[str, Callable[[], Any]]:
    """Every graph some registered policy runs on, by name, with its builder (for the worker)."""
    out: dict[str, Callable[[], Any]] = {}
    for spec in specs():
        if spec.graph not in out:
            out[spec.graph] = (spec.graph_builder or GRAPH_BUILDERS[spec.graph]).load()
    return out


def initial_state(
    job_id: str,
    collection: str,
    intent: str,
    *,
    mode: Mode = "list",
    policy: str = DEFAULT_POLICY,
    config: JobConfig | None = None,
) -> JobState:
    config = config or JobConfig()
    return JobState(
        job_id=job_id,
        collection=collection,
        intent=intent,
        mode=mode,
        policy=policy,
        config=config.to_dict(),
        plan={},
        queries=[],
        searches=[],
        pool={},
        top=[],
        judgements=[],
        round=0,
        node="start",
        stop_reason="",
        steering=[],
        new_high=0,
        top_ids=[],
        previewed=[],
        opened=[],
        stats={"tool_calls": 0, "searches": 0, "reads": 0},
        usage={},
        fallbacks=[],
        result={},
    )


__all__ = ["GRAPH_BUILDERS", "REACT_GRAPH", "SEARCH_GRAPH", "JobState", "graph_builders", "graph_for", "initial_state"]
