"""Pi-Serini's `http-json` search backend, served by `quarry serve` under /pi-serini/{collection}.

Why: Pi-Serini (github.com/justram/pi-serini) runs its `pi-search` agent tools against any backend
that speaks its searcher contract over HTTP — `backend.kind = "http-json"` in PI_SEARCH_EXTENSION_CONFIG,
two POST endpoints (`searchUrl`, `readDocumentUrl`) taking and returning JSON. Serving that contract
lets a Pi-Serini agent search a Quarry collection with Quarry's BM25, excerpts and line reader.

The contract is `src/pi-search/searcher/contract/schemas.ts` (commit bbab25d): every object has
`additionalProperties: false`, so requests with unknown fields are refused (422) and responses carry
no null or unknown keys. Its semantics, as its reference backends (mock, Anserini) implement them:
- search: `offset` is the 1-based rank of the first hit (default 1); `nextOffset` is the rank to ask
  for next, present only with `hasMore`; a page past the end is empty with `hasMore: false`.
- read-document: units are lines; `offset` is the 1-based first line (default 1), `limit` lines
  (default 200); `returnedOffsetStart..End` are the lines returned of `totalUnits`; `truncated`
  means lines remain and `nextOffset` is the line to continue from. An unknown docid is
  `{found: false, docid}` with status 200, not an error.

Nothing is searched or read here: each endpoint calls `QuarryService.search` / `read_document`,
the agent tools' own implementation and limits. A search page larger than the tools' page is
filled from the same cached ranking (up to its depth, `TOOL_LIMITS.depth`); a read larger than
`read_limit_max` lines is clamped, and `hasMore`/`nextOffset` say what is left. Any other QuarryError propagates, and quarry.http.app answers `{code, message, hint}`.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field

from nodes.job.config import TOOL_LIMITS
from nodes.tools.excerpts import CUT
from quarry.app.service import QuarryService
from quarry.http.common import ERRORS, NUMBER_MAX, Integer, Service, in_thread
from stores.errors import QuarryError

router = APIRouter(prefix="/pi-serini", tags=["pi-serini"], responses=ERRORS)


Collection = Annotated[str, Path(max_length=200, description="A collection's name (GET /api/collections)")]


class Closed(BaseModel):
    """A contract object: `additionalProperties: false`; numbers as JSON numbers (no "5") and no nulls
    where the contract has an optional field (an omitted one takes its default)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# -- requests ---------------------------------------------------------------------------------------


class SearchRequest(Closed):
    query: str = Field(min_length=1, description="The query, searched with BM25")
    offset: Integer = Field(default=1, ge=1, le=NUMBER_MAX, description="1-based rank of the first hit")
    limit: Integer = Field(
        ge=1, le=NUMBER_MAX, description=f"Hits wanted (a ranking holds at most {TOOL_LIMITS.depth})"
    )


class ReadDocumentRequest(Closed):
    docid: str = Field(min_length=1, description="A docid exactly as search returned it")
    offset: Integer = Field(default=1, ge=1, le=NUMBER_MAX, description="1-based first line")
    limit: Integer = Field(
        default=TOOL_LIMITS.read_limit,
        ge=1,
        le=NUMBER_MAX,
        description=f"Lines wanted; at most {TOOL_LIMITS.read_limit_max} per call",
    )


# -- responses (None fields are left out: the routes serialise with response_model_exclude_none) --------


class TimingMs(Closed):
    request: float | None = Field(default=None, description="Milliseconds this request took in Quarry")


class SearchHit(Closed):
    docid: str
    score: float | None = Field(default=None, description="BM25 score")
    title: str | None = None
    snippet: str | None = Field(default=None, description="About 220 characters around the first query-word match")
    snippetTruncated: bool | None = Field(default=None, description="True when the snippet is cut from longer text")
    metadata: dict[str, Any] | None = Field(default=None, description="{rank}: the hit's 1-based rank")


class SearchResponse(Closed):
    hits: list[SearchHit]
    totalHits: int | None = Field(
        default=None,
        description=f"Documents ranked; left out when the ranking reached its depth of {TOOL_LIMITS.depth}",
    )
    nextOffset: int | None = Field(default=None, description="The rank to pass as offset for the next page")
    hasMore: bool
    timingMs: TimingMs | None = None


class ReadDocumentNotFound(Closed):
    found: Literal[False] = False
    docid: str
    timingMs: TimingMs | None = None


class ReadDocumentFound(Closed):
    found: Literal[True] = True
    docid: str
    text: str = Field(description="The lines returned, joined by newlines")
    title: str | None = None
    offset: int = Field(description="The first line asked for")
    limit: int = Field(description="The lines a page holds (the limit asked for, clamped)")
    totalUnits: int | None = Field(default=None, description="Lines in the document")
    returnedOffsetStart: int | None = Field(default=None, description="First line returned (absent when none)")
    returnedOffsetEnd: int | None = Field(default=None, description="Last line returned (absent when none)")
    truncated: bool = Field(description="True when lines remain after the last one returned")
    nextOffset: int | None = Field(default=None, description="The line to pass as offset to continue")
    timingMs: TimingMs | None = None


# -- endpoints --------------------------------------------------------------------------------------


def _timing(started: float) -> TimingMs:
    return TimingMs(request=round((time.perf_counter() - started) * 1000, 3))


def _hit(hit: Any) -> SearchHit:
    """A Quarry hit (nodes.tools.results.HitView) in the contract's terms."""
    snippet = hit.excerpt or None
    return SearchHit(
        docid=hit.docid,
        score=hit.score,
        title=hit.title or None,
        snippet=snippet,
        # The excerpt marks an end it cut with an ellipsis (nodes.tools.excerpts.excerpt).
        snippetTruncated=None if snippet is None else snippet.startswith(CUT) or snippet.endswith(CUT),
        metadata={"rank": hit.rank},
    )


@router.post("/{collection}/search", response_model_exclude_none=True)
async def search(collection: Collection, body: SearchRequest, service: Service) -> SearchResponse:
    """Pi-Serini's `searchUrl`: a page of a BM25 ranking of the collection, best first."""
    return await in_thread(_search, collection, body, service)


def _search(collection: str, body: SearchRequest, service: QuarryService) -> SearchResponse:
    started = time.perf_counter()
    step = TOOL_LIMITS.page_limit_max
    try:
        page = service.search(collection, body.query, "lexical", body.offset, min(body.limit, step))
    except QuarryError as err:
        if err.code != "offset_past_end":
            raise
        return SearchResponse(hits=[], hasMore=False, timingMs=_timing(started))  # as the contract's backends do
    # Pi-Serini asks for its whole page at once (its search tool: 1000 hits) and pages them itself,
    # so the page is filled from the same cached ranking (no second search) up to the limit asked.
    hits, next_offset = list(page.hits), page.next_offset
    while next_offset is not None and len(hits) < body.limit:
        more = service.read_search_results(page.search_id, next_offset, min(body.limit - len(hits), step))
        hits.extend(more.hits)
        next_offset = more.next_offset
    return SearchResponse(
        hits=[_hit(h) for h in hits],
        totalHits=page.total if page.total < TOOL_LIMITS.depth else None,
        nextOffset=next_offset,
        hasMore=next_offset is not None,
        timingMs=_timing(started),
    )


@router.post("/{collection}/read-document", response_model_exclude_none=True)
async def read_document(
    collection: Collection, body: ReadDocumentRequest, service: Service
) -> ReadDocumentFound | ReadDocumentNotFound:
    """Pi-Serini's `readDocumentUrl`: lines of one document, or `{found: false}` for an unknown docid."""
    return await in_thread(_read_document, collection, body, service)


def _read_document(
    collection: str, body: ReadDocumentRequest, service: QuarryService
) -> ReadDocumentFound | ReadDocumentNotFound:
    started = time.perf_counter()
    offset, limit = body.offset, min(body.limit, TOOL_LIMITS.read_limit_max)
    try:
        page = service.read_document(collection, body.docid, offset, limit)
    except QuarryError as err:
        if err.code == "unknown_docid":
            return ReadDocumentNotFound(docid=body.docid, timingMs=_timing(started))
        if err.code != "offset_past_end":
            raise
        # Past the last line: an empty page that says where the end is, as the contract's backends answer.
        first = service.read_document(collection, body.docid, 1, 1)
        return ReadDocumentFound(
            docid=body.docid,
            text="",
            title=first.title or None,
            offset=offset,
            limit=limit,
            totalUnits=first.total_lines,
            truncated=False,
            timingMs=_timing(started),
        )
    last = page.offset + len(page.lines) - 1
    return ReadDocumentFound(
        docid=page.docid,
        text="\n".join(line.text for line in page.lines),
        title=page.title or None,
        offset=offset,
        limit=limit,
        totalUnits=page.total_lines,
        returnedOffsetStart=page.offset if page.lines else None,
        returnedOffsetEnd=last if page.lines else None,
        truncated=page.next_offset is not None,
        nextOffset=page.next_offset,
        timingMs=_timing(started),
    )
