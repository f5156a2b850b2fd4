"""LLM librarians: the `llm` policy's second look, fanned out by the graph in batches.

After verification has read the pool and the rule has located evidence, the top `judge_top`
candidates are split into batches (planned by verification for a policy whose spec has
`second_look`, `nodes.policy.registry`); each batch is one `librarian` activity (a LangGraph `Send`
fan-out, at most `judge_concurrency` at once) that asks the job's policy to judge it
(`Policy.judge` with `JudgeRequest.located`: for `llm`, the judge model is shown the documents'
text as data and gives back, per document, a 0–5 score with a verbatim quote for every item and
an overall relevance p — `nodes.llm.policy`). A quote that cannot be found in the document is not
evidence: that item keeps its heuristic score and passage. `fold_judgements` (pure, runs in the
workflow) then recombines S = (mean c_i + p) / 6 for every judged candidate.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel

from nodes.evidence.scoring import combine
from nodes.evidence.sentences import SENTENCE_CAP
from nodes.job.config import config_of
from nodes.job.pool import load_pool, store_pool
from nodes.job.runtime import runtime
from nodes.job.state import Evidence, JobState, Plan, add_fallback, ranked_candidates
from nodes.job.usage import Usage
from nodes.llm.context import data_block
from nodes.policy.registry import LLM
from nodes.policy.seam import SCORED_KINDS, JudgeRequest, Located
from stores.spans import Span, find_loose

MIN_QUOTE_CHARS = 8


class LibrarianCandidate(BaseModel):
    docid: str
    p: float
    spans: list[tuple[str, int, int]]  # (item id, first line, last line) of the located evidence


class LibrarianTask(BaseModel):
    """One batch for one librarian activity (it crosses the Send as JSON; no document text)."""

    job_id: str
    policy: str = LLM.name  # whose judge takes the look (tasks written before the field were `llm`'s)
    collection: str
    collection_version: str | None = None
    intent: str
    config: dict[str, Any]
    plan: dict[str, Any]
    round: int = 0
    batch: int
    candidates: list[LibrarianCandidate]


def librarian_tasks(state: JobState, candidates: dict[str, Any]) -> list[dict[str, Any]]:
    """The batches to judge this round: the best verified candidates."""
    cfg = config_of(state)
    top = [c for c in ranked_candidates(candidates) if c.get("verified_version") and not c.get("excluded")]
    top = top[: cfg.models.judge_top]
    size = max(1, cfg.models.judge_batch_size)
    tasks = []
    for no, start in enumerate(range(0, len(top), size)):
        cands = [
            LibrarianCandidate(
                docid=c["docid"],
                p=c.get("p", 0.0),
                spans=[(e["item_id"], e["line_start"], e["line_end"]) for e in c.get("evidence", [])],
            )
            for c in top[start : start + size]
        ]
        tasks.append(
            LibrarianTask(
                job_id=state["job_id"],
                policy=state.get("policy", LLM.name),
                collection=state["collection"],
                collection_version=state.get("collection_version"),
                intent=state["intent"],
                config=state.get("config", {}),
                plan=dict(state.get("plan", {})),
                round=int(state.get("round", 0)),
                batch=no,
                candidates=cands,
            ).model_dump()
        )
    return tasks


def _shown_lines(lines: list[str], spans: list[tuple[str, int, int]], limit: int) -> list[int]:
    """Line numbers shown to the judge: the document's head, then its evidence passages, within `limit` chars."""
    wanted = list(range(1, len(lines) + 1))
    evidence = [n for _, a, b in spans for n in range(a, b + 1)]
    order = list(dict.fromkeys([*wanted[:6], *evidence, *wanted[6:]]))
    shown: list[int] = []
    used = 0
    for n in order:
        if 1 <= n <= len(lines) and (used + len(lines[n - 1]) <= limit or not shown):
            shown.append(n)
            used += len(lines[n - 1])
    return sorted(shown)


def find_quote(lines: list[str], text: str) -> Span | None:
    """Where a model's quote is in the document (case, spacing and surrounding quotation marks
    ignored), or None when it is too short to mean anything or is not there."""
    needle = text.strip().strip(" .\"'")
    if len(" ".join(needle.split())) < MIN_QUOTE_CHARS:
        return None
    return find_loose(lines, needle)


def locate_quote(lines: list[str], text: str) -> tuple[int, int] | None:
    """The (first, last) line of `lines` holding `text` verbatim (case and spacing ignored)."""
    where = find_quote(lines, text)
    return (where.line_start, where.line_end) if where else None


def shown_document(cand: Located, limit: int) -> str:
    """A candidate as the judge model sees it: numbered lines (its head, then its evidence) as data."""
    lines = list(cand.lines)
    shown = _shown_lines(lines, list(cand.spans), limit)
    return data_block("document", "\n".join(f"{n}  {lines[n - 1]}" for n in shown), docid=cand.docid)


def judged_items(judged: Any, lines: list[str], item_ids: set[str]) -> list[Evidence]:
    """A judge model's scores for one document as evidence: per known item, its score with the
    document's own text where the quote is (chunk "" when it quoted nothing); a score above 0
    whose quote is not in the document is dropped (it is not evidence)."""
    scored: dict[str, Evidence] = {}
    for item in judged.items:
        if item.item_id not in item_ids:
            continue
        where = find_quote(lines, item.quote) if item.quote else None
        if item.score > 0 and where is None:
            continue  # a score without a quote found in the document is not evidence
        # The evidence quotes the document's own text at that place, not the model's copy of it.
        text = "\n".join(lines)[where.char_start : where.char_end][:SENTENCE_CAP] if where else ""
        scored[item.item_id] = Evidence(
            item_id=item.item_id,
            score=float(item.score),
            chunk=text,
            line_start=where.line_start if where else 0,
            line_end=where.line_end if where else 0,
        )
    return list(scored.values())


def librarian(task: dict[str, Any]) -> dict[str, Any]:
    """Judge one batch with the job's policy (activity); on failure, the heuristic judgement stands."""
    t = LibrarianTask.model_validate(task)
    where = {
        "job_id": t.job_id,
        "policy": t.policy,
        "collection": t.collection,
        "collection_version": t.collection_version,
        "config": t.config,
    }
    rt = runtime()
    corpus = rt.collection(where).corpus
    located = [Located(c.docid, c.p, c.spans, corpus.lines(c.docid) or []) for c in t.candidates]
    decision = rt.policy(where).judge(
        JudgeRequest(cast(Plan, t.plan), located=located, intent=t.intent, label=f"librarian batch {t.batch}")
    )
    docs = [
        {
            "docid": j.docid,
            "p": j.p,
            "items": {
                e["item_id"]: {
                    "score": e["score"],
                    "chunk": e["chunk"],
                    "line_start": e["line_start"],
                    "line_end": e["line_end"],
                }
                for e in j.evidence
            },
        }
        for j in decision.judgements
    ]
    return {
        "judgements": [
            {
                "round": t.round,
                "batch": t.batch,
                "model": decision.judged_by,
                "usage": decision.usage.to_dict(),
                "fallback": decision.fallback,
                "docs": docs,
            }
        ]
    }


def fold_judgements(state: JobState) -> dict[str, Any]:
    """Fold the librarians' judgements into the candidate pool (an activity: the pool is in the store)."""
    jobs = runtime().jobs
    plan = state.get("plan", {})
    items = [i for i in plan.get("checklist", []) if i["kind"] in SCORED_KINDS]
    candidates = load_pool(jobs, state)
    usage = Usage.from_dict(state.get("usage"))
    fallbacks = list(state.get("fallbacks", []))
    for entry in sorted(state.get("judgements", []), key=lambda e: e.get("batch", 0)):
        usage = usage.add(Usage.from_dict(entry.get("usage")))
        if entry.get("fallback"):
            step = f"librarian round {entry.get('round', 0)} batch {entry.get('batch')}"
            fallbacks = add_fallback({"fallbacks": fallbacks}, step, entry["fallback"])
        for doc in entry.get("docs", []):
            cand = candidates.get(doc["docid"])
            if cand is None:
                continue
            evidence: list[Evidence] = []
            for ev in cand.get("evidence", []):
                got = doc["items"].get(ev["item_id"])
                if got is not None:
                    ev = {**ev, "score": got["score"], "judged_by": entry.get("model", "")}
                    if got["chunk"]:
                        ev |= {
                            "chunk": got["chunk"],
                            "line_start": got["line_start"],
                            "line_end": got["line_end"],
                            "also": [],
                        }
                evidence.append(ev)
            weights = {i["id"]: i["weight"] for i in items}
            score = combine(((e["score"], weights.get(e["item_id"], 0.0)) for e in evidence), float(doc["p"]))
            cand.update(
                {
                    "evidence": evidence,
                    "p": float(doc["p"]),
                    "judged": entry.get("model", ""),
                    "score": 0.0 if cand.get("excluded") else score,
                }
            )
    # Kept with the collection (stores.judgements) for self-tuning to learn from; a batch answered
    # by the heuristic after a model failure is not a model's judgement.
    runtime().record_judgements(
        state,
        [
            (doc["docid"], float(doc["p"]), str(entry.get("model", "")))
            for entry in state.get("judgements", [])
            if entry.get("model") and not entry.get("fallback")
            for doc in entry.get("docs", [])
            if doc["docid"] in candidates
        ],
    )
    return {
        **store_pool(jobs, state, candidates),
        "judgements": [{"reset": True}],
        "librarian_tasks": [],
        "usage": usage.to_dict(),
        "fallbacks": fallbacks,
        "node": "librarians",
    }
