"""The ReAct job's result: the model's submission, checked, completed and given evidence.

- The shown order is the other policies' rule (RRF of evidence S and the retrieval order, whose
  head is the model's submission) unless the model said it ranked its submission deliberately
  (`submit(ranked=true)`); the result's `order` says which ("evidence" | "model"), and the
  model's own list stays in `submitted`.

- Submitted docids count only if a store returned them to this job (checked at submission);
  the deep run continues with the job's own cached rankings, fused by RRF.
- Hard constraints parsed from the intent (year range, exclusions) hold for every output.
- Each shown document gets the heuristic's evidence per requirement, read from the store.
- In answer mode the model's explanation passes the citation check against the documents the
  model opened. Without a submission (hard stop, endpoint failure, a model that never
  submitted) the heuristic answers from the same documents, and the result says so.
- A model that failed before any search still gets a result: one search with the user's words.
"""

from __future__ import annotations

from typing import Any

from nodes.evidence.planning import make_plan
from nodes.job.config import config_of
from nodes.job.results import answer_docs, checked_answer, fused_rankings, passing, ranked_entry, removed_report
from nodes.job.runtime import runtime
from nodes.job.state import Candidate, JobState, Plan, add_fallback, bump, ranked_candidates
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.registry import REACT
from nodes.policy.seam import AnswerDraft, AnswerRequest, JudgeInput, JudgeRequest, scored_items
from nodes.rounds.answer import Answered, result_ready
from nodes.rounds.verification import item_lexical_scores, semantic_inputs
from nodes.tools.results import SearchPage
from stores.records import quotable_chunks


def build_react_result(state: JobState, *, use_model: bool = True) -> Answered:
    """The `react` policy's result (`nodes.policy.registry`: its result builder). It calls no model
    itself — the answer is the model's submission or the heuristic's — so `use_model` changes nothing."""
    rt = runtime()
    cfg = config_of(state)
    col = rt.collection(state)
    corpus = col.corpus
    jt = rt.tools(state)
    heuristic = HeuristicPolicy()
    plan = make_plan(
        state["intent"], [s["text"] for s in state.get("steering", [])], years=corpus.year_span() is not None
    )
    sub = state.get("submitted") or {}
    update: dict[str, Any] = {}
    fallbacks = list(state.get("fallbacks", []))
    search_ids = rt.jobs.ranking_ids(state["job_id"])
    if not search_ids:
        search_ids, fallbacks = _search_intent(state, jt, plan, fallbacks, update)
    submitted = [d for d in sub.get("docids", [])]
    order = submitted + fused_rankings(jt, [(s, 1.0) for s in sorted(search_ids)], set(submitted))
    run = passing(order, plan, corpus, cfg.run_depth)
    top = run[: cfg.max_ranked]
    with jt.store_call("get_documents", "corpus", arguments={"documents": len(top)}):
        records = corpus.get_many(top)
    cands = _judged(rt, state, jt, col, plan, heuristic, top, records)
    ordered_by = "model" if sub.get("ranked") and submitted else "evidence"
    if ordered_by == "evidence":
        cands = by_evidence(cands)
    ranked = [ranked_entry(c, records[c["docid"]], plan, corpus, heuristic) for c in cands]
    result: dict[str, Any] = {
        "job_id": state["job_id"],
        "collection": state["collection"],
        "intent": state["intent"],
        "mode": state.get("mode", "list"),
        "policy": state.get("policy", REACT.name),
        "ranked": ranked,
        "run": run,
        "checklist": plan.get("checklist", []),
        "stop_reason": _stop_reason(state, cfg),
        "rounds": int(state.get("steps", 0)),
        "queries": [r for r in _queries(rt, state, search_ids)],
        "submitted": {"docids": submitted, "dropped": sub.get("dropped", [])} if sub else None,
        "order": ordered_by,
        "cited": [r["docid"] for r in ranked],
    }
    if removed := removed_report({}, [Candidate(docid=d) for d in order[: cfg.run_depth]], plan, corpus):
        result["removed"] = removed
    if state.get("mode") == "answer":
        answered, fallbacks = _answer(rt, state, cfg, corpus, plan, heuristic, ranked, top, fallbacks)
        result |= answered
    if fallbacks != list(state.get("fallbacks", [])):
        update["fallbacks"] = fallbacks
    return Answered(result, update)


def _search_intent(
    state: JobState, jt: Any, plan: Plan, fallbacks: list[Any], update: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """A model that ran no search: the user's words searched once, said as a fallback."""
    search_ids: list[str] = []
    page = jt.search(
        "fallback: the model ran no search, so the user's words are searched", plan.get("core") or state["intent"]
    )
    if isinstance(page, SearchPage):
        search_ids = [page.search_id]
    fallbacks = add_fallback({"fallbacks": fallbacks}, "react search", "the model made no search; searched the intent")
    update["stats"] = bump(state.get("stats", {}), tool_calls=jt.calls, searches=1)
    return search_ids, fallbacks


def _judged(
    rt: Any,
    state: JobState,
    jt: Any,
    col: Any,
    plan: Plan,
    heuristic: HeuristicPolicy,
    top: list[str],
    records: dict[str, Any],
) -> list[Candidate]:
    """The shown documents as candidates with the heuristic's evidence per requirement."""
    corpus = col.corpus
    items = scored_items(plan)
    item_vecs, chunk_vecs = semantic_inputs(jt, rt.dense(state), items, top)
    lexical = item_lexical_scores(col.lucene, items, top, jt)
    n = max(len(top), 1)
    batch = [
        JudgeInput(
            records[d],
            quotable_chunks(records[d], corpus.chunks(d)),
            round(1.0 - r / n, 6),
            chunk_vecs.get(d),
            {i: s[d] for i, s in lexical.items()},
        )
        for r, d in enumerate(top)
    ]
    # The retrieval order is the model's submission, then the job's fused rankings: its score is
    # that order's reciprocal rank (1/(60 + rank)), the scale the round graph's fusion uses.
    return [
        Candidate(
            docid=inp.rec.docid,
            p=inp.p,
            score=j.score,
            evidence=j.evidence,
            excluded=j.excluded,
            verified_version=1,
            fused=round(1.0 / (60 + r), 6),
            rank_score=round(1.0 / (60 + r), 6),
        )
        for r, (inp, j) in enumerate(
            zip(batch, heuristic.judge(JudgeRequest(plan, batch, item_vecs)).judgements, strict=True), start=1
        )
    ]


def _answer(
    rt: Any,
    state: JobState,
    cfg: Any,
    corpus: Any,
    plan: Plan,
    heuristic: HeuristicPolicy,
    ranked: list[dict[str, Any]],
    top: list[str],
    fallbacks: list[Any],
) -> tuple[dict[str, Any], list[Any]]:
    """Answer mode: the model's submitted answer, else the heuristic's, through the citation check."""
    sub = state.get("submitted") or {}
    opened = set(state.get("opened", []))
    if sub.get("explanation"):
        draft = AnswerDraft(
            sub["explanation"],
            sub.get("exact_answer", ""),
            int(sub.get("confidence", 0)),
            bool(sub.get("insufficient_evidence", False)),
        )
    else:
        # The heuristic answers from the documents Quarry itself just read for their evidence.
        draft = heuristic.answer(
            AnswerRequest(
                state["intent"], plan, answer_docs(ranked, corpus, cfg.models.answer_docs, cfg.models.answer_chars)
            )
        ).draft
        opened |= set(top)
        fallbacks = add_fallback({"fallbacks": fallbacks}, "answer", "the model submitted no answer")
    answer, checked = checked_answer(draft, opened=opened, corpus=corpus, similarity=rt.similarity(state))
    answered = {
        "answer": answer,
        "references": checked.references,
        "citations": checked.stats(),
        "cited": checked.cited,
    }
    return answered, fallbacks


def by_evidence(cands: list[Candidate]) -> list[Candidate]:
    """The other policies' final-order rule without a learned verifier (`ranked_candidates`: RRF of
    the evidence score S and the retrieval order); a candidate the judge excluded keeps its place
    after them, as in the model's order, so no submitted document disappears."""
    kept = ranked_candidates({c["docid"]: c for c in cands})
    shown = {c["docid"] for c in kept}
    return kept + [c for c in cands if c["docid"] not in shown]


def _stop_reason(state: JobState, cfg: Any) -> str:
    """Why the conversation ended ('' when the workflow knows better: a stop or the clock)."""
    if state.get("stop_reason"):
        return state["stop_reason"]
    if state.get("submitted") is not None:
        return "submitted"
    if state.get("turn", {}).get("failed"):
        return "model_failed"
    if int(state.get("steps", 0)) >= cfg.models.react_max_steps:
        return "max_steps"
    if int(state.get("reminders", 0)) >= cfg.models.react_reminders and not state.get("turn", {}).get("tool_calls"):
        return "no_tool_call"
    return ""


def _queries(rt: Any, state: JobState, search_ids: list[str]) -> list[str]:
    out = []
    for sid in sorted(search_ids, key=lambda s: int(s[1:]) if s[1:].isdigit() else 0):
        row = rt.jobs.load_ranking(state["job_id"], sid)
        if row:
            out.append(row[0])
    return out


def finish(state: JobState) -> dict[str, Any]:
    done = build_react_result(state)
    return {"result": result_ready(state, done.result), "node": "answer", **done.state_update}
