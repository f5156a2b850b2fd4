"""Answer node: the ranked list with per-requirement evidence, or a cited answer.

Every docid in the output comes from the job's candidate pool, which only ever holds ids a store
returned; every citation in an answer points at an evidence chunk Quarry actually read.
"""
from __future__ import annotations

import re

from graphs.state import JobState, ranked_candidates
from nodes.fusion import reciprocal_rank_fusion
from nodes.runtime import runtime
from nodes.scoring import quote, violated_constraint

MAX_RANKED = 20
RUN_DEPTH = 1000


def _extractive_answer(ranked: list[dict]) -> tuple[str, list[str]]:
    """Heuristic answer: the best evidence sentence of each top document, cited inline."""
    parts, cited = [], []
    for item in ranked[:3]:
        ev = max(item["evidence"], key=lambda e: e["score"], default=None)
        if not ev or not ev["chunk"]:
            continue
        sentence = re.split(r"(?<=[.!?])\s+", ev["chunk"])[0].strip()
        parts.append(f"{sentence} [{item['docid']}]")
        cited.append(item["docid"])
    return " ".join(parts), cited


def _quotes(corpus, docid: str, spans: list[dict]) -> list[dict]:
    """The runner-up evidence chunks of one item, quoted from the store by their line ranges."""
    if not spans:
        return []
    lines = corpus.lines(docid) or []
    return [{"lines": [s["line_start"], s["line_end"]], "score": s["score"],
             "chunk": quote(" ".join(lines[s["line_start"] - 1:s["line_end"]]))}
            for s in spans]


def _beyond_pool(state: JobState, seen: set[str], plan: dict, corpus, limit: int) -> list[str]:
    """Documents outside the candidate pool, in the weighted RRF order of the job's deep search
    rankings (the ids a store returned, kept behind search_ids), that pass the hard constraints."""
    tools = runtime().tools(state)
    searches = [s for s in state.get("searches", []) if str(s.get("search_id", "")).startswith("s")]
    rankings, weights = [], []
    for s in searches:
        ranking = tools.ranking(s["search_id"])
        if ranking is not None:
            rankings.append([d for d in ranking.docids if d not in seen])
            weights.append(float(s.get("weight", 1.0)))
    order = [d for d, _ in reciprocal_rank_fusion(rankings, weights)] if rankings else []
    records = corpus.get_many(order[: 2 * limit])
    return [d for d in order[: 2 * limit] if d in records and not violated_constraint(plan, records[d])][:limit]


def answer(state: JobState) -> dict:
    rt = runtime()
    policy = rt.policy(state)
    corpus = rt.collection(state["collection"]).corpus
    plan = state.get("plan", {})
    items = {i["id"]: i for i in plan.get("checklist", [])}
    pool = ranked_candidates(state)
    records = corpus.get_many([c["docid"] for c in pool[:RUN_DEPTH]])
    # Hard constraints hold for every output, verified or not (after an early stop, candidates
    # from the last retrieval may not have been verified yet).
    ranked_all = [c for c in pool[:RUN_DEPTH] if c["docid"] in records
                  and not violated_constraint(plan, records[c["docid"]])]
    top = ranked_all[:MAX_RANKED]
    ranked = []
    for cand in top:
        rec = records.get(cand["docid"])
        if rec is None:  # cannot happen for ids from a store; never output an unknown id
            continue
        ranked.append({
            "docid": cand["docid"], "title": rec.title, "year": rec.year, "score": round(cand.get("score", 0.0), 4),
            "evidence": [{"item": items.get(e["item_id"], {}).get("text", e["item_id"]), "score": e["score"],
                          "chunk": e["chunk"], "lines": [e["line_start"], e["line_end"]],
                          "more": _quotes(corpus, cand["docid"], e.get("also", []))} for e in cand.get("evidence", [])],
            "reason": policy.reason(plan, cand),
        })
    # The deep run (for evaluation): verified order first, then the rest of the pool by fusion,
    # then what the job's full-depth rankings hold beyond the pool, fused the same way.
    run = [c["docid"] for c in ranked_all[:RUN_DEPTH]]
    if len(run) < RUN_DEPTH:
        # Every candidate was already placed or rejected (excluded ones stay out).
        run += _beyond_pool(state, set(state.get("candidates", {})), plan, corpus, RUN_DEPTH - len(run))
    result = {
        "job_id": state["job_id"], "collection": state["collection"], "intent": state["intent"],
        "mode": state.get("mode", "list"), "ranked": ranked, "run": run,
        "checklist": plan.get("checklist", []), "stop_reason": state.get("stop_reason", ""),
        "rounds": state.get("round", 0), "queries": [s["query"] for s in state.get("searches", [])],
    }
    cited = [r["docid"] for r in ranked]
    if state.get("mode") == "answer":
        result["answer"], cited = _extractive_answer(ranked)
    result["cited"] = cited
    return {"result": result, "node": "answer"}
