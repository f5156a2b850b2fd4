"""LLM librarians: the `llm` policy's candidates scored per checklist item by a judge model.

After heuristic verification has read the pool and located evidence, the top `judge_top`
candidates are split into batches; each batch is one `librarian` activity (a LangGraph `Send`
fan-out, at most `judge_concurrency` at once) that shows the judge model the documents' text as
data and takes back, per document, a 0–5 score with a verbatim quote for every item and an
overall relevance p. A quote that cannot be found in the document is not evidence: that item
keeps its heuristic score and passage. `fold_judgements` (pure, runs in the workflow) then
recombines S = (mean c_i + p) / 6 for every judged candidate.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from nodes.config import MODEL_ATTEMPTS, JobConfig, config_of
from nodes.context import data_block, neutralise
from nodes.heartbeat import final_attempt
from nodes.librarian_prompts import JUDGE, LIBRARIAN_SYSTEM, JudgementsOut
from nodes.llm_calls import ModelError, structured
from nodes.policy import SCORED_KINDS
from nodes.pool import load_pool, store_pool
from nodes.runtime import runtime
from nodes.scoring import SENTENCE_CAP, combine
from stores.spans import Span, find_loose
from nodes.state import JobState, add_fallback, ranked_candidates
from nodes.usage import Usage

MIN_QUOTE_CHARS = 8


class LibrarianCandidate(BaseModel):
    docid: str
    p: float
    spans: list[tuple[str, int, int]]  # (item id, first line, last line) of the located evidence


class LibrarianTask(BaseModel):
    """One batch for one librarian activity (it crosses the Send as JSON; no document text)."""

    job_id: str
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
    top = top[:cfg.models.judge_top]
    size = max(1, cfg.models.judge_batch_size)
    tasks = []
    for no, start in enumerate(range(0, len(top), size)):
        cands = [LibrarianCandidate(docid=c["docid"], p=c.get("p", 0.0),
                                    spans=[(e["item_id"], e["line_start"], e["line_end"]) for e in c.get("evidence", [])])
                 for c in top[start:start + size]]
        tasks.append(LibrarianTask(job_id=state["job_id"], collection=state["collection"],
                                   collection_version=state.get("collection_version"), intent=state["intent"],
                                   config=state.get("config", {}), plan=dict(state.get("plan", {})),
                                   round=int(state.get("round", 0)), batch=no,
                                   candidates=cands).model_dump())
    return tasks


def _shown_lines(lines: list[str], spans: list[tuple[str, int, int]], limit: int) -> list[int]:
    """Line numbers shown to the judge: the document's head, then its evidence passages, within `limit` chars."""
    wanted = list(range(1, len(lines) + 1))
    evidence = [n for _, a, b in spans for n in range(a, b + 1)]
    order = list(dict.fromkeys([*wanted[:6], *evidence, *wanted[6:]]))
    shown, used = [], 0
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


def librarian(task: dict[str, Any]) -> dict[str, Any]:
    """Judge one batch with the judge model (activity); on failure, the heuristic judgement stands."""
    from langchain_core.messages import HumanMessage, SystemMessage

    t = LibrarianTask.model_validate(task)
    cfg = JobConfig.from_dict(t.config)
    spec = cfg.models.judge() or ""
    rt = runtime()
    corpus = rt.collection({"collection": t.collection, "collection_version": t.collection_version}).corpus
    items = [i for i in t.plan.get("checklist", []) if i["kind"] in SCORED_KINDS]
    docs, lines_of = [], {}
    for cand in t.candidates:
        lines = corpus.lines(cand.docid) or []
        lines_of[cand.docid] = lines
        shown = _shown_lines(lines, cand.spans, cfg.models.judge_chars)
        docs.append(data_block("document", "\n".join(f"{n}  {lines[n - 1]}" for n in shown), docid=cand.docid))
    entry: dict[str, Any] = {"round": t.round, "batch": t.batch, "model": spec, "usage": {}, "fallback": "", "docs": []}
    prompt = JUDGE.format(intent=neutralise(t.intent), documents="\n".join(docs),
                          checklist="\n".join(f"{i['id']}: {neutralise(i['text'])}" for i in items))
    try:
        out = structured(rt.model(spec, cfg.models), [SystemMessage(content=LIBRARIAN_SYSTEM), HumanMessage(content=prompt)],
                         JudgementsOut, spec=spec, purpose=f"librarian batch {t.batch}", prices=cfg.prices, job_id=t.job_id)
    except ModelError as exc:
        if not final_attempt(MODEL_ATTEMPTS):
            raise
        return {"judgements": [entry | {"fallback": str(exc)}]}
    entry["usage"] = out.usage.to_dict()
    if out.value is None:
        return {"judgements": [entry | {"fallback": out.error}]}
    wanted = {c.docid for c in t.candidates}
    item_ids = {i["id"] for i in items}
    for judged in out.value.judgements:
        if judged.docid not in wanted:  # a docid the batch did not hold is ignored, never added
            continue
        wanted.discard(judged.docid)
        scored = {}
        for item in judged.items:
            if item.item_id not in item_ids:
                continue
            lines = lines_of[judged.docid]
            where = find_quote(lines, item.quote) if item.quote else None
            if item.score > 0 and where is None:
                continue  # a score without a quote found in the document is not evidence
            # The evidence quotes the document's own text at that place, not the model's copy of it.
            text = "\n".join(lines)[where.char_start:where.char_end][:SENTENCE_CAP] if where else ""
            scored[item.item_id] = {"score": float(item.score), "chunk": text,
                                    "line_start": where.line_start if where else 0, "line_end": where.line_end if where else 0}
        entry["docs"].append({"docid": judged.docid, "p": round(judged.p, 4), "items": scored})
    return {"judgements": [entry]}


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
            evidence = []
            for ev in cand.get("evidence", []):
                got = doc["items"].get(ev["item_id"])
                if got is not None:
                    ev = dict(ev, score=got["score"], judged_by=entry.get("model", ""))
                    if got["chunk"]:
                        ev |= {"chunk": got["chunk"], "line_start": got["line_start"], "line_end": got["line_end"],
                               "also": []}
                evidence.append(ev)
            weights = {i["id"]: i["weight"] for i in items}
            score = combine(((e["score"], weights.get(e["item_id"], 0.0)) for e in evidence), float(doc["p"]))
            cand.update(evidence=evidence, p=float(doc["p"]), judged=entry.get("model", ""),
                        score=0.0 if cand.get("excluded") else score)
    return {**store_pool(jobs, state, candidates), "judgements": [{"reset": True}], "librarian_tasks": [],
            "usage": usage.to_dict(), "fallbacks": fallbacks, "node": "librarians"}
