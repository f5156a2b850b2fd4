"""The `llm` policy: the round graph's decisions made by chat models, step by step falling back.

The navigator model (`--model`) writes the checklist and first queries, reflects on the scored
evidence and writes the cited answer; the librarians (`--judge-model`, `nodes.llm.librarian`) score
candidates. Every step starts from the heuristic decision and lets the model refine it, so the
user's words and hard constraints always hold (queries only add words; years and exclusions
parsed from the intent stay), and so a failed step has its fallback at hand: a call that fails
raises on early attempts (Temporal retries the activity) and falls back on the last one; output
that does not validate after one repair falls back at once. Decisions record why they fell back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from nodes.evidence.planning import additive_query, parse_years
from nodes.job.config import MODEL_ATTEMPTS, config_of
from nodes.job.heartbeat import final_attempt
from nodes.job.state import ChecklistItem, Plan
from nodes.llm.answer_prompts import ANSWER, ANSWER_SYSTEM, AnswerOut
from nodes.llm.calls import ModelError, Structured, structured
from nodes.llm.context import data_block, neutralise
from nodes.llm.librarian import judged_items, shown_document
from nodes.llm.librarian_prompts import JUDGE, LIBRARIAN_SYSTEM, JudgementsOut
from nodes.llm.navigator_prompts import NAVIGATOR_SYSTEM, PLAN, REFLECT, PlanOut, ReflectOut
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.seam import (
    SCORED_KINDS,
    AnswerDecision,
    AnswerDraft,
    AnswerRequest,
    JudgeDecision,
    Judgement,
    JudgeRequest,
    PlanDecision,
    PlanRequest,
    ReflectDecision,
    ReflectRequest,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")  # a decision dataclass (it has a `fallback` field)
MAX_MODEL_ITEMS = 6
MAX_MODEL_QUERIES = 3


class LLMPolicy(HeuristicPolicy):
    @classmethod
    def for_job(cls, runtime: Any, state: Mapping[str, Any]) -> LLMPolicy:
        return cls(runtime, state)

    def __init__(self, runtime: Any, state: Mapping[str, Any]) -> None:
        self.rt = runtime
        self.cfg = config_of(state)
        self.job_id = state.get("job_id")
        self._where = state

    @functools.cached_property
    def channels(self) -> list[str]:
        """The collection's retrieval channels (asked only when a prompt names them)."""
        return sorted(self.rt.channels(self._where)) if self._where.get("collection") else ["lexical"]

    # -- plumbing ---------------------------------------------------------------------------------

    def ask(self, spec: str | None, purpose: str, system: str, prompt: str, schema: type) -> Structured:
        """One validated structured answer from model `spec` (raises ModelError on a failed call)."""
        from langchain_core.messages import HumanMessage, SystemMessage

        model = self.rt.model(spec or "", self.cfg.models)
        return structured(
            model,
            [SystemMessage(content=system), HumanMessage(content=prompt)],
            schema,
            spec=spec or "",
            purpose=purpose,
            prices=self.cfg.prices,
            job_id=self.job_id,
            settings=self.cfg.models,
        )

    def _step(self, fallback: D, run: Callable[[], D]) -> D:
        """`run()`, or `fallback` (with the reason set) when the model call failed on the last attempt."""
        try:
            return run()
        except ModelError as exc:
            if exc.retryable and not final_attempt(MODEL_ATTEMPTS):
                raise
            return replace(fallback, fallback=str(exc))

    # -- decisions --------------------------------------------------------------------------------

    def plan(self, req: PlanRequest) -> PlanDecision:
        base = super().plan(req)

        def run() -> PlanDecision:
            out = self.ask(
                self.cfg.models.model,
                "navigator plan",
                NAVIGATOR_SYSTEM,
                PLAN.format(
                    intent=neutralise(req.intent),
                    steering=neutralise("\n".join(req.steering)) or "(none)",
                    channels=", ".join(self.channels),
                    years="yes" if req.years_known else "no",
                ),
                PlanOut,
            )
            if out.value is None:
                return replace(base, usage=out.usage, fallback=out.error)
            plan = merge_plan(base.plan, out.value, req.years_known)
            core = base.plan.get("core") or req.intent
            queries = list(dict.fromkeys([*base.queries, *(additive_query(core, q) for q in out.value.queries)]))
            return PlanDecision(plan, queries[: 1 + MAX_MODEL_QUERIES], out.usage)

        return self._step(base, run)

    def judge(self, req: JudgeRequest) -> JudgeDecision:  # type: ignore[override]
        """The first look is the rule's (it locates the evidence of the whole verified pool); the
        second look is a librarian: the judge model (`--judge-model`) reads the best candidates'
        text around their located evidence and gives, per document, a 0–5 score with a verbatim
        quote for every item and an overall p. A quote not found in the document is not evidence:
        that item keeps the first look's score and passage (`nodes.llm.librarian.fold_judgements`)."""
        if not req.located:
            return super().judge(req)
        spec = self.cfg.models.judge() or ""
        base = JudgeDecision([], judged_by=spec)
        items = [i for i in req.plan.get("checklist", []) if i["kind"] in SCORED_KINDS]

        def run() -> JudgeDecision:
            docs = "\n".join(shown_document(c, self.cfg.models.judge_chars) for c in req.located)
            prompt = JUDGE.format(
                intent=neutralise(req.intent),
                documents=docs,
                checklist="\n".join(f"{i['id']}: {neutralise(i['text'])}" for i in items),
            )
            out = self.ask(spec, req.label, LIBRARIAN_SYSTEM, prompt, JudgementsOut)
            if out.value is None:
                return replace(base, usage=out.usage, fallback=out.error)
            lines_of = {c.docid: c.lines for c in req.located}
            item_ids = {i["id"] for i in items}
            judgements = []
            for judged in out.value.judgements:
                if judged.docid not in lines_of:  # a docid the batch did not hold is ignored, never added
                    continue
                scored = judged_items(judged, list(lines_of.pop(judged.docid)), item_ids)
                judgements.append(Judgement(0.0, scored, docid=judged.docid, p=round(judged.p, 4)))
            return replace(base, judgements=judgements, usage=out.usage)

        return self._step(base, run)

    def reflect(self, req: ReflectRequest) -> ReflectDecision:
        base = super().reflect(req)

        def run() -> ReflectDecision:
            out = self.ask(
                self.cfg.models.model,
                "navigator reflect",
                NAVIGATOR_SYSTEM,
                REFLECT.format(
                    intent=neutralise(req.intent),
                    checklist=checklist_lines(req.plan),
                    searched=neutralise("\n".join(f"- {q}" for q in req.searched if q)) or "(none)",
                    evidence=neutralise(evidence_lines(req.plan, req.scored)),
                ),
                ReflectOut,
            )
            if out.value is None:
                return replace(base, usage=out.usage, fallback=out.error)
            core = req.plan.get("core") or req.intent
            queries = [
                q
                for q in dict.fromkeys(additive_query(core, q) for q in out.value.queries[:MAX_MODEL_QUERIES])
                if q != core
            ]
            plan = with_new_items(req.plan, out.value.new_items) if out.value.new_items else None
            return ReflectDecision(queries, plan, out.value.done and not queries, out.usage)

        return self._step(base, run)

    def answer(self, req: AnswerRequest) -> AnswerDecision:
        base = super().answer(req)
        if not req.docs:
            return base

        def run() -> AnswerDecision:
            docs = "\n".join(
                data_block(
                    "document",
                    "\n".join(f"lines {p.line_start}-{p.line_end}: {p.text}" for p in d.passages),
                    docid=d.docid,
                    title=d.title,
                )
                for d in req.docs
            )
            out = self.ask(
                self.cfg.models.model,
                "answer",
                ANSWER_SYSTEM,
                ANSWER.format(intent=neutralise(req.intent), documents=docs),
                AnswerOut,
            )
            if out.value is None:
                return replace(base, usage=out.usage, fallback=out.error)
            v = out.value
            return AnswerDecision(
                AnswerDraft(v.explanation, v.exact_answer, v.confidence, v.insufficient_evidence), out.usage
            )

        return self._step(base, run)


# -- pure helpers (tested directly) ----------------------------------------------------------------


def checklist_lines(plan: Plan) -> str:
    return "\n".join(f"{i['id']}: {i['kind']}: {neutralise(i['text'])}" for i in plan.get("checklist", []))


def evidence_lines(plan: Plan, scored) -> str:
    items = {i["id"]: i for i in plan.get("checklist", [])}
    rows = []
    for cand in list(scored)[:8]:
        parts = [
            f'{e["item_id"]}={e["score"]:.1f} "{" ".join(e.get("chunk", "").split())[:160]}"'
            for e in cand.get("evidence", [])
            if e["item_id"] in items
        ]
        rows.append(f"- docid={cand['docid']} S={cand.get('score', 0):.2f}: " + "; ".join(parts))
    return "\n".join(rows) or "(no document scored yet)"


def merge_plan(base: Plan, out: PlanOut, years_known: bool) -> Plan:
    """The heuristic plan with the model's checklist: the user's whole requirement stays item c0,
    the model's topic/method/application items follow; exclusions and a year range the model adds
    become constraints only where the user's words set none (and years only if the store has them)."""
    core = base.get("core", "")
    items: list[ChecklistItem] = [ChecklistItem(id="c0", kind="topic", text=core, weight=1.0)] if core else []
    seen = {core.lower()}
    exclusions = list(base.get("exclusions", []))
    year_min, year_max = base.get("year_min"), base.get("year_max")
    for item in out.checklist:
        text = " ".join(item.text.split())
        if item.kind in SCORED_KINDS and text.lower() not in seen and len(items) < MAX_MODEL_ITEMS + 1:
            seen.add(text.lower())
            items.append(
                ChecklistItem(
                    id=f"m{len(items)}", kind=item.kind, text=text, weight=1.0 if item.kind == "topic" else 0.8
                )
            )
        elif item.kind == "exclusion":
            phrase = text[4:] if text.lower().startswith("not ") else text
            if phrase.lower() not in {e.lower() for e in exclusions}:
                exclusions.append(phrase)
        elif item.kind == "metadata" and years_known and year_min is None and year_max is None:
            y_min, y_max, _ = parse_years(text)
            year_min, year_max = y_min, y_max
    if len(items) == 1 and base.get("checklist"):  # the model added nothing scoreable: keep the heuristic's
        items = [i for i in base["checklist"] if i["kind"] in SCORED_KINDS]
    constraints = [i for i in base.get("checklist", []) if i["kind"] == "metadata" and i["id"] != "y"]
    if year_min is not None or year_max is not None:
        constraints.append(
            ChecklistItem(id="y", kind="metadata", text=f"published {year_min or '…'}–{year_max or '…'}", weight=0.0)
        )
    constraints += [
        ChecklistItem(id=f"x{n}", kind="exclusion", text=f"not {p}", weight=0.0)
        for n, p in enumerate(exclusions, start=1)
    ]
    return {
        **base,
        "checklist": items + constraints,
        "exclusions": exclusions,
        "year_min": year_min,
        "year_max": year_max,
    }


def with_new_items(plan: Plan, new_items) -> Plan:
    """The plan with up to two scoreable items the navigator added on reflection."""
    checklist = list(plan.get("checklist", []))
    have = {i["text"].lower() for i in checklist}
    n = sum(1 for i in checklist if i["id"].startswith("r"))
    for item in new_items:
        text = " ".join(item.text.split())
        if item.kind in SCORED_KINDS and text.lower() not in have:
            n += 1
            have.add(text.lower())
            checklist.append(ChecklistItem(id=f"r{n}", kind=item.kind, text=text, weight=0.8))
    return {**plan, "checklist": checklist}


__all__ = ["LLMPolicy", "merge_plan", "with_new_items"]
