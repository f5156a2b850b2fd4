"""Verification node: read the best candidates, locate evidence per checklist item, score them.

S = (mean_i c_i + p) / 6 with p the candidate's retrieval strength relative to the pool's best;
hard constraints (years, exclusions) zero a candidate and record why.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from nodes.job.config import config_of
from nodes.job.pool import load_pool, store_pool
from nodes.job.runtime import runtime
from nodes.job.state import ChecklistItem, JobState, bump, model_step_update
from nodes.llm.librarian import librarian_tasks
from nodes.policy.registry import spec_of
from nodes.policy.seam import JudgeInput, JudgeRequest, scored_items
from stores.records import quotable_chunks


def item_lexical_scores(
    lucene, items: Sequence[ChecklistItem], docids: list[str], tools=None
) -> dict[str, dict[str, float]]:
    """Per checklist item, each candidate's BM25 score for the item's words relative to the
    best candidate's (0–1): how strongly a document states that requirement, on a scale that
    does not depend on the collection's score range. With `tools`, the Lucene calls are traced."""
    out: dict[str, dict[str, float]] = {}
    span = (
        tools.store_call(
            "score_documents", "lucene", arguments={"items": [i["text"] for i in items], "documents": len(docids)}
        )
        if tools
        else nullcontext()
    )
    with span:
        for item in items:
            raw = lucene.score_documents(item["text"], docids)
            top = max(raw.values(), default=0.0)
            out[item["id"]] = {d: (s / top if top > 0 else 0.0) for d, s in raw.items()}
    return out


def semantic_inputs(tools, dense, items: Sequence[ChecklistItem], docids: list[str]) -> tuple[dict | None, dict]:
    """The checklist items' query vectors and the candidates' chunk vectors (traced), or
    (None, {}) without a dense index."""
    if dense is None:
        return None, {}
    with tools.store_call(
        "embed_and_fetch_vectors", "chroma", arguments={"items": len(items), "documents": len(docids)}
    ):
        return {i["id"]: dense.embed_query(i["text"]) for i in items}, dense.chunk_vectors(docids)


def verification(state: JobState) -> dict:
    rt = runtime()
    tools, policy = rt.tools(state), rt.policy(state)
    corpus = rt.collection(state).corpus
    plan = state.get("plan", {})
    version = plan.get("version", 1)
    candidates = load_pool(rt.jobs, state)
    pool = sorted(candidates.values(), key=lambda c: (-c.get("fused", 0.0), c["docid"]))[: config_of(state).verify_top]
    best_fused = pool[0]["fused"] if pool else 1.0
    opened = list(state.get("opened", []))
    opened_set = set(opened)
    docids = [c["docid"] for c in pool]
    with tools.store_call("get_documents", "corpus", arguments={"documents": len(docids)}):
        records = corpus.get_many(docids)
        chunks = {d: corpus.chunks(d) for d in records}
    items = scored_items(plan)
    item_vecs, chunk_vecs = semantic_inputs(tools, rt.dense(state), items, docids)
    lexical = item_lexical_scores(rt.collection(state).lucene, items, docids, tools)
    unread = [d for d in docids if d in records and d not in opened_set]
    if unread:
        tools.read_documents("verify candidate against the checklist", unread)
        opened.extend(unread)
        opened_set.update(unread)
    batch = _judge_inputs(pool, records, chunks, chunk_vecs, lexical, best_fused)
    decision = policy.judge(JudgeRequest(plan, batch, item_vecs, intent=state.get("intent", "")))
    for inp, judged in zip(batch, decision.judgements, strict=True):
        candidates[inp.rec.docid].update(
            {
                "p": inp.p,
                "score": judged.score,
                "evidence": judged.evidence,
                "excluded": judged.excluded,
                "verified_version": version,
                "judged": decision.judged_by,
            }
        )
    update = store_pool(rt.jobs, state, candidates)
    update |= model_step_update(state, "verification", decision.usage, decision.fallback)
    if spec_of(state).second_look:  # the second look's batches, planned here so the router stays small
        update["librarian_tasks"] = librarian_tasks(state, candidates)
    return {
        **update,
        "opened": opened,
        "node": "verification",
        "stats": bump(state.get("stats", {}), tool_calls=tools.calls, reads=tools.calls),
    }


def _judge_inputs(
    pool: list[Any],
    records: dict[str, Any],
    chunks: dict[str, Any],
    chunk_vecs: dict[str, Any],
    lexical: dict[str, dict[str, float]],
    best_fused: float,
) -> list[JudgeInput]:
    """What the policy judges of each pooled candidate the corpus holds; `p` is its fused score
    relative to the best."""
    batch: list[JudgeInput] = []
    for cand in pool:
        docid = cand["docid"]
        rec = records.get(docid)
        if rec is None:
            continue
        p = round(cand["fused"] / best_fused, 6) if best_fused else 0.0
        batch.append(
            JudgeInput(
                rec,
                quotable_chunks(rec, chunks[docid]),
                p,
                chunk_vecs.get(docid),
                {i: s[docid] for i, s in lexical.items()},
            )
        )
    return batch
