"""Answer node: the ranked list with per-requirement evidence, or a cited answer.

Every docid in the output comes from the job's candidate pool or its cached rankings, which
only ever hold ids a store returned; in answer mode every citation is checked against the text
of a document the job opened, and failing ones are removed and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodes.evidence.answer_extractive import question_weights
from nodes.evidence.answer_sections import with_sections
from nodes.evidence.scoring import violated_constraint
from nodes.job.budget import budget_spent
from nodes.job.config import config_of
from nodes.job.pool import load_pool
from nodes.job.results import answer_docs, checked_answer, fused_rankings, passing, ranked_entry, removed_report
from nodes.job.runtime import runtime
from nodes.job.state import JobState, model_step_update, ranked_candidates, rounds_run
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.registry import DEFAULT_POLICY, spec_of
from nodes.policy.seam import AnswerRequest
from nodes.ranking.ranker import ALT_BM25, HEURISTIC_ORDER, RankContext, final_order, uses_alt_bm25
from nodes.tools.excerpts import query_terms
from stores.errors import QuarryError


@dataclass
class RankerInputs:
    """Everything `nodes.ranking.ranker.final_order` reads besides the pool (the same for a job and for
    `tuning.train_ranker`, which learns from exactly these)."""

    channel_of: dict[str, str]
    neighbours: dict[str, set[str]]
    lengths: dict[str, int]
    context: RankContext


def ranker_inputs(rt: Any, state: JobState, candidates: dict[str, Any], alt_bm25: bool = True) -> RankerInputs:
    """The verified candidates' citation links and lengths, the job's rankings (intent's lexical
    and semantic search, and the others) and — when `alt_bm25`, for a verifier that uses them —
    their BM25 scores under `ALT_BM25` (three scorings of the head: most of the verifier's cost)."""
    col = rt.collection(state)
    verified = [d for d, c in candidates.items() if c.get("verified_version") and not c.get("excluded")]
    neighbours = (
        {d: {n for n, _ in col.citations.references(d)} | {n for n, _ in col.citations.cited_by(d)} for d in verified}
        if len(col.citations)
        else {}
    )
    lengths = {d: len(r.text) for d, r in col.corpus.get_many(verified).items()}
    searches = [s for s in state.get("searches", []) if str(s.get("search_id", "")).startswith("s")]
    channel_of = {s["search_id"]: s["channel"] for s in state.get("searches", []) if s.get("search_id")}
    first = {ch: next((s for s in searches if s.get("channel") == ch), None) for ch in ("lexical", "semantic")}
    intent_query = (first["lexical"] or {}).get("query", "")
    tools = rt.tools(state)

    def docids(search: dict[str, Any] | None) -> tuple[str, ...]:
        ranking = tools.ranking(search["search_id"]) if search else None
        return tuple(ranking.docids) if ranking else ()

    others = [
        docids(s)
        for s in searches
        if s is not first["lexical"] and s is not first["semantic"] and s.get("query") != intent_query
    ]
    alt = (
        {(k1, b): col.lucene.score_documents(intent_query, verified, k1=k1, b=b) for k1, b in ALT_BM25}
        if alt_bm25 and intent_query and verified
        else {}
    )
    return RankerInputs(
        channel_of, neighbours, lengths, RankContext(docids(first["lexical"]), docids(first["semantic"]), others, alt)
    )


def question_idf(tools: Any, col: Any, question: str, depth: int) -> dict[str, float] | None:
    """The question's content words weighted by their IDF in the collection, for the extractive
    answer: each word's documents counted by a BM25 search `depth` deep (a word in more documents
    than that gets the smallest weight), one traced store call. None when they cannot be counted
    (the answer then weighs every word alike)."""
    words = query_terms(question)
    if not words:
        return None
    try:
        with tools.store_call("document_frequencies", "lucene", arguments={"words": len(words), "depth": depth}):
            return question_weights(question, lambda w: len(col.lucene.search(w, k=depth)), col.corpus.count())
    except QuarryError:
        return None


@dataclass
class Answered:
    result: dict[str, Any]
    state_update: dict[str, Any] = field(default_factory=dict)  # model usage and fallbacks of the answer step


def build_result(state: JobState, *, use_model: bool = True) -> Answered:
    """The job's result from its state; `use_model=False` answers without calling a model
    (after the hard budget stop, or when the token/dollar budget is spent)."""
    rt = runtime()
    cfg = config_of(state)
    policy = rt.policy(state) if use_model else HeuristicPolicy()
    corpus = rt.collection(state).corpus
    plan = state.get("plan", {})
    candidates = load_pool(rt.jobs, state)
    pool, ranker = _final_order(rt, state, cfg, candidates)
    records = corpus.get_many([c["docid"] for c in pool[: cfg.run_depth]])
    # Hard constraints hold for every output, verified or not (after an early stop, candidates
    # from the last retrieval may not have been verified yet).
    ranked_all = [
        c for c in pool[: cfg.run_depth] if c["docid"] in records and not violated_constraint(plan, records[c["docid"]])
    ]
    ranked = [ranked_entry(c, records[c["docid"]], plan, corpus, policy) for c in ranked_all[: cfg.max_ranked]]
    run = _deep_run(rt, state, cfg, corpus, candidates, ranked_all)
    result: dict[str, Any] = {
        "job_id": state["job_id"],
        "collection": state["collection"],
        "intent": state["intent"],
        "mode": state.get("mode", "list"),
        "policy": state.get("policy", DEFAULT_POLICY),
        "ranked": ranked,
        "run": run,
        "checklist": plan.get("checklist", []),
        "stop_reason": state.get("stop_reason", ""),
        "rounds": rounds_run(state),
        "queries": list(
            dict.fromkeys(
                s.get("label") or s["query"] for s in state.get("searches", []) if s.get("label") or s["query"]
            )
        ),
        "cited": [r["docid"] for r in ranked],
        "ranker": ranker,
    }
    if removed := removed_report(candidates, pool[: cfg.run_depth], plan, corpus):
        result["removed"] = removed
    update: dict[str, Any] = {}
    if state.get("mode") == "answer":
        answered, update = _answer(rt, state, cfg, policy, corpus, ranked)
        result |= answered
    return Answered(result, update)


def _final_order(rt: Any, state: JobState, cfg: Any, candidates: dict[str, Any]) -> tuple[list[Any], str | None]:
    """The pool in its final order, and what ordered it (the learned verifier's name, or the rule)."""
    # The verifier was trained on the heuristic policy's scores; a model policy's librarians score
    # on their own scale, so its order stays the rule's.
    verifier, verifier_name = rt.verifier_for(state) if cfg.verifier and spec_of(state).verifier else (None, None)
    if verifier is None:
        return ranked_candidates(candidates), HEURISTIC_ORDER
    return verified_order(rt, state, candidates, verifier), verifier_name


def verified_order(rt: Any, state: JobState, candidates: dict[str, Any], verifier: Any) -> list[Any]:
    """The pool in the learned verifier's order: its inputs read from the job, then its ranking
    (what bench/bench_verifier.py times against the rule)."""
    inputs = ranker_inputs(rt, state, candidates, alt_bm25=uses_alt_bm25(verifier))
    return final_order(
        candidates,
        inputs.channel_of,
        verifier,
        neighbours=inputs.neighbours,
        lengths=inputs.lengths,
        context=inputs.context,
    )


def _deep_run(
    rt: Any, state: JobState, cfg: Any, corpus: Any, candidates: dict[str, Any], ranked_all: list[Any]
) -> list[str]:
    """The deep run (for evaluation): verified order first, then the rest of the pool by fusion,
    then what the job's full-depth rankings hold beyond the pool, fused the same way."""
    run = [c["docid"] for c in ranked_all]
    if len(run) < cfg.run_depth:
        searches = [
            (s["search_id"], s.get("weight", 1.0))
            for s in state.get("searches", [])
            if str(s.get("search_id", "")).startswith("s")
        ]
        beyond = fused_rankings(rt.tools(state), searches, set(candidates))
        run += passing(beyond, state.get("plan", {}), corpus, cfg.run_depth - len(run))
    return run


def _answer(
    rt: Any, state: JobState, cfg: Any, policy: Any, corpus: Any, ranked: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Answer mode: the policy's answer from the top documents, through the citation check, and
    the state update its model usage makes."""
    plan = state.get("plan", {})
    weights = question_idf(rt.tools(state), rt.collection(state), state["intent"], cfg.idf_depth)
    decision = policy.answer(
        AnswerRequest(
            state["intent"],
            plan,
            with_sections(
                state["intent"], answer_docs(ranked, corpus, cfg.models.answer_docs, cfg.models.answer_chars), corpus
            ),
            weights,
            cfg.answer_sentences,
        )
    )
    answer, checked = checked_answer(
        decision.draft,
        opened=set(state.get("opened", [])),
        corpus=corpus,
        similarity=rt.similarity(state),
        question=state["intent"],
    )
    answered = {
        "answer": answer,
        "references": checked.references,
        "citations": checked.stats(),
        "cited": checked.cited,
    }
    return answered, model_step_update(state, "answer", decision.usage, decision.fallback)


def result_ready(state: JobState, result: dict[str, Any]) -> dict[str, Any]:
    """Keep the result in the job store (the workflow's last activity finishes it from there) and
    put only a summary in state: the result is the second-largest part of a job."""
    runtime().jobs.save_draft(state["job_id"], result)
    return {"ready": True, "ranked": len(result.get("ranked", [])), "stop_reason": result.get("stop_reason", "")}


def answer(state: JobState) -> dict:
    done = build_result(state, use_model=not budget_spent(state))
    return {"result": result_ready(state, done.result), "node": "answer", **done.state_update}
