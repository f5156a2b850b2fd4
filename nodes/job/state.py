"""The job state: the nodes' vocabulary, and what crosses Temporal and LangGraph checkpoints.

Everything here is plain JSON (dicts, lists, strings, numbers) so it serialises unchanged into
Temporal payloads and the job store. Document text never lives in state — only docids, scores
and short evidence snippets; deep rankings and model conversations live in the job store,
referenced by search_id and by message count.

It lives in `nodes/` because nodes read and write it; `graphs/` wires nodes over it and so
depends on it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from nodes.job.usage import Usage
from nodes.ranking.fusion import RRF_K, reciprocal_rank_fusion

Mode = Literal["list", "answer"]
Status = Literal["running", "completed", "budget_exhausted", "stopped", "failed"]
# topic: the intent's subject; method/application/aspect: a qualifying aspect ("using …", "for …",
# any other); product: a named product or system the documents must be about; format: a document
# type or format ("man pages", "PDF"; shown, not scored); metadata: years, venue, author;
# exclusion: what must not be the subject.
ChecklistKind = Literal["topic", "method", "application", "aspect", "product", "format", "metadata", "exclusion"]
# The id of the plan's whole-intent ranking signal (Plan.whole), never a checklist item's.
WHOLE_ID = "w"


class ChecklistItem(TypedDict):
    id: str
    kind: ChecklistKind
    text: str
    weight: float


class Plan(TypedDict, total=False):
    key_terms: list[str]
    core: str
    checklist: list[ChecklistItem]
    year_min: int | None
    year_max: int | None
    exclusions: list[str]
    version: int
    # The intent's core as one more scored item: a ranking signal, not a requirement the user wrote,
    # so never in `checklist` (nodes.evidence.planning.whole_intent says why it is kept).
    whole: ChecklistItem
    years_known: bool
    # Metadata constraints the navigator found in the intent and validated against the store.
    authors: list[str]
    authors_exclusive: bool
    venue: str | None


class Evidence(TypedDict):
    item_id: str
    score: float
    chunk: str
    line_start: int
    line_end: int
    also: NotRequired[list[dict[str, Any]]]  # the next-best chunks: line_start, line_end, cosine score
    judged_by: NotRequired[str]  # the librarian model that scored this item, if any


class Candidate(TypedDict, total=False):
    docid: str
    ranks: dict[str, int]
    fused: float
    p: float
    score: float
    evidence: list[Evidence]
    excluded: str
    verified_version: int
    judged: str  # the librarian model that judged it ('' for the heuristic)
    rank_score: float  # the score the final order sorts by (set by ranked_candidates)


def merge_judgements(old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Reducer for librarian judgements arriving from parallel activities: they accumulate,
    and a write of `[{"reset": True}]` (after they are folded into the candidates) clears them."""
    if new and any(j.get("reset") for j in new):
        return []
    return list(old or []) + list(new or [])


class JobState(TypedDict, total=False):
    job_id: str
    collection: str
    collection_version: str | None  # the version the job pinned at its start (nodes.job.runtime)
    profile: dict[str, Any]  # the search settings it pinned then (NodeRuntime.search_profile)
    intent: str
    mode: Mode
    policy: str
    config: dict[str, Any]  # nodes.job.config.JobConfig as JSON
    plan: Plan
    queries: list[Any]
    searches: list[dict[str, Any]]
    pool: dict[str, int]  # the candidate pool by reference: {"seq", "size", "verified"} (nodes.job.pool)
    top: list[dict[str, Any]]  # its current top ten (docid, score), for progress
    librarian_tasks: list[dict[str, Any]]  # the next librarian batches (llm policy), small
    judgements: Annotated[list[dict[str, Any]], merge_judgements]
    round: int
    rounds_done: int  # the last round whose reflection ran (graphs.search_graph): a steered round follows it
    node: str
    answer_at: float  # wall-clock seconds of the budget's "submit now" steer (set by the SearchJob
    #                   workflow): a one-step round (graphs.search_graph.round_) ends there
    run_started_at: float  # wall-clock seconds when a worker started running the job: its budget's start
    stop_reason: str
    steering: list[dict[str, Any]]
    new_high: int
    top_ids: list[str]
    previewed: list[str]
    opened: list[str]
    stats: dict[str, int]
    usage: dict[str, Any]  # model usage totals (nodes.job.usage.Usage as JSON)
    fallbacks: list[dict[str, str]]  # model steps that fell back to the heuristic, and why
    # ReAct: the conversation is in the job store; state holds its length and what is pending.
    conversation: int
    turn: dict[str, Any]
    pending_notes: list[dict[str, str]]
    steered: str
    steer_step: int
    reminders: int
    submitted: dict[str, Any]
    steps: int
    result: dict[str, Any]


def rounds_run(state: Mapping[str, Any]) -> int:
    """How many rounds searched. A reflection that plans another round numbers the state with it
    before it runs, so a job that answers then (a stop, a budget, the tool-call cap) ran one round
    fewer than `round` says; each search records the round it ran in. A round that ran to its
    reflection without a new search (one a steering note started, "not X" adds no query) counts too."""
    searched = max((int(s.get("round", 0)) for s in state.get("searches", [])), default=int(state.get("round", 0)))
    return max(searched, int(state.get("rounds_done", 0) or 0))


def bump(stats: dict[str, int], **deltas: int) -> dict[str, int]:
    """A new stats dict with counters increased (state is never mutated in place)."""
    out = dict(stats)
    for key, delta in deltas.items():
        out[key] = out.get(key, 0) + delta
    return out


def add_fallback(state: JobState, step: str, reason: str) -> list[dict[str, str]]:
    """The state's fallbacks with one more (a model step answered by the heuristic instead)."""
    return [*state.get("fallbacks", []), {"step": step, "reason": reason[:300]}]


def model_step_update(state: JobState, step: str, usage: Usage, fallback: str = "") -> dict[str, Any]:
    """The state update of a decision: its model usage added to the job's totals, and the
    fallback recorded when the model step was answered by the heuristic instead."""
    update: dict[str, Any] = {}
    if usage.calls:
        update["usage"] = Usage.from_dict(state.get("usage")).add(usage).to_dict()
    if fallback:
        update["fallbacks"] = add_fallback(state, step, fallback)
    return update


def ranked_candidates(candidates: Mapping[str, Candidate]) -> list[Candidate]:
    """The final listwise order of the candidates that pass the hard constraints.

    Verified candidates come first, ordered by Reciprocal Rank Fusion of two lists: by the
    verification score S and by the fused retrieval score (neither alone is trusted: on CACM,
    S alone 0.546 nDCG@20, retrieval alone 0.559–0.568, their fusion 0.561–0.573, so the rule
    is kept parameter-free rather than tuned). Unverified candidates follow by retrieval score.
    """
    pool = [c for c in candidates.values() if not c.get("excluded")]
    verified = {c["docid"]: c for c in pool if c.get("verified_version")}
    rest = sorted((c for c in pool if not c.get("verified_version")), key=lambda c: (-c.get("fused", 0.0), c["docid"]))
    by_s = sorted(verified.values(), key=lambda c: (-c.get("score", 0.0), -c.get("fused", 0.0), c["docid"]))
    by_f = sorted(verified.values(), key=lambda c: (-c.get("fused", 0.0), c["docid"]))
    fused = reciprocal_rank_fusion([[c["docid"] for c in by_s], [c["docid"] for c in by_f]], k=RRF_K)
    # The score that orders the list goes with each candidate (results show it beside S).
    ordered: list[Candidate] = [{**verified[d], "rank_score": round(score, 6)} for d, score in fused]
    return ordered + [{**c, "rank_score": round(c.get("fused", 0.0), 6)} for c in rest]
