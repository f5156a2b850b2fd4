"""The policy seam — plan, judge, reflect, answer — and the default heuristic policy.

Nodes own the control flow and the tool calls; a policy owns the decisions. Each decision takes
one typed request and returns one typed decision (with the model usage it cost and, when a model
step fell back, why), and judging takes a batch of candidates at once, so a model-backed policy
can score many documents per call. Judging has two looks: verification asks every policy to judge
the verified pool (`JudgeRequest.batch`: records, chunks, vectors — where the evidence is); a
policy whose spec has `second_look` (`nodes.policies`) is asked again, batch by batch in activities
the graph fans out, about the best of them (`JudgeRequest.located`: their lines and located
evidence) — the `llm` policy's librarians. The heuristic policy is deterministic and offline; the
`llm` policy (`nodes.llm_policy`) answers the same requests with chat models and falls back to
this one per step. The `react` policy runs its own graph and uses this policy only to attach
evidence. Which class a job's policy is comes from its spec in `nodes.policies`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodes.answer_extractive import extractive_answer
from nodes.config import JobConfig
from nodes.planning import first_queries, make_plan
from nodes.scoring import (
    combine,
    coverage,
    locate_evidence,
    locate_evidence_dense,
    quote_cap,
    relevance_model_query,
    unshown_words,
    violated_constraint,
)
from nodes.state import Candidate, ChecklistItem, Evidence, Plan
from nodes.usage import Usage
from stores.records import Chunk, DocRecord

FEEDBACK_DOCS = 10
FEEDBACK_TERMS = 10
# Chunks kept per checklist item: the best one is quoted and scored, the next as line ranges.
EVIDENCE_CHUNKS = 2
SCORED_KINDS = ("topic", "method", "application")


# -- requests and decisions ---------------------------------------------------------------------


@dataclass(frozen=True)
class PlanRequest:
    intent: str
    steering: tuple[str, ...] = ()
    years_known: bool = True  # without publication years in the store a year range is no constraint


@dataclass
class PlanDecision:
    plan: Plan
    queries: list[str]
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""


@dataclass(frozen=True)
class JudgeInput:
    """One candidate to judge: its record and chunks, retrieval strength p (0–1), its chunk
    vectors when the collection has a dense index, and each item's relative BM25 match."""

    rec: DocRecord
    chunks: Sequence[Chunk]
    p: float
    chunk_vecs: list | None = None
    item_lexical: dict[str, float] | None = None


@dataclass(frozen=True)
class Located:
    """A verified candidate looked at again: its lines, its retrieval strength p, and the
    (item id, first line, last line) of the evidence the first look located."""

    docid: str
    p: float
    spans: Sequence[tuple[str, int, int]]
    lines: Sequence[str]


@dataclass(frozen=True)
class JudgeRequest:
    """Judge a batch: the verified pool's candidates (`batch`, a first look), or the best of them
    again with the evidence already located (`located`, a second look — see the module docstring).
    `item_vecs` are the checklist items' query vectors when the collection has a dense index."""

    plan: Plan
    batch: Sequence[JudgeInput] = ()
    item_vecs: Mapping[str, Any] | None = None
    located: Sequence[Located] = ()
    intent: str = ""
    label: str = ""  # names a second-look call in traces ("librarian batch 0")


@dataclass
class Judgement:
    """S, evidence per checklist item and any violated constraint. A second look judges only what
    it can vouch for: `docid`, a new `p`, and evidence for the items it scored (with `chunk` ""
    where the quote was not found and the first look's passage stands)."""

    score: float
    evidence: list[Evidence]
    excluded: str = ""
    docid: str = ""
    p: float | None = None


@dataclass
class JudgeDecision:
    judgements: list[Judgement]
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""
    judged_by: str = ""  # the model that judged ("" for the rule)


@dataclass(frozen=True)
class ReflectRequest:
    plan: Plan
    intent: str
    best: Sequence[DocRecord]
    pool: Sequence[DocRecord]
    weakest: ChecklistItem | None
    scored: Sequence[Candidate] = ()  # the current top, with evidence (what a model reflects on)
    searched: Sequence[str] = ()      # the queries run so far


@dataclass
class ReflectDecision:
    queries: list[str]
    plan: Plan | None = None  # a refined plan (new checklist items), or None to keep it
    done: bool = False        # the navigator judged the current top complete: no further round
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""


@dataclass(frozen=True)
class Passage:
    line_start: int
    line_end: int
    text: str


@dataclass(frozen=True)
class AnswerDoc:
    docid: str
    title: str
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class AnswerRequest:
    intent: str
    plan: Plan
    docs: Sequence[AnswerDoc]
    # IDF of the question's content words in the collection (prefix stem -> weight), when the
    # answer node could count them; the extractive answer weighs shared words by it.
    term_weights: Mapping[str, float] | None = None
    max_sentences: int = JobConfig.answer_sentences  # sentences an extractive answer quotes at most


@dataclass
class AnswerDraft:
    explanation: str
    exact_answer: str = ""
    confidence: int | None = 0      # None: not estimated (an extractive answer claims none)
    insufficient_evidence: bool = False
    method: str = ""                # "extractive" for an answer of quoted sentences (no model)


@dataclass
class AnswerDecision:
    draft: AnswerDraft
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""


class Policy(Protocol):
    """A policy's decisions (its name, graph and the rest are its spec in `nodes.policies`)."""

    def plan(self, req: PlanRequest) -> PlanDecision:
        """Checklist, constraints and the first queries for an intent."""

    def judge(self, req: JudgeRequest) -> JudgeDecision:
        """S, evidence per checklist item and any violated constraint, for each candidate."""

    def reflect(self, req: ReflectRequest) -> ReflectDecision:
        """Next round's queries (each keeps the user's words and only adds terms)."""

    def answer(self, req: AnswerRequest) -> AnswerDecision:
        """An answer to the intent from the read documents, citing them as [docid]."""

    def reason(self, plan: Plan, cand: Candidate) -> str:
        """A one-line reason for a ranked document."""


# -- the heuristic policy -------------------------------------------------------------------------


class HeuristicPolicy:
    @classmethod
    def for_job(cls, runtime: Any, state: Mapping[str, Any]) -> HeuristicPolicy:
        """The policy deciding for a job (`nodes.policies` names the class; the runtime calls this)."""
        return cls()

    def plan(self, req: PlanRequest) -> PlanDecision:
        plan = make_plan(req.intent, list(req.steering), years=req.years_known)
        return PlanDecision(plan, first_queries(plan, req.intent))

    def judge(self, req: JudgeRequest | Plan, batch: Sequence[JudgeInput] | None = None,
              item_vecs: Mapping[str, Any] | None = None) -> Any:
        """The rule's judgement of each candidate of `req.batch` (a second look adds nothing to
        the rule's first one: its decision is empty). Called the old way, `judge(plan, batch,
        item_vecs)`, it returns the list of judgements (kept for callers written before requests)."""
        if not isinstance(req, JudgeRequest):
            return self.rule_judgements(req, batch or (), item_vecs)
        return JudgeDecision(self.rule_judgements(req.plan, req.batch, req.item_vecs) if req.batch else [])

    def rule_judgements(self, plan: Plan, batch: Sequence[JudgeInput],
                        item_vecs: Mapping[str, Any] | None = None) -> list[Judgement]:
        return [self._judge_one(plan, c, item_vecs) for c in batch]

    def _judge_one(self, plan: Plan, cand: JudgeInput, item_vecs: Mapping[str, Any] | None) -> Judgement:
        items = [i for i in plan.get("checklist", []) if i["kind"] in SCORED_KINDS]
        evidence = []
        matched: list[float] = []
        for item in items:
            lexical = locate_evidence(item, cand.chunks, cand.rec.title)
            if cand.item_lexical is not None and item["id"] in cand.item_lexical:
                # BM25 weighs rare words and repeats where plain word coverage counts "method"
                # like "Gaussian" (CACM nDCG@20 0.594 → 0.610; scifact-train 0.725 → 0.733).
                lexical["score"] = round(5.0 * cand.item_lexical[item["id"]], 3)
            dense = (locate_evidence_dense(item, item_vecs[item["id"]], cand.chunk_vecs, cand.chunks, top_m=EVIDENCE_CHUNKS,
                                           title=cand.rec.title)
                     if item_vecs and cand.chunk_vecs and item["id"] in item_vecs else [])
            # With embeddings, the semantic match decides where the evidence is and half the score.
            if dense:
                best = dense[0]
                best["score"] = round((best["score"] + lexical["score"]) / 2, 3)
                others = dense[1:]
                # The quote is the passage the embedding chose unless the lexical sentence shows more
                # of the item's words (those the title does not): in less(1) the closest passage to
                # "default tab stop" was the synopsis, while "Sets tab stops." was found by its words.
                # The score (and so the ranking) is the same whichever is quoted.
                seek = unshown_words(item, cand.rec.title)
                if lexical["chunk"] and coverage(seek, lexical["chunk"]) > coverage(seek, best["chunk"]):
                    others = [best.copy(), *others]
                    best.update({"chunk": lexical["chunk"], "line_start": lexical["line_start"], "line_end": lexical["line_end"]})
                # The runners-up are kept as line ranges (their text stays in the store, not in state).
                best["also"] = [{"line_start": e["line_start"], "line_end": e["line_end"], "score": e["score"]}
                                for e in others]
                evidence.append(best)
            else:
                evidence.append(lexical)
            # The document is ranked by how well it matched the item; the score shown beside the
            # quote is capped by the item's words in that quote (issue 20 #3), because a 5/5 must
            # be visible in what is quoted. Ranking on the capped scores moved Cranfield nDCG@10
            # from 0.4061 to 0.4006, below plain hybrid fusion, so the cap stays a statement about
            # the evidence, not about the document.
            matched.append(evidence[-1]["score"])
            evidence[-1]["score"] = min(evidence[-1]["score"], quote_cap(item, evidence[-1]["chunk"], cand.rec.title))
        excluded = violated_constraint(plan, cand.rec)
        score = combine(zip(matched, (i["weight"] for i in items), strict=True), cand.p)
        return Judgement(0.0 if excluded else score, evidence, excluded)

    def reflect(self, req: ReflectRequest) -> ReflectDecision:
        core = req.plan.get("core") or req.intent
        texts = [f"{r.title} {r.text} {' '.join(r.keywords)}" for r in req.best[:FEEDBACK_DOCS]]
        queries = [relevance_model_query(core, texts, [1.0] * len(texts), n_terms=FEEDBACK_TERMS)]
        if req.weakest is not None and req.weakest["text"] != core:
            # The user's words with the weakest requirement's words said twice: Anserini weights a
            # repeated word by its count, so the search leans toward what the top lacks.
            queries.append(f"{core} {req.weakest['text']}")
        return ReflectDecision([q for q in dict.fromkeys(queries) if q != core])

    def answer(self, req: AnswerRequest) -> AnswerDecision:
        """Extractive (`nodes.answer_extractive`): the evidence sentences of the top documents that
        share most of the question's words, each cited; an exact value only when one can be read
        off the best sentence; no confidence (nothing here is calibrated)."""
        explanation, exact, insufficient = extractive_answer(req.intent, req.docs, req.term_weights, req.max_sentences)
        return AnswerDecision(AnswerDraft(explanation, exact, None, insufficient, method="extractive"))

    def reason(self, plan: Plan, cand: Candidate) -> str:
        items: dict[str, Mapping[str, Any]] = {i["id"]: i for i in plan.get("checklist", [])}
        ev = sorted(cand.get("evidence", []), key=lambda e: -e["score"])
        if not ev:
            return "ranked by retrieval score (not verified)"
        met = [items[e["item_id"]]["text"] for e in ev if e["score"] >= 3 and e["item_id"] in items]
        if met:
            return f"meets: {'; '.join(met[:3])} (S={cand.get('score', 0):.2f})"
        return f"partial match; best item '{items.get(ev[0]['item_id'], {}).get('text', '?')}' scored {ev[0]['score']:.1f}/5"
