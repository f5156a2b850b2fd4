"""Steering node: fold a researcher's notes, received mid-job, into the plan and the next queries.

Pure and deterministic (no I/O, no clock), so the round graph runs it inside the workflow rather
than as an activity: the plan is rebuilt from the intent and every note so far (a note may add a
requirement, a year range or an exclusion), while what the navigator checked against the store
(author and venue constraints) and the items a model navigator wrote are kept. Only the positive
part of a note is searched: "not benchmarks" must never become a search for "benchmarks".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodes.evidence.planning import make_plan, parse_exclusions, parse_years
from nodes.tools.excerpts import query_terms

# Plan fields the navigator validated against the store; a rebuilt plan keeps them as they were.
KEPT_FIELDS = ("authors", "authors_exclusive", "venue", "years_known")


def _kept_item(item: Mapping[str, Any]) -> bool:
    """Author (`a`) and venue (`v`) items, and those a model navigator wrote (`m…`, `r…` ids)."""
    return item["id"] in ("a", "v") or item["id"][:1] in ("m", "r")


def fold_steering(state: Mapping[str, Any], notes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The state update that applies `notes` (steering records with a `text`) and starts a new round."""
    steering = [*state.get("steering", []), *notes]
    before = state.get("plan", {})
    plan: dict[str, Any] = dict(
        make_plan(state["intent"], [s["text"] for s in steering], years=before.get("years_known", True))
    )
    kept = {k: before[k] for k in KEPT_FIELDS if k in before}
    keep_items = [i for i in before.get("checklist", []) if _kept_item(i)]
    plan = {**plan, **kept, "checklist": plan["checklist"] + keep_items}
    core = plan.get("core") or state["intent"]
    positive = [parse_exclusions(parse_years(s["text"])[2])[1] for s in notes]
    queries = [f"{core} {p}" for p in positive if query_terms(p)] or [core]
    return {
        "plan": plan,
        "steering": steering,
        "queries": queries,
        "stop_reason": "",
        "round": int(state.get("round", 1)) + 1,
        "top_ids": [],
        "node": "steer",
    }
