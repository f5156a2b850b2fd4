"""The policy seam — plan, judge, reflect, answer: the typed requests and decisions, and the Protocol.

Nodes own the control flow and the tool calls; a policy owns the decisions. Each decision takes
one typed request and returns one typed decision (with the model usage it cost and, when a model
step fell back, why), and judging takes a batch of candidates at once, so a model-backed policy
can score many documents per call. Judging has two looks: verification asks every policy to judge
the verified pool (`JudgeRequest.batch`: records, chunks, vectors — where the evidence is); a
policy whose spec has `second_look` (`nodes.policy.registry`) is asked again, batch by batch in activities
the graph fans out, about the best of them (`JudgeRequest.located`: their lines and located
evidence) — the `llm` policy's librarians. The heuristic policy (`nodes.policy.heuristic`) is deterministic and offline; the
`llm` policy (`nodes.llm.policy`) answers the same requests with chat models and falls back to
this one per step. The `react` policy runs its own graph and uses this policy only to attach
evidence. Which class a job's policy is comes from its spec in `nodes.policy.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodes.job.config import JobConfig
from nodes.job.state import Candidate, ChecklistItem, Evidence, Plan
from nodes.job.usage import Usage
from stores.records import Chunk, DocRecord

SCORED_KINDS = ("topic", "method", "application", "aspect", "product")


def scored_items(plan: Plan) -> list[ChecklistItem]:
    """The items S is computed from: the checklist's scored requirements and, when the plan keeps
    one, the whole intent as a ranking signal (`Plan.whole`: scored, its evidence never shown) —
    unless an item already says it (the `llm` policy keeps the core as its item c0)."""
    items = [i for i in plan.get("checklist", []) if i["kind"] in SCORED_KINDS]
    whole = plan.get("whole")
    if not whole or any(i["id"] == whole["id"] or i["text"] == whole["text"] for i in items):
        return items
    return [whole, *items]


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
    searched: Sequence[str] = ()  # the queries run so far


@dataclass
class ReflectDecision:
    queries: list[str]
    plan: Plan | None = None  # a refined plan (new checklist items), or None to keep it
    done: bool = False  # the navigator judged the current top complete: no further round
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""


@dataclass(frozen=True)
class Passage:
    line_start: int
    line_end: int
    text: str
    # The heading the passage stands under when it names what its sentences leave implicit
    # ("checkpoint_timeout (integer)" above "The default is five minutes"); '' when none.
    context: str = ""


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
    confidence: int | None = 0  # None: not estimated (an extractive answer claims none)
    insufficient_evidence: bool = False
    method: str = ""  # "extractive" for an answer of quoted sentences (no model)
    # What the confidence was computed from (nodes.evidence.answer_confidence.FEATURES), kept with
    # the answer so that judged answers can refit it (evals/debian_docs/fit_confidence.py).
    features: dict[str, float] | None = None


@dataclass
class AnswerDecision:
    draft: AnswerDraft
    usage: Usage = field(default_factory=Usage)
    fallback: str = ""


class Policy(Protocol):
    """A policy's decisions (its name, graph and the rest are its spec in `nodes.policy.registry`)."""

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
