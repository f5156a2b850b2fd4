"""Quarry's one service layer for the servers: collections, search, read, jobs — what `quarry mcp`'s
tools and `quarry serve`'s HTTP API both call, with the command line's limits and error type.

Every method calls the function the command line calls: `search`/`read_search_results`/
`read_document` are the agent's own tools (`nodes.tools.corpus.ToolSession`, opened by
`quarry.app.search.tools_for`, their limits `TOOL_LIMITS`); a job is checked and submitted as
`quarry run` does (`quarry.app.submit.checked_job`, `quarry.app.submit.start_job`: the same Temporal
workflow, found again by its id from any door); a job is read as `quarry job progress | result |
list` read it (`quarry.app.jobs`) and acted on as `quarry job cancel | stop | steer` act
(`quarry.app.actions`). Failures are QuarryError; a door only translates them. Everything a job
method returns passes `stores.redact.redact`, so no key reaches a client (document text is the
user's own corpus, shown as `quarry read` shows it).
"""

from __future__ import annotations

import json
from typing import Any

from nodes.job.config import TOOL_LIMITS
from quarry.app.models import (
    CollectionsResult,
    DenseBuildStarted,
    DenseBuildStatus,
    DocumentResult,
    JobEventsPage,
    JobList,
    JobResult,
    JobStarted,
    JobStatus,
    JobSummary,
    JobTrace,
    Marked,
    NumberedLine,
    SearchResult,
    Sent,
    SteerAccepted,
)
from quarry.app.requests import JobRequest
from quarry.app.sessions import SearchSessions
from stores.errors import QuarryError
from stores.job_status import JobStatus as Status  # quarry.app.models.JobStatus is the reply
from stores.redact import redact

EVENTS_PAGE = 200  # events one call returns at most (a client asks again from the last id)
# A running job's status when no worker answered its query: "running, waiting", with the reason.
WAITING_FOR_WORKER = frozenset({"worker_warming_up", "no_worker", "worker_unresponsive"})


def _redacted(model: Any) -> Any:
    return type(model).model_validate_json(redact(model.model_dump_json()))


def _next(offset: int, shown: int, total: int) -> int | None:
    return offset + shown if offset + shown <= total else None


def _search_result(collection: str, page: Any, semantic: str = "") -> SearchResult:
    return SearchResult(
        collection=collection,
        search_id=page.search_id,
        query=page.query,
        total=page.total,
        offset=page.offset,
        hits=page.hits,
        next_offset=_next(page.offset, len(page.hits), page.total),
        note=page.note,
        semantic=semantic,
    )


class QuarryService:
    """One server's view of this home: its search sessions (search_ids page across calls) and the
    Temporal frontend its job methods talk to (`address`; None: the rule every command uses)."""

    def __init__(self, address: str | None = None, door: str = "api") -> None:
        self.address = address
        self.door = door  # recorded as the tools' `reason`, so a trace says which door searched
        self.sessions = SearchSessions()

    # -- collections, search, read -----------------------------------------------------------------

    def list_collections(self) -> CollectionsResult:
        from stores.home import list_collections as names

        return CollectionsResult(collections=names())

    def search(
        self, collection: str, query: str, channel: str = "lexical", offset: int = 1, limit: int = 0
    ) -> SearchResult:
        """A page of a new search (a QueryProblem, for the door to phrase, when the query cannot be searched)."""
        from quarry.app.search import checked_query, search_page, what_it_is

        checked_query(query, channel)
        tools, lock = self.sessions.tools(collection, channel)
        with lock:
            page = search_page(tools, query, channel, offset, limit or TOOL_LIMITS.preview, reason=self.door)
        semantic = what_it_is(tools.semantic, collection) if channel == "semantic" else ""
        return _search_result(collection, page, semantic)

    def read_search_results(self, search_id: str, offset: int, limit: int) -> SearchResult:
        from quarry.app.search import checked_page

        held = self.sessions.holding(search_id)
        if held is None:
            raise self.sessions.unknown(search_id)
        name, tools, lock = held
        with lock:
            page = checked_page(tools.read_search_results(self.door, search_id, offset, limit))
        return _search_result(name, page)

    def read_document(self, collection: str, docid: str, offset: int = 1, limit: int = 0) -> DocumentResult:
        from quarry.app.search import read_page

        tools, lock = self.sessions.tools(collection, "lexical")
        with lock:
            page = read_page(tools, docid, offset, limit or TOOL_LIMITS.read_limit, reason=self.door)
        return DocumentResult(
            collection=collection,
            docid=page.docid,
            title=page.title,
            offset=page.offset,
            total_lines=page.total_lines,
            lines=[NumberedLine(number=n, text=t) for n, t in enumerate(page.lines, start=page.offset)],
            next_offset=page.last_line + 1 if page.last_line < page.total_lines else None,
            note=page.note,
        )

    def build_dense_index(self, collection: str) -> DenseBuildStarted:
        """Start the collection's durable dense index build (or attach to the running one) and
        return its id at once, as `quarry index NAME --dense --durable` starts it."""
        from quarry.app.dense_start import start_dense_build

        started = start_dense_build(collection, self.address)
        return DenseBuildStarted(
            collection=collection, build_id=started.build_id, reused=started.reused, web_ui=started.web_ui
        )

    def dense_build_status(self, build_id: str) -> DenseBuildStatus:
        """Where a dense index build stands, as `quarry job progress dense-…` reads it."""
        from quarry.app.dense_start import build_status
        from workflows.dense_progress import progress_line

        p = build_status(build_id, self.address)
        finished = p["status"] != "running"  # other vocabulary: Temporal's status of the build
        return DenseBuildStatus.model_validate(p | {"finished": finished, "line": progress_line(p)})

    # -- jobs ----------------------------------------------------------------------------------------

    def start_job(self, request: JobRequest) -> JobStarted:
        """Check and submit a job (`quarry.app.submit.checked_job`, `start_job`), as `quarry run` does."""
        from nodes.policy.registry import DEFAULT_POLICY
        from quarry.app.submit import checked_job
        from quarry.app.submit import start_job as submit

        policy = request.policy or DEFAULT_POLICY
        mode, collection = request.mode, request.collection
        intent, config = checked_job(
            collection, request.intent, mode=mode, policy=policy, budget=request.budget_seconds, model=request.model
        )
        info = submit(collection, intent, mode=mode, policy=policy, config=config, address=self.address)
        return JobStarted(job_id=info["job_id"], web_ui=info["web_ui"])

    def job_status(self, job_id: str) -> JobStatus:
        """Where a job is: its status, round, running node, current top 5 and budget used."""
        from quarry.app.jobs import progress_of, result_so_far
        from stores.jobs import FINAL

        row, result = result_so_far(job_id, self.address)
        base = {"job_id": job_id, "collection": row["collection"], "intent": row["intent"], "round": row["round"]}
        if row["status"] in FINAL:
            top = [
                {"docid": r["docid"], "title": r.get("title", ""), "score": r.get("score")}
                for r in (result or {}).get("ranked", [])[:5]
            ]
            done = JobStatus(**base, status=row["status"], finished=True, top=top, note="its result is ready")
            return _redacted(done)
        try:
            p = progress_of(job_id, self.address)
        except QuarryError as err:
            # The job runs on Temporal whether or not a worker answers now (one warming up, one
            # restarting): a status that says so, not an error, so a client's wait goes on.
            if err.code not in WAITING_FOR_WORKER:
                raise
            note = err.message + (f" — {err.hint}" if err.code != "worker_warming_up" and err.hint else "")
            return _redacted(JobStatus(**base, status=Status.RUNNING, finished=False, node="waiting", note=note))
        ending = str(p.get("status", Status.RUNNING))
        ending_note = (
            "" if ending == Status.RUNNING else f"it is ending ({ending}): its result is being recorded; ask again"
        )
        top = [{k: t.get(k) for k in ("docid", "title", "score")} for t in p.get("top", [])]
        # One source for status and finished: the job store. A job ends there once its result is
        # written (before the workflow closes); until then it is running, whatever the workflow's
        # own word, so `finished` is true exactly when `status` is a final one.
        shown = JobStatus(
            **base | {"round": p.get("round", row["round"])},
            status=Status.RUNNING,
            finished=False,
            note=ending_note,
            node=str(p.get("node", "")),
            top=top,
            budget=p.get("budget") or {},
        )
        return _redacted(shown)

    def job_result(self, job_id: str) -> JobResult:
        """A finished job's result with BibTeX; QuarryError `not_finished` while it runs."""
        from quarry.app import temporal
        from quarry.app.ended import ended_record
        from quarry.app.jobs import exported, result_so_far
        from stores.jobs import FINAL

        row, result = result_so_far(job_id, self.address)
        if result is None and row["status"] in FINAL:  # ended before it built a result
            return JobResult.model_validate(json.loads(redact(json.dumps(ended_record(row), default=str))))
        if result is None:
            raise QuarryError(
                "not_finished",
                f"job {job_id} is {row['status']} (round {row['round']})",
                "ask for its status until it has finished, then for its result",
            )
        bibtex = exported(result, "bibtex") if result.get("ranked") else ""
        web_ui = temporal.web_ui(job_id, self.address)
        return _redacted(JobResult.model_validate(result | {"bibtex": bibtex, "web_ui": web_ui}))

    def list_jobs(self, limit: int, status: str | None = None, collection: str | None = None) -> JobList:
        from quarry.app.jobs import job_rows

        rows, view = job_rows(limit, status, collection, self.address)
        note = "statuses from the job store: no Temporal server answers" if view is None else ""
        return JobList(jobs=[JobSummary.model_validate(json.loads(redact(json.dumps(r)))) for r in rows], note=note)

    def job_events(self, job_id: str, after: int = 0, limit: int = EVENTS_PAGE) -> JobEventsPage:
        """The job's progress events numbered after `after` (stores.job_events) and whether it has ended."""
        from quarry.app.records import store
        from stores.jobs import FINAL

        jobs = store()
        row = jobs.get(job_id)  # unknown_job for an id this home never saw
        events = jobs.events(job_id, after, min(max(1, limit), EVENTS_PAGE))
        return JobEventsPage.model_validate(
            {
                "job_id": job_id,
                "status": row["status"],
                "finished": row["status"] in FINAL,
                "events": [{"id": e.seq, "at": e.at, "data": e.data} for e in events],
            }
        )

    def cancel_job(self, job_id: str) -> Sent:
        from quarry.app.actions import cancel_job

        cancel_job(job_id, self.address)
        return Sent(job_id=job_id, sent="cancel", note="it stops now and keeps its best result so far")

    def stop_job(self, job_id: str) -> Sent:
        from quarry.app.actions import stop_job

        stop_job(job_id, self.address)
        return Sent(job_id=job_id, sent="stop", note="it answers with what it has at its next step")

    def steer_job(self, job_id: str, text: str) -> SteerAccepted:
        from quarry.app.actions import steer_job

        accepted = steer_job(job_id, text, self.address)
        return SteerAccepted(
            job_id=job_id,
            accepted=str(accepted["accepted"]),
            applies_from_round=int(accepted["applies_from_round"]),
            extra_round=bool(accepted.get("extra_round", False)),
        )

    def job_export(self, job_id: str, fmt: str) -> str:
        """A finished job's result in an export format (quarry.exports.job_export.FORMATS), as `quarry job export` writes it."""
        from quarry.app.jobs import exported, result_so_far
        from quarry.exports.job_export import FORMATS

        if fmt not in FORMATS:
            raise QuarryError("bad_format", f"unknown export format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
        row, result = result_so_far(job_id, self.address)
        if result is None:
            raise QuarryError(
                "not_finished",
                f"job {job_id} has no result ({row['status']}, round {row['round']})",
                "ask for its status until it has finished, then export it",
            )
        return redact(exported(result, fmt))

    def job_trace(self, job_id: str) -> JobTrace:
        """A job's spans from its local trace file, with the per-tool and per-round summaries of `quarry trace`."""
        from observability import rounds_summary, tool_summary
        from quarry.app.trace import job_spans

        row, spans = job_spans(job_id)
        shown = {"job_id": job_id, "trace_id": row["trace_id"], "spans": spans}
        trace = shown | {"tools": tool_summary(spans), "rounds": rounds_summary(spans)}
        return JobTrace.model_validate(json.loads(redact(json.dumps(trace, default=str))))

    def mark(self, job_id: str, docid: str, relevant: bool) -> Marked:
        """Keep a researcher's mark on a document for a job's intent (`quarry job mark`), for self-tuning."""
        from quarry.app.actions import mark_document

        collection, docid = mark_document(job_id, docid, relevant)
        return Marked(job_id=job_id, collection=collection, docid=docid, relevant=relevant)
