"""Navigator node: intent → plan (checklist, constraints) and the first round's queries."""
from __future__ import annotations

from graphs.state import JobState
from nodes.runtime import runtime


def navigator(state: JobState) -> dict:
    policy = runtime().policy(state)
    notes = [s["text"] for s in state.get("steering", [])]
    plan, queries = policy.plan(state["intent"], notes)
    return {"plan": plan, "queries": queries, "round": 1, "node": "navigator"}
