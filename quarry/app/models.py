"""The typed outputs of Quarry's service layer (quarry.app.service), for `quarry mcp`'s tools and `quarry
serve`'s API: each a pydantic model, so the MCP SDK publishes it as a tool's outputSchema and
FastAPI as a response schema in /openapi.json — a client gets structured content it can rely on.
Search hits are the agent tools' own `HitView`; a job's result keeps the fields a client acts on
(ranked documents with evidence, the answer, BibTeX) and leaves the deep run out."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nodes.tools.results import HitView
from stores.jobs import FINAL


class CollectionsResult(BaseModel):
    collections: list[str] = Field(description="Names of the collections in this Quarry home")


class SearchResult(BaseModel):
    collection: str
    search_id: str = Field(description="Pass to read_search_results to page this ranking without searching again")
    query: str = Field(description="The query as searched")
    total: int = Field(description="Documents in the cached ranking")
    offset: int = Field(description="Rank of the first hit shown (1-based)")
    hits: list[HitView]
    next_offset: int | None = Field(description="Rank to pass as offset for the next page; null at the end")
    note: str = ""
    semantic: str = Field(
        default="", description="Set when the semantic channel re-scored the top lexical hits only (no dense index)"
    )


class NumberedLine(BaseModel):
    number: int
    text: str


class DocumentResult(BaseModel):
    collection: str
    docid: str
    title: str
    offset: int = Field(description="Number of the first line shown")
    total_lines: int
    lines: list[NumberedLine]
    next_offset: int | None = Field(description="Line to pass as offset to continue; null at the end")
    note: str = ""


class JobStarted(BaseModel):
    job_id: str = Field(description="Pass to job_status and job_result; the job runs on without this session")
    status: Literal["running"] = "running"
    web_ui: str = Field(description="The job in the Temporal Web UI ('' when unknown)")


class DenseBuildStarted(BaseModel):
    collection: str
    build_id: str = Field(description="Pass to dense_build_status; '' when the current dense index was reused")
    reused: bool = Field(description="The collection's current version already has its dense index: nothing to build")
    web_ui: str = Field(default="", description="The build in the Temporal Web UI ('' when unknown)")


class DenseBuildStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    build_id: str
    collection: str | None = None
    status: str = Field(description="Temporal's: running, completed, failed, cancelled, terminated or timed_out")
    stage: str = Field(description="planning, embedding, committing or done")
    finished: bool
    batches: int | None = None
    batches_done: int | None = None
    chunks: int | None = None
    chunks_done: int | None = None
    chunks_per_s: float | None = None
    eta_s: float | None = Field(default=None, description="Seconds left at the current rate")
    line: str = Field(description="The progress as one line a person reads")


class JobStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    status: str = Field(description="running, completed, stopped, budget_exhausted, failed, cancelled or terminated")
    finished: bool = Field(description="True once the job has ended; then call job_result")
    collection: str
    intent: str
    round: int = 0
    node: str = Field(default="", description="The step running now")
    top: list[dict[str, Any]] = Field(default_factory=list, description="The current top 5 (docid, title, score)")
    budget: dict[str, Any] = Field(default_factory=dict, description="Seconds used and left, model budgets")
    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def _finished_from_status(cls, data: Any) -> Any:
        """One source: `finished` is whether `status` is a final one, whatever a caller passed."""
        if isinstance(data, dict) and "status" in data:
            data = data | {"finished": data["status"] in FINAL}
        return data


class Evidence(BaseModel):
    model_config = ConfigDict(extra="ignore")

    item: str = Field(description="The requirement of the checklist this evidence is for")
    score: float
    chunk: str = Field(description="The evidence passage")
    lines: list[int] = Field(description="First and last line of the passage in the document")
    quote: str | None = Field(default=None, description="The exact quote (read_document shows its lines)")
    page: int | None = None


class RankedDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")

    docid: str
    title: str
    year: int | None = None
    score: float
    weak: bool = Field(default=False, description="Meets no requirement well")
    evidence: list[Evidence] = Field(default_factory=list)
    reason: str = ""


class JobResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    status: str
    collection: str | None = None
    intent: str | None = None
    mode: str = "list"
    policy: str | None = None
    ranked: list[RankedDocument] = Field(default_factory=list)
    answer: dict[str, Any] | None = Field(default=None, description="The cited answer (mode answer)")
    checklist: list[dict[str, Any]] = Field(default_factory=list)
    removed: dict[str, Any] | None = Field(
        default=None,
        description="Documents found but left out by a hard constraint (an exclusion judged on the document's "
        "subject, years, author, venue): count, why (reason: count) and which (docid, title, reason)",
    )
    steering: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each steering note and where it took effect (a round, the final list, or not)",
    )
    stop_reason: str = ""
    rounds: int | None = None
    error: Any = None
    bibtex: str = Field(default="", description="The ranked documents as BibTeX")
    web_ui: str = ""


class JobSummary(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    collection: str
    intent: str
    status: str
    round: int | None = None
    created_at: float
    error: str | None = None
    error_code: str | None = None


class JobList(BaseModel):
    jobs: list[JobSummary]
    note: str = ""


class Sent(BaseModel):
    job_id: str
    sent: Literal["cancel", "stop"]
    note: str = ""


class SteerAccepted(BaseModel):
    job_id: str
    accepted: str = Field(description="The requirement as the job took it")
    applies_from_round: int = Field(description="The round it applies from: the one after the round running now")
    extra_round: bool = Field(
        False,
        description="That round is one more than the job planned (it was in its last round): after it the job "
        "answers again, so the steer reshapes the final list",
    )


class JobEvent(BaseModel):
    id: int = Field(description="Its number: resume after it (SSE Last-Event-ID, or `after`)")
    at: float = Field(description="Unix time it was recorded")
    data: dict[str, Any] = Field(description="status, round, node, candidates, top 5, latest searches, usage; end")


class JobEventsPage(BaseModel):
    job_id: str
    status: str
    finished: bool
    events: list[JobEvent]


class JobTrace(BaseModel):
    job_id: str
    trace_id: str
    spans: list[dict[str, Any]] = Field(description="OpenTelemetry spans as recorded in the local trace file")
    tools: list[dict[str, Any]] = Field(description="Per tool: count, total and p50 milliseconds")
    rounds: list[dict[str, Any]] = Field(description="Per round: queries, tools, model tokens")


class Marked(BaseModel):
    job_id: str
    collection: str
    docid: str
    relevant: bool
