"""`quarry mcp`: Quarry as a Model Context Protocol server over stdio, for the agents that people
now search through (Claude Desktop, Claude Code, Cursor …), on the official Python SDK (`mcp` 2.x,
its `MCPServer`).

A front door only translates: every tool calls the function the command line calls, with the
command line's limits and error type — `search`/`read_search_results`/`read_document` are the
agent's own tools (`nodes.tools.corpus.ToolSession`, opened by `quarry.cli_search.tools_for`, their
limits `TOOL_LIMITS`), a job is checked and submitted as `quarry run` does (`quarry.cli_run.checked_job`,
`quarry.submit.start_job`: the same Temporal workflow, found again by its id from any door), and a
job is read as `quarry job progress | result | list` read it (`quarry.cli_job_inspect`). A
QuarryError becomes a tool error whose text is its code, message and hint — never a traceback (an
unexpected exception reaches the client as the SDK's bare "Error executing tool …"). Errors and
everything a job tool returns pass `stores.redact.redact`, so no key reaches a client (document text
is the user's own corpus, shown as `quarry read` shows it).

Not here yet (a later session): `wait_for_job` with progress notifications, `steer_job`,
`stop_job`, `cancel_job`, resources (`quarry://COLLECTION/DOCID`, a job's result and report) and the
Streamable HTTP transport inside `quarry serve`.
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Annotated, Any, Literal

from pydantic import Field

from nodes.job.config import JOB_BOUNDS, TOOL_LIMITS, JobConfig
from nodes.policy.registry import DEFAULT_POLICY
from quarry.cli_job_inspect import JOBS_LISTED
from quarry.mcp_models import (
    CollectionsResult,
    DocumentResult,
    JobList,
    JobResult,
    JobStarted,
    JobStatus,
    JobSummary,
    NumberedLine,
    SearchResult,
)
from stores.errors import QuarryError
from stores.redact import redact

DEFAULTS = JobConfig()
INSTRUCTIONS = (
    "Quarry searches collections of documents the user ingested. Start with list_collections, then "
    "search(collection, query); page a ranking with read_search_results(search_id, offset, limit) "
    "and read a document with read_document(collection, docid). For a research question that needs "
    "many searches, start_job(collection, intent) runs a durable search job: poll job_status(job_id) "
    "until it has finished, then job_result(job_id). Every docid returned exists in the collection."
)

# -- the search sessions ---------------------------------------------------------------------------


class SearchSessions:
    """The agent's tool sessions this server keeps, one per (collection, channel, version).

    Why kept, not opened per call: a search caches its deep ranking behind the `search_id` it
    returns (`nodes.tools.ranking_cache`), and `read_search_results(search_id)` pages that ranking
    later without searching again — so the session that made the search must outlive the call. One
    sequence names every session's searches (s1, s2, …), so a search_id alone finds its session. A
    session is keyed by the collection's current version too: after a re-ingest the next search
    opens the new version, while search_ids of the old one still page the ranking they were given.
    Each session's cache is bounded (`TOOL_LIMITS.cache_size` rankings); calls on one session are
    serialised (its cache is not thread-safe, and the SDK runs tools in worker threads)."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str | None], Any] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()
        counter = itertools.count(1)
        self._new_id = lambda: f"s{next(counter)}"

    def tools(self, name: str, channel: str) -> tuple[Any, threading.Lock]:
        from quarry.cli_search import tools_for
        from stores.home import collection_paths

        key = (name, channel, collection_paths(name).version)
        with self._lock:
            tools = self._sessions.get(key)
            if tools is None:
                tools = tools_for(name, semantic=channel == "semantic", new_search_id=self._new_id)
                self._sessions[key] = tools
                self._locks[id(tools)] = threading.Lock()
            return tools, self._locks[id(tools)]

    def holding(self, search_id: str) -> tuple[str, Any, threading.Lock] | None:
        with self._lock:
            for (name, _, _), tools in self._sessions.items():
                if search_id in tools.cache.ids():
                    return name, tools, self._locks[id(tools)]
        return None


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


# -- the server ------------------------------------------------------------------------------------


def tool_error(err: QuarryError) -> Exception:
    """A QuarryError as the SDK's anticipated tool error: `is_error` with code, message and hint."""
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(redact(f"{err.code}: {err.message}\nHint: {err.hint}"))


def build_server(address: str | None = None) -> Any:
    """The MCP server (an `mcp.server.mcpserver.MCPServer`) with Quarry's tools. `address` is the
    Temporal frontend the job tools talk to (None: the rule every command uses)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("quarry", instructions=INSTRUCTIONS)
    sessions = SearchSessions()

    def translated(fn):  # a QuarryError leaves as a tool error, never as a traceback
        import functools

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except QuarryError as err:
                raise tool_error(err) from None

        return call

    @server.tool()
    @translated
    def list_collections() -> CollectionsResult:
        """The collections you can search (their names are the `collection` argument of the other tools)."""
        from stores.home import list_collections as names

        return CollectionsResult(collections=names())

    @server.tool()
    @translated
    def search(
        collection: str,
        query: str,
        channel: Literal["lexical", "semantic"] = "lexical",
        offset: Annotated[int, Field(ge=1, description="First rank to show (1-based)")] = 1,
        limit: Annotated[
            int, Field(ge=1, description=f"How many ranks to show (at most {TOOL_LIMITS.page_limit_max})")
        ] = TOOL_LIMITS.preview,
    ) -> SearchResult:
        """Search a collection: a deep ranking (up to 1000 documents) is cached behind the returned
        search_id and a page of it is shown (docid, title, score, an excerpt per hit). channel
        "lexical" is BM25 over words (use the terms the documents would use); "semantic" ranks by
        meaning (MiniLM embeddings). Page further with read_search_results(search_id, offset,
        limit) instead of searching again; read a hit with read_document(collection, docid)."""
        from nodes.tools.query_check import QueryProblem
        from quarry.cli_search import checked_query, search_page, what_it_is

        try:
            checked_query(query, channel)
        except QueryProblem as problem:  # said in this door's syntax
            raise problem.for_mcp(collection) from None
        tools, lock = sessions.tools(collection, channel)
        with lock:
            page = search_page(tools, query, channel, offset, limit, reason="mcp")
        semantic = what_it_is(tools.semantic, collection) if channel == "semantic" else ""
        return _search_result(collection, page, semantic)

    @server.tool()
    @translated
    def read_search_results(
        search_id: str,
        offset: Annotated[int, Field(ge=1, description="First rank to show (1-based)")] = TOOL_LIMITS.page_offset,
        limit: Annotated[
            int, Field(ge=1, description=f"How many ranks (at most {TOOL_LIMITS.page_limit_max})")
        ] = TOOL_LIMITS.page_limit,
    ) -> SearchResult:
        """Page through the cached ranking of an earlier search (its search_id) without searching
        again: ranks offset … offset+limit-1. Use next_offset of the previous page to continue."""
        held = sessions.holding(search_id)
        if held is None:
            raise QuarryError(
                "unknown_search_id",
                f"no cached search {search_id!r}",
                "use a search_id returned by search in this session, or call search again",
            )
        name, tools, lock = held
        from quarry.cli_search import checked_page

        with lock:
            page = checked_page(tools.read_search_results("mcp", search_id, offset, limit))
        return _search_result(name, page)

    @server.tool()
    @translated
    def read_document(
        collection: str,
        docid: str,
        offset: Annotated[int, Field(ge=1, description="First line (1-based)")] = 1,
        limit: Annotated[
            int, Field(ge=1, description=f"How many lines (at most {TOOL_LIMITS.read_limit_max})")
        ] = TOOL_LIMITS.read_limit,
    ) -> DocumentResult:
        """Read a document by numbered lines (line 1 is its title), `limit` lines from `offset`.
        Use a docid exactly as search returned it; continue from next_offset."""
        from quarry.cli_search import read_page

        tools, lock = sessions.tools(collection, "lexical")
        with lock:
            page = read_page(tools, docid, offset, limit, reason="mcp")
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

    @server.tool()
    @translated
    def start_job(
        collection: str,
        intent: Annotated[
            str, Field(description="The research need in plain words: topic, methods, years, exclusions")
        ],
        mode: Literal["list", "answer"] = "list",
        policy: Annotated[str, Field(description="heuristic (no model), llm or react")] = DEFAULT_POLICY,
        budget_seconds: Annotated[
            float,
            Field(ge=JOB_BOUNDS.min_seconds, le=JOB_BOUNDS.max_seconds, description="Wall-clock budget of the job"),
        ] = DEFAULTS.max_seconds,
        model: Annotated[str | None, Field(description="PROVIDER:NAME for policy llm or react")] = None,
    ) -> JobStarted:
        """Start a durable search job and return its job_id at once: mode "list" finds ranked
        documents with evidence per requirement, "answer" writes an answer citing them. The job
        runs on a worker and survives this session; poll job_status(job_id) until finished, then
        job_result(job_id)."""
        from quarry.cli_run import checked_job
        from quarry.submit import start_job as submit

        intent, config = checked_job(collection, intent, mode=mode, policy=policy, budget=budget_seconds, model=model)
        info = submit(collection, intent, mode=mode, policy=policy, config=config, address=address)
        return JobStarted(job_id=info["job_id"], web_ui=info["web_ui"])

    @server.tool()
    @translated
    def job_status(job_id: str) -> JobStatus:
        """Where a job is: status, round, the step running, its current top 5 and budget used.
        finished is true once it has ended; then call job_result."""
        shown = _job_status(job_id)
        return JobStatus.model_validate_json(redact(shown.model_dump_json()))

    def _job_status(job_id: str) -> JobStatus:
        from quarry.cli_job_inspect import progress_of, result_so_far
        from stores.jobs import FINAL

        row, result = result_so_far(job_id, address)
        base = {"job_id": job_id, "collection": row["collection"], "intent": row["intent"], "round": row["round"]}
        if row["status"] in FINAL:
            top = [
                {"docid": r["docid"], "title": r.get("title", ""), "score": r.get("score")}
                for r in (result or {}).get("ranked", [])[:5]
            ]
            return JobStatus(
                **base, status=row["status"], finished=True, top=top, note="call job_result for the result"
            )
        try:
            p = progress_of(job_id, address)
        except QuarryError as err:
            if err.code != "worker_warming_up":
                raise
            return JobStatus(**base, status="running", finished=False, node="waiting", note=err.message)
        status = str(p.get("status", "running"))
        top = [{k: t.get(k) for k in ("docid", "title", "score")} for t in p.get("top", [])]
        # Finished only once the job store holds its end (the result is written before the
        # workflow closes): a job that has just ended says so on the next call.
        return JobStatus(
            **base | {"round": p.get("round", row["round"])},
            status=status,
            finished=False,
            note="" if status == "running" else "its result is being recorded; call job_status again",
            node=str(p.get("node", "")),
            top=top,
            budget=p.get("budget") or {},
        )

    @server.tool()
    @translated
    def job_result(job_id: str) -> JobResult:
        """A finished job's result: the ranked documents with an evidence quote per requirement
        (and lines to read_document), or the cited answer, plus BibTeX. A job still running is
        an error saying so: poll job_status first."""
        from quarry import temporal_access as temporal
        from quarry.cli_job_inspect import exported, result_so_far
        from quarry.ended_job import ended_record
        from stores.jobs import FINAL

        row, result = result_so_far(job_id, address)
        if result is None and row["status"] in FINAL:  # ended before it built a result
            return JobResult.model_validate(ended_record(row))
        if result is None:
            raise QuarryError(
                "not_finished",
                f"job {job_id} is {row['status']} (round {row['round']})",
                f'poll job_status(job_id="{job_id}") until finished is true',
            )
        bibtex = exported(result, "bibtex") if result.get("ranked") else ""
        shown = JobResult.model_validate(result | {"bibtex": bibtex, "web_ui": temporal.web_ui(job_id, address)})
        return JobResult.model_validate_json(redact(shown.model_dump_json()))

    @server.tool()
    @translated
    def list_jobs(
        limit: Annotated[int, Field(ge=1, le=1000, description="How many jobs, newest first")] = JOBS_LISTED,
        status: Annotated[str | None, Field(description="Only jobs with this status")] = None,
        collection: Annotated[str | None, Field(description="Only jobs on this collection")] = None,
    ) -> JobList:
        """This Quarry home's jobs, newest first, with their status (started from any door)."""
        from quarry.cli_job_inspect import job_rows

        rows, view = job_rows(limit, status, collection, address)
        note = "statuses from the job store: no Temporal server answers" if view is None else ""
        return JobList(jobs=[JobSummary.model_validate(json.loads(redact(json.dumps(r)))) for r in rows], note=note)

    return server


def serve_stdio(address: str | None = None) -> None:
    """Run the server over stdin/stdout until the client closes them (what `quarry mcp` does)."""
    build_server(address).run("stdio")
