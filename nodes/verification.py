"""Verification node: read the best candidates, locate evidence per checklist item, score them.

S = (mean_i c_i + p) / 6 with p the candidate's retrieval strength relative to the pool's best;
hard constraints (years, exclusions) zero a candidate and record why.
"""
from __future__ import annotations

from nodes.config import config_of
from nodes.policy import SCORED_KINDS, JudgeInput
from nodes.librarian import librarian_tasks
from nodes.pool import load_pool, store_pool
from nodes.runtime import runtime
from nodes.state import JobState, bump
from stores.records import quotable_chunks


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
    corpus = rt.collection(state).corpus
    plan = state.get("plan", {})
    version = plan.get("version", 1)
    candidates = load_pool(rt.jobs, state)
    pool = sorted(candidates.values(), key=lambda c: (-c.get("fused", 0.0), c["docid"]))[:config_of(state).verify_top]
    best_fused = pool[0]["fused"] if pool else 1.0
    opened = list(state.get("opened", []))
    opened_set = set(opened)
    records = corpus.get_many([c["docid"] for c in pool])
    dense = rt.dense(state)
    items = [i for i in plan.get("checklist", []) if i["kind"] in SCORED_KINDS]
    item_vecs = {i["id"]: dense.embed_query(i["text"]) for i in items} if dense is not None else None
    chunk_vecs = dense.chunk_vectors([c["docid"] for c in pool]) if dense is not None else {}
    lexical = item_lexical_scores(rt.collection(state).lucene, items, [c["docid"] for c in pool])
    batch: list[JudgeInput] = []
    for cand in pool:
        docid = cand["docid"]
        rec = records.get(docid)
        if rec is None:
            continue
        if docid not in opened_set:
            tools.read_document("verify candidate against the checklist", docid)
            opened.append(docid)
            opened_set.add(docid)
        p = round(cand["fused"] / best_fused, 6) if best_fused else 0.0
        batch.append(JudgeInput(rec, quotable_chunks(rec, corpus.chunks(docid)), p, chunk_vecs.get(docid),
                                {i: s[docid] for i, s in lexical.items()}))
    for inp, judged in zip(batch, policy.judge(plan, batch, item_vecs)):
        candidates[inp.rec.docid].update(p=inp.p, score=judged.score, evidence=judged.evidence,
                                         excluded=judged.excluded, verified_version=version, judged="")
    update = store_pool(rt.jobs, state, candidates)
    if state.get("policy") == "llm":  # the librarians' batches, planned here so the router stays small
        update["librarian_tasks"] = librarian_tasks(state, candidates)
    return {**update, "opened": opened, "node": "verification",
            "stats": bump(state.get("stats", {}), tool_calls=tools.calls, reads=tools.calls)}
