"""`quarry mcp`: Quarry as a Model Context Protocol server over stdio, for the agents that people
now search through (Claude Desktop, Claude Code, Cursor …), on the official Python SDK (`mcp` 2.x,
its `MCPServer`).

A front door only translates: every tool calls the function the command line calls, with the
command line's limits and error type — `search`/`read_search_results`/`read_document` are the
agent's own tools (`nodes.tools.corpus.ToolSession`, opened by `quarry.app.search.tools_for`, their
limits `TOOL_LIMITS`), a job is checked and submitted as `quarry run` does (`quarry.app.submit.checked_job`,
`quarry.app.submit.start_job`: the same Temporal workflow, found again by its id from any door), and a
job is read as `quarry job progress | result | list` read it (`quarry.app.jobs`). A
QuarryError becomes a tool error whose text is its code, message and hint — never a traceback (an
unexpected exception reaches the client as the SDK's bare "Error executing tool …"). Errors and
everything a job tool returns pass `stores.redact.redact`, so no key reaches a client (document text
is the user's own corpus, shown as `quarry read` shows it).

The same server runs over Streamable HTTP at `/mcp` inside `quarry serve` (quarry.http.app). A job
lives on Temporal and in the job store, not in the MCP session: a client that disconnects mid-job
loses nothing, and any later session (over either transport) gets its status and result by id.
"""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import Field, ValidationError

from nodes.job.config import JOB_BOUNDS, TOOL_LIMITS, JobConfig
from nodes.policy.registry import DEFAULT_POLICY
from quarry.app.jobs import JOBS_LISTED
from quarry.app.models import (
    CollectionsResult,
    DenseBuildStarted,
    DenseBuildStatus,
    DocumentResult,
    JobList,
    JobResult,
    JobStarted,
    JobStatus,
    Marked,
    SearchResult,
    Sent,
    SteerAccepted,
)
from quarry.app.requests import JobRequest
from quarry.app.service import QuarryService
from stores.errors import QuarryError
from stores.redact import redact

DEFAULTS = JobConfig()
_JOB = JobRequest.model_fields  # start_job's parameters are described once, by the job request
WAIT_S = 60.0  # wait_for_job's default wait: about what a client's tool call tolerates
WAIT_MAX_S = 600.0  # the longest one wait_for_job call blocks (a client's tool-call timeout is often shorter)
WAIT_POLL_S = 1.0  # how often wait_for_job looks at the job (and sends a progress notification)
INSTRUCTIONS = (
    "Quarry searches collections of documents the user ingested. Start with list_collections, then "
    "search(collection, query); page a ranking with read_search_results(search_id, offset, limit) "
    "and read a document with read_document(collection, docid). For a research question that needs "
    "many searches, start_job(collection, intent) runs a durable search job: wait_for_job(job_id) "
    "until finished is true (or poll job_status), then job_result(job_id). A job survives this "
    "session: its id is enough to get its result later. Every docid returned exists in the collection. "
    "build_dense_index(collection) builds the index the semantic channel searches in full (poll "
    "dense_build_status(build_id))."
)


# A resource whose collection, document or job does not exist: the SDK's "not found" resource error
# (mcp 2.x answers it with -32602 per SEP-2164, the spec's successor of -32002), not a crash.
NOT_FOUND = frozenset({"no_collection", "bad_name", "unknown_docid", "unknown_job"})


def package_version() -> str:
    """Quarry's installed version, which the server reports in its `serverInfo`."""
    try:
        return version("quarry")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def error_text(err: QuarryError) -> str:
    """A QuarryError as the text a client reads: code, message and hint, with no key in it."""
    return redact(f"{err.code}: {err.message}\nHint: {err.hint}")


def tool_error(err: QuarryError) -> Exception:
    """A QuarryError as the SDK's anticipated tool error: `is_error` with code, message and hint."""
    return ToolError(error_text(err))


def resource_error(err: QuarryError) -> ResourceError:
    """A QuarryError as the SDK's anticipated resource error (no traceback in the server's log):
    "not found" for a collection, document or job that does not exist."""
    kind = ResourceNotFoundError if err.code in NOT_FOUND else ResourceError
    return kind(error_text(err))


def arguments_error(tool: str, invalid: ValidationError) -> QuarryError:
    """Arguments that fail a tool's input schema as one readable line per tool call (which
    argument, what it should be), instead of pydantic's report with its links and input dumps."""
    said = []
    for e in invalid.errors():
        field = ".".join(str(part) for part in e["loc"]) or "the arguments"
        msg = str(e["msg"])
        if e["type"] == "missing":
            said.append(f"{field} is required")
        elif msg.startswith("Input "):
            said.append(f"{field} {msg[len('Input ') :]}")
        else:
            said.append(f"{field}: {msg}")
    return QuarryError(
        "bad_arguments",
        f"{tool}: " + "; ".join(said),
        "call it again with the types its input schema states (tools/list shows them)",
    )


class QuarryMCPServer(MCPServer):
    """The SDK's server, with a tool's argument errors said in one line (`arguments_error`)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            if isinstance(err.__cause__, ValidationError):
                raise tool_error(arguments_error(name, err.__cause__)) from err.__cause__
            raise


def progress_message(status: JobStatus) -> str:
    """One line a client shows while wait_for_job waits: round, step and the current top 3."""
    top = ", ".join(str(t.get("docid")) for t in status.top[:3])
    where = f"round {status.round}" + (f" · {status.node}" if status.node else "")
    return f"{status.status} · {where}" + (f" · top: {top}" if top else "")


def build_server(address: str | None = None) -> Any:
    """The MCP server (an `mcp.server.mcpserver.MCPServer`) with Quarry's tools and resources.
    `address` is the Temporal frontend the job tools talk to (None: the rule every command uses)."""
    server = QuarryMCPServer("quarry", instructions=INSTRUCTIONS, version=package_version())
    service = QuarryService(address, door="mcp")
    _corpus_tools(server, service)
    _job_tools(server, service)
    _resources(server, service)
    return server


def translated(fn):  # a QuarryError leaves as a tool error, never as a traceback
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except QuarryError as err:
            raise tool_error(err) from None

    return call


def as_resource(fn):  # a QuarryError leaves as a resource error, never as a traceback
    import functools

    @functools.wraps(fn)
    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except QuarryError as err:
            raise resource_error(err) from None

    return read


# Long: one nested function per MCP tool, registered where it is declared: a list read tool by tool.
def _corpus_tools(server: Any, service: QuarryService) -> None:
    """The tools over collections: list, search, page a ranking, read a document, build dense vectors."""

    @server.tool()
    @translated
    def list_collections() -> CollectionsResult:
        """The collections you can search (their names are the `collection` argument of the other tools)."""
        return service.list_collections()

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

        try:
            return service.search(collection, query, channel, offset, limit)
        except QueryProblem as problem:  # said in this door's syntax
            raise problem.for_mcp(collection) from None

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
        return service.read_search_results(search_id, offset, limit)

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
        return service.read_document(collection, docid, offset, limit)

    @server.tool()
    @translated
    def build_dense_index(collection: str) -> DenseBuildStarted:
        """Start building the collection's dense (MiniLM) index, which the "semantic" channel
        searches in full (without it, semantic search re-scores the top lexical hits only). It runs
        as durable work on the home's workers and survives this session; the build_id comes back at
        once (reused true: the index is current, nothing to build). Poll dense_build_status(build_id)."""
        return service.build_dense_index(collection)

    @server.tool()
    @translated
    def dense_build_status(build_id: str) -> DenseBuildStatus:
        """Where a dense index build stands: stage, batches and chunks done of all, chunks/s,
        seconds left; finished is true once it has ended (status completed, failed or cancelled)."""
        return service.dense_build_status(build_id)


# Long: one nested function per MCP tool, registered where it is declared: a list read tool by tool.
def _job_tools(server: Any, service: QuarryService) -> None:
    """The tools over jobs: start, status, wait, result, steer, stop, cancel, mark, list."""

    @server.tool()
    @translated
    def start_job(
        collection: str,
        intent: Annotated[str, Field(description=_JOB["intent"].description)],
        mode: Literal["list", "answer"] = "list",
        policy: Annotated[str, Field(description=_JOB["policy"].description)] = DEFAULT_POLICY,
        budget_seconds: Annotated[
            float,
            Field(ge=JOB_BOUNDS.min_seconds, le=JOB_BOUNDS.max_seconds, description=_JOB["budget_seconds"].description),
        ] = DEFAULTS.max_seconds,
        model: Annotated[str | None, Field(description=_JOB["model"].description)] = None,
    ) -> JobStarted:
        """Start a durable search job and return its job_id at once: mode "list" finds ranked
        documents with evidence per requirement, "answer" writes an answer citing them. The job
        runs on a worker and survives this session; wait_for_job(job_id) or poll job_status(job_id)
        until finished, then job_result(job_id)."""
        # Built unvalidated: the service's own checks give this door its one message per problem.
        request = JobRequest.model_construct(
            collection=collection, intent=intent, mode=mode, policy=policy, budget_seconds=budget_seconds, model=model
        )
        return service.start_job(request)

    @server.tool()
    @translated
    def job_status(job_id: str) -> JobStatus:
        """Where a job is: status, round, the step running, its current top 5 and budget used.
        finished is true once it has ended; then call job_result."""
        return service.job_status(job_id)

    @server.tool()
    async def wait_for_job(
        job_id: str,
        ctx: Context,
        timeout_s: Annotated[
            float, Field(gt=0, le=WAIT_MAX_S, description=f"How long to wait at most (≤ {WAIT_MAX_S:g} s)")
        ] = WAIT_S,
    ) -> JobStatus:
        """Wait until a job has finished or timeout_s has passed, sending progress notifications
        (round, step, top documents) meanwhile; returns its status either way — finished false
        means it is still running: call wait_for_job again. Then job_result(job_id)."""
        start = time.monotonic()
        while True:
            try:
                status = await anyio.to_thread.run_sync(service.job_status, job_id)
            except QuarryError as err:
                raise tool_error(err) from None
            elapsed = time.monotonic() - start
            if status.finished or elapsed >= timeout_s:
                return status
            await ctx.report_progress(min(elapsed, timeout_s), timeout_s, redact(progress_message(status)))
            await anyio.sleep(min(WAIT_POLL_S, max(0.0, timeout_s - elapsed)))

    @server.tool()
    @translated
    def job_result(job_id: str) -> JobResult:
        """A finished job's result: the ranked documents with an evidence quote per requirement
        (and lines to read_document), or the cited answer, plus BibTeX. A job still running is
        an error saying so: wait_for_job first."""
        return service.job_result(job_id)

    @server.tool()
    @translated
    def steer_job(
        job_id: str,
        text: Annotated[str, Field(description='One requirement or exclusion, e.g. "not surveys" or "2019-2023"')],
    ) -> SteerAccepted:
        """Add a requirement or exclusion to a running job; it applies from the job's next round (one more
        round when the job is in its last planned one), and its final list honours it."""
        return service.steer_job(job_id, text)

    @server.tool()
    @translated
    def stop_job(job_id: str) -> Sent:
        """Ask a running job to answer now with what it has found (it ends as stopped, with a result)."""
        return service.stop_job(job_id)

    @server.tool()
    @translated
    def cancel_job(job_id: str) -> Sent:
        """Cancel a running job at once; it keeps its best result so far and ends as cancelled."""
        return service.cancel_job(job_id)

    @server.tool()
    @translated
    def mark_document(
        job_id: str,
        docid: str,
        relevant: Annotated[bool, Field(description="True: it meets the job's intent; false: it does not")],
    ) -> Marked:
        """Record the user's judgement of one document for a job's intent; `quarry tune NAME --self`
        learns the collection's ranking from such marks. Only mark what the user said."""
        return service.mark(job_id, docid, relevant)

    @server.tool()
    @translated
    def list_jobs(
        limit: Annotated[int, Field(ge=1, le=1000, description="How many jobs, newest first")] = JOBS_LISTED,
        status: Annotated[str | None, Field(description="Only jobs with this status")] = None,
        collection: Annotated[str | None, Field(description="Only jobs on this collection")] = None,
    ) -> JobList:
        """This Quarry home's jobs, newest first, with their status (started from any door)."""
        return service.list_jobs(limit, status, collection)

    # -- resources -------------------------------------------------------------------------------


def _resources(server: Any, service: QuarryService) -> None:
    """The resources: a document's text, a job's result and its Markdown report."""

    @server.resource("quarry://{collection}/{docid}", name="document", mime_type="text/plain")
    @as_resource
    def document(collection: str, docid: str) -> str:
        """A document of a collection as numbered lines (its first page: read_document pages further)."""
        page = service.read_document(collection, docid, 1, TOOL_LIMITS.read_limit_max)
        lines = "\n".join(f"{line.number}\t{line.text}" for line in page.lines)
        more = f"\n… {page.total_lines - page.offset - len(page.lines) + 1} more lines" if page.next_offset else ""
        return f"{page.title}\n\n{lines}{more}"

    @server.resource("quarry://jobs/{job_id}/result", name="job result", mime_type="application/json")
    @as_resource
    def job_result_resource(job_id: str) -> str:
        """A finished job's result as JSON (what job_result returns)."""
        return service.job_result(job_id).model_dump_json(indent=1)

    @server.resource("quarry://jobs/{job_id}/report", name="job report", mime_type="text/markdown")
    @as_resource
    def job_report(job_id: str) -> str:
        """A finished job's report in Markdown (what `quarry job export --format markdown` writes)."""
        return service.job_export(job_id, "markdown")


def serve_stdio(address: str | None = None) -> None:
    """Run the server over stdin/stdout until the client closes them (what `quarry mcp` does)."""
    build_server(address).run("stdio")
