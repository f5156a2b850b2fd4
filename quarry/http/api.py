"""`quarry serve`'s JSON API under /api: the commands as endpoints — collections, search, read, and
jobs (create, list, status, result, events, steer, stop, cancel, mark, trace, export) — each a thin
translation onto `quarry.app.service.QuarryService`, the functions `quarry mcp` and the command line
call, with their limits. Request bodies are pydantic models that forbid unknown fields; responses
are the service's models, so /openapi.json describes exactly what is sent.

A job's live progress is Server-Sent Events (`/api/jobs/ID/stream`) read from the job's event log
(stores.job_events): each event carries its number as the SSE id, so a client that reconnects with
`Last-Event-ID` resumes after it — nothing missed, nothing repeated — and a finished job replays its
events and closes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Literal

import anyio
from fastapi import APIRouter, Header, Path, Query, Request, Response
from pydantic import Field
from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from nodes.job.config import TOOL_LIMITS
from quarry.app.actions import STEER_MAX_CHARS
from quarry.app.jobs import JOBS_LISTED
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
    JobTrace,
    Marked,
    SearchResult,
    Sent,
    SteerAccepted,
)
from quarry.app.requests import JobRequest, Strict
from quarry.exports.job_export import FORMATS
from quarry.http.common import ERRORS, NUMBER_MAX, Integer, Service, in_thread
from stores.errors import QuarryError
from stores.home import NAME_PATTERN

router = APIRouter(prefix="/api", responses=ERRORS)
STREAM_POLL_S = 0.5  # how often the event stream looks for new events
MEDIA = {"bibtex": "application/x-bibtex", "ris": "application/x-research-info-systems", "csl-json": "application/json",
         "csv": "text/csv", "markdown": "text/markdown"}  # fmt: skip

JobId = Annotated[str, Path(max_length=200, description="A job id as start returned it")]
Collection = Annotated[
    str, Path(max_length=200, pattern=NAME_PATTERN, description="A collection's name (GET /api/collections)")
]
EventNumber = Annotated[int, Query(ge=0, le=NUMBER_MAX, description="Only events numbered after this")]


class SearchRequest(Strict):
    query: str = Field(
        min_length=1, max_length=4000, description="Words the documents would use (lexical) or a meaning (semantic)"
    )
    channel: Literal["lexical", "semantic"] = "lexical"
    offset: Integer = Field(default=1, ge=1, le=TOOL_LIMITS.depth, description="First rank to show (1-based)")
    limit: Integer = Field(default=TOOL_LIMITS.preview, ge=1, le=TOOL_LIMITS.page_limit_max)


class SteerRequest(Strict):
    text: str = Field(
        min_length=1, max_length=STEER_MAX_CHARS, description='One requirement or exclusion, e.g. "not surveys"'
    )


class MarkRequest(Strict):
    docid: str = Field(min_length=1, max_length=500)
    relevant: bool


# -- collections, search, read ----------------------------------------------------------------------


@router.get("/collections", tags=["collections"])
def list_collections(service: Service) -> CollectionsResult:
    """The collections of this Quarry home."""
    return service.list_collections()


@router.post("/collections/{collection}/search", tags=["search"])
async def search(collection: Collection, body: SearchRequest, service: Service) -> SearchResult:
    """Search a collection: a deep ranking is cached behind the returned search_id; a page is shown."""
    return await in_thread(service.search, collection, body.query, body.channel, body.offset, body.limit)


@router.get("/searches/{search_id}", tags=["search"])
async def read_search_results(
    search_id: Annotated[str, Path(max_length=40)],
    service: Service,
    offset: Annotated[int, Query(ge=1, le=TOOL_LIMITS.depth)] = TOOL_LIMITS.page_offset,
    limit: Annotated[int, Query(ge=1, le=TOOL_LIMITS.page_limit_max)] = TOOL_LIMITS.page_limit,
) -> SearchResult:
    """Another page of an earlier search's ranking, without searching again."""
    return await in_thread(service.read_search_results, search_id, offset, limit)


@router.get("/collections/{collection}/documents/{docid:path}", tags=["search"])
async def read_document(
    collection: Collection,
    docid: Annotated[str, Path(max_length=500, description="A docid exactly as search returned it")],
    service: Service,
    offset: Annotated[int, Query(ge=1, le=NUMBER_MAX)] = 1,
    limit: Annotated[int, Query(ge=1, le=TOOL_LIMITS.read_limit_max)] = TOOL_LIMITS.read_limit,
) -> DocumentResult:
    """A document's numbered lines (line 1 is its title), `limit` from `offset`."""
    return await in_thread(service.read_document, collection, docid, offset, limit)


@router.post("/collections/{collection}/dense-index", status_code=202, tags=["collections"])
def build_dense_index(collection: Collection, service: Service, response: Response) -> DenseBuildStarted:
    """Start building the collection's dense (MiniLM) index as durable work on the home's workers,
    or attach to the build running for it; the id comes back at once (reused: nothing to build)."""
    started = service.build_dense_index(collection)
    if started.build_id:
        response.headers["Location"] = f"/api/dense-builds/{started.build_id}"
    return started


@router.get("/dense-builds/{build_id}", tags=["collections"])
def dense_build_status(
    build_id: Annotated[str, Path(max_length=300, description="A build id as dense-index returned it")],
    service: Service,
) -> DenseBuildStatus:
    """Where a dense index build stands: batches and chunks done, chunks/s, time left, its status."""
    return service.dense_build_status(build_id)


# -- jobs -------------------------------------------------------------------------------------------


@router.post("/jobs", status_code=201, tags=["jobs"])
def create_job(body: JobRequest, service: Service, response: Response) -> JobStarted:
    """Start a durable search job; its id comes back at once (the job runs on a worker)."""
    started = service.start_job(body)
    response.headers["Location"] = f"/api/jobs/{started.job_id}"
    return started


@router.get("/jobs", tags=["jobs"])
def list_jobs(
    service: Service,
    limit: Annotated[int, Query(ge=1, le=1000)] = JOBS_LISTED,
    status: Annotated[str | None, Query(max_length=40)] = None,
    collection: Annotated[str | None, Query(max_length=200)] = None,
) -> JobList:
    """This home's jobs, newest first (started from any door)."""
    return service.list_jobs(limit, status, collection)


@router.get("/jobs/{job_id}", tags=["jobs"])
def job_status(job_id: JobId, service: Service) -> JobStatus:
    """Where a job is: status, round, running step, current top 5, budget used."""
    return service.job_status(job_id)


@router.get("/jobs/{job_id}/result", tags=["jobs"])
def job_result(job_id: JobId, service: Service) -> JobResult:
    """A finished job's ranked documents with evidence (or its cited answer) and BibTeX; 409 while it runs."""
    return service.job_result(job_id)


@router.get("/jobs/{job_id}/events", tags=["jobs"])
def job_events(job_id: JobId, service: Service, after: EventNumber = 0) -> JobEventsPage:
    """A job's progress events after a number, as JSON (the stream's events, for polling clients)."""
    return service.job_events(job_id, after)


@router.get(
    "/jobs/{job_id}/stream",
    tags=["jobs"],
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events: progress, end"}},
)
async def job_stream(
    job_id: JobId,
    service: Service,
    request: Request,
    last_event_id: Annotated[
        str | None, Header(max_length=20, description=f"The last event received: a number, 0 to {NUMBER_MAX}")
    ] = None,
    after: Annotated[int, Query(ge=0, le=NUMBER_MAX, description="Resume after this event (Last-Event-ID wins)")] = 0,
) -> EventSourceResponse:
    """A job's progress as Server-Sent Events (`progress`, then one `end`); reconnect with Last-Event-ID."""
    start = after
    if last_event_id is not None:
        given = last_event_id.strip()
        if not (given.isascii() and given.isdigit() and int(given) <= NUMBER_MAX):
            raise QuarryError(
                "bad_request",
                f"Last-Event-ID {last_event_id!r} is not an event number (0 to {NUMBER_MAX})",
                "send the id of the last event received",
            )
        start = int(given)
    await anyio.to_thread.run_sync(service.job_events, job_id, start, 1)  # unknown_job before the stream opens
    return EventSourceResponse(_events(service, job_id, start, request), ping=15)


async def _events(service: Service, job_id: str, after: int, request: Request) -> AsyncIterator[ServerSentEvent]:
    while not await request.is_disconnected():
        page = await anyio.to_thread.run_sync(service.job_events, job_id, after)
        for event in page.events:
            after = event.id
            ended = bool(event.data.get("end"))
            data = json.dumps({"at": event.at, **event.data}, ensure_ascii=False)
            yield ServerSentEvent(data=data, id=str(event.id), event="end" if ended else "progress")
            if ended:
                return
        if page.finished and not page.events:  # ended before it kept events (or its end was already sent)
            return
        await asyncio.sleep(STREAM_POLL_S)


@router.post("/jobs/{job_id}/steer", tags=["jobs"])
def steer_job(job_id: JobId, body: SteerRequest, service: Service) -> SteerAccepted:
    """Add a requirement or exclusion to a running job: it applies from its next round (one more round
    when the job is in its last planned one), and its final list honours it."""
    return service.steer_job(job_id, body.text)


@router.post("/jobs/{job_id}/stop", tags=["jobs"])
def stop_job(job_id: JobId, service: Service) -> Sent:
    """Ask a running job to answer now with what it has."""
    return service.stop_job(job_id)


@router.post("/jobs/{job_id}/cancel", tags=["jobs"])
def cancel_job(job_id: JobId, service: Service) -> Sent:
    """Cancel a running job; it keeps its best result so far."""
    return service.cancel_job(job_id)


@router.post("/jobs/{job_id}/marks", tags=["jobs"])
def mark(job_id: JobId, body: MarkRequest, service: Service) -> Marked:
    """Mark a document of the job's collection relevant or not for its intent (self-tuning learns from marks)."""
    return service.mark(job_id, body.docid, body.relevant)


@router.get("/jobs/{job_id}/trace", tags=["jobs"])
def job_trace(job_id: JobId, service: Service) -> JobTrace:
    """A job's OpenTelemetry spans (its local trace file) with per-tool and per-round summaries."""
    return service.job_trace(job_id)


@router.get(
    "/jobs/{job_id}/export/{fmt}",
    tags=["jobs"],
    response_class=Response,
    responses={200: {"content": {m: {} for m in MEDIA.values()}, "description": "The result in that format"}},
)
def export(job_id: JobId, fmt: Annotated[str, Path(pattern=f"^({'|'.join(FORMATS)})$")], service: Service) -> Response:
    """A finished job's result as BibTeX, RIS, CSL-JSON, CSV or Markdown."""
    return Response(service.job_export(job_id, fmt), media_type=f"{MEDIA[fmt]}; charset=utf-8")
