"""Reflection node: decide whether another round is worth it, and with which queries.

A round is worth it while it brings new documents into the top ten; the next queries add
relevance-feedback terms from the best-verified documents and weight the weakest checklist item.
"""

from __future__ import annotations

from typing import cast

from nodes.job.config import config_of
from nodes.job.pool import load_pool
from nodes.job.runtime import runtime
from nodes.job.state import Candidate, ChecklistItem, JobState, model_step_update, ranked_candidates
from nodes.policy.seam import SCORED_KINDS, ReflectRequest
from nodes.rounds.retrieval import as_query, query_key

TOP = 10
CITATION_SEEDS = 5
# Citation neighbours bring recall (CACM: pool recall 0.698 → 0.788 at equal size) but are
# weaker evidence of relevance than a query match, so they enter the fusion at half weight.
CITATION_WEIGHT = 0.5
# Feedback queries mainly widen the pool that verification reads; at full weight they reordered
# the top and cost nDCG (CACM −0.004, scifact −0.014 at weight 0.5), so they count a quarter.
FEEDBACK_WEIGHT = 0.25


def _weakest_item(state: JobState, top: list[Candidate]) -> ChecklistItem | None:
    items = [i for i in state.get("plan", {}).get("checklist", []) if i["kind"] in SCORED_KINDS]
    if not items or not top:
        return None

    def mean_score(item_id: str) -> float:
        vals = [e["score"] for c in top for e in c.get("evidence", []) if e["item_id"] == item_id]
        return sum(vals) / len(vals) if vals else 0.0

    return min(items, key=lambda i: (mean_score(i["id"]), i["id"]))


def reflection(state: JobState) -> dict:
    update = _reflect(state)
    # The round's checkpoint, written here rather than by an activity of its own (one round trip
    # less per round): the state after this round, so an interrupted job can always be shown.
    checkpoint(cast(JobState, dict(state) | update))
    return update


def checkpoint(state: JobState) -> None:
    """Save the job's state to the job store (its latest checkpoint and a progress event): after
    each round, and inside a one-step round after each step (graphs.search_graph.round_)."""
    runtime().jobs.checkpoint(state["job_id"], dict(state))


def _reflect(state: JobState) -> dict:
    rt = runtime()
    policy = rt.policy(state)
    ranked = ranked_candidates(load_pool(rt.jobs, state))
    top = ranked[:TOP]
    top_ids = [c["docid"] for c in top]
    new_high = len(set(top_ids) - set(state.get("top_ids", [])))
    round_no = int(state.get("round", 1))
    update: dict = {"top_ids": top_ids, "new_high": new_high, "node": "reflection"}
    if round_no > 1 and new_high == 0:
        return update | {"stop_reason": "converged"}
    if round_no >= config_of(state).max_rounds:
        return update | {"stop_reason": "max_rounds"}
    corpus = rt.collection(state).corpus
    records = corpus.get_many([c["docid"] for c in ranked[:60]])
    best = [records[d] for d in top_ids[:8] if d in records]
    pool = [records[c["docid"]] for c in ranked[:60] if c["docid"] in records]
    done = {s.get("key", s["query"]) for s in state.get("searches", [])}
    decision = policy.reflect(
        ReflectRequest(
            state["plan"],
            state["intent"],
            best,
            pool,
            _weakest_item(state, top),
            top,
            [s["query"] for s in state.get("searches", [])],
        )
    )
    update |= model_step_update(state, "reflection", decision.usage, decision.fallback)
    if decision.plan is not None:
        update["plan"] = decision.plan
    if decision.done:
        return update | {"stop_reason": "navigator_done"}
    channels = rt.channels(state)
    queries = [{"text": t, "channel": "lexical", "weight": FEEDBACK_WEIGHT} for t in decision.queries]
    seeds = top_ids[:CITATION_SEEDS]
    if seeds and "citations" in channels:
        queries.append({"text": "", "channel": "citations", "weight": CITATION_WEIGHT, "seeds": seeds})
    queries = [q for q in queries if query_key(as_query(q)) not in done]
    if not queries:
        return update | {"stop_reason": "no_new_queries"}
    return update | {"queries": queries, "round": round_no + 1}
