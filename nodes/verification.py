"""Verification node: read the best candidates, locate evidence per checklist item, score them.

S = (mean_i c_i + p) / 6 with p the candidate's retrieval strength relative to the pool's best;
hard constraints (years, exclusions) zero a candidate and record why.
"""
from __future__ import annotations

from graphs.state import JobState, bump
from nodes.runtime import runtime
from stores.records import quotable_chunks

VERIFY_TOP = 100


def item_lexical_scores(lucene, items: list[dict], docids: list[str]) -> dict[str, dict[str, float]]:
    """Per checklist item, each candidate's BM25 score for the item's words relative to the
    best candidate's (0–1): how strongly a document states that requirement, on a scale that
    does not depend on the collection's score range."""
    out: dict[str, dict[str, float]] = {}
    for item in items:
        raw = lucene.score_documents(item["text"], docids)
        top = max(raw.values(), default=0.0)
        out[item["id"]] = {d: (s / top if top > 0 else 0.0) for d, s in raw.items()}
    return out


def verification(state: JobState) -> dict:
    rt = runtime()
    tools, policy = rt.tools(state), rt.policy(state)
    corpus = rt.collection(state["collection"]).corpus
    plan = state.get("plan", {})
    version = plan.get("version", 1)
    candidates = {d: dict(c) for d, c in state.get("candidates", {}).items()}
    pool = sorted(candidates.values(), key=lambda c: (-c.get("fused", 0.0), c["docid"]))[:VERIFY_TOP]
    best_fused = pool[0]["fused"] if pool else 1.0
    opened = list(state.get("opened", []))
    opened_set = set(opened)
    records = corpus.get_many([c["docid"] for c in pool])
    dense = rt.dense(state["collection"])
    items = [i for i in plan.get("checklist", []) if i["kind"] in ("topic", "method", "application")]
    item_vecs = {i["id"]: dense.embed_query(i["text"]) for i in items} if dense is not None else None
    chunk_vecs = dense.chunk_vectors([c["docid"] for c in pool]) if dense is not None else {}
    lexical = item_lexical_scores(rt.collection(state["collection"]).lucene, items, [c["docid"] for c in pool])
    for cand in pool:
        docid = cand["docid"]
        p = round(cand["fused"] / best_fused, 6) if best_fused else 0.0
        rec = records.get(docid)
        if rec is None:
            continue
        if docid not in opened_set:
            tools.read_document("verify candidate against the checklist", docid)
            opened.append(docid)
            opened_set.add(docid)
        score, evidence, excluded = policy.judge(plan, rec, quotable_chunks(rec, corpus.chunks(docid)), p, item_vecs,
                                                 chunk_vecs.get(docid),
                                                 {i: s[docid] for i, s in lexical.items()})
        cand.update(p=p, score=score, evidence=evidence, excluded=excluded, verified_version=version)
    return {"candidates": candidates, "opened": opened, "node": "verification",
            "stats": bump(state.get("stats", {}), tool_calls=tools.calls, reads=tools.calls)}
