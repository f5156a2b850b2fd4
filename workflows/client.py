"""Client side: connect (with tracing), submit jobs, and talk to running jobs."""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowHistoryEventFilterType
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from workflows.job_failure import job_result
from workflows.job_input import check_job_input, migrated
from workflows.search_attributes import initial_attributes
from workflows.search_job import SearchJob
from workflows.shared import JobInput, task_queue, temporal_address, temporal_namespace, web_ui_url  # noqa: F401

AGENT_TRACE_MEMO = "quarry_agent_trace"  # the job's invoke_agent span identity, readable without a worker
STARTING_UP_WAIT_S = 30.0  # a dev server that just (re)started answers "not healthy yet" for a few seconds


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    tracing: bool = True,
    starting_up_wait_s: float = STARTING_UP_WAIT_S,
) -> Client:
    """Connect to the server. A server that is listening but cannot be connected to yet (a dev
    server answers "Frontend is not healthy yet" for a second or two after a restart) is waited
    for, up to `starting_up_wait_s`; when nothing listens, or the wait is over, the failure is
    raised at once as `ServerUnreachable` (a RuntimeError: workflows.rpc_errors maps it to
    no_server). Whether something listens is asked of the port, never read from the message."""
    from workflows.processes.dev_server import reachable
    from workflows.shared import ServerUnreachable

    plugins = []
    if tracing:
        from observability import temporal_plugin

        plugins.append(temporal_plugin())
    target = address or temporal_address()
    deadline = time.monotonic() + starting_up_wait_s
    while True:
        try:
            return await Client.connect(target, namespace=namespace or temporal_namespace(), plugins=plugins)
        except RuntimeError as err:
            if time.monotonic() > deadline or not reachable(target):
                raise ServerUnreachable(str(err), target) from err
            await asyncio.sleep(0.2)


def new_job_id() -> str:
    return "job-" + uuid.uuid4().hex[:12]


async def submit(client: Client, inp: JobInput, queue: str | None = None) -> WorkflowHandle:
    """Start a job; an unusable input (empty or oversized intent, bad budget…) is refused here.

    In the Web UI the job shows its collection and intent (static summary and details); where the
    server knows Quarry's search attributes (the embedded dev server registers them) the job is
    also indexed by collection, policy, round and status, so it can be filtered there and with
    `temporal workflow list --query 'QuarryCollection="NAME"'`. A server without them still runs
    the job, unindexed. The job's `invoke_agent` span identity is fixed here (unless the caller
    fixed it) and the workflow is started under it, so every span of the job descends from it.
    """
    inp = migrated(inp)  # a caller still naming budget_seconds: the budget goes in the config
    check_job_input(inp)
    from observability.agent_span import AgentTrace, new_agent_trace, under_agent

    if inp.trace is None:
        inp = replace(inp, trace=new_agent_trace().to_dict())
    with under_agent(AgentTrace.from_dict(inp.trace)):
        return await _start(client, inp, queue)


SUMMARY_CHARS = 100  # the Web UI list's Summary column: collection, mode and intent, cut at a word
SUMMARY_BYTES = 200  # Temporal's limit for a static summary
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")
_LOOPBACK = ("127.", "localhost", "[::1]", "::1")


def _md(text: str) -> str:
    """`text` shown as written by the Web UI, which renders summaries and details as Markdown."""
    from stores.errors import printable

    return _MARKDOWN.sub(r"\\\1", printable(text))


def ui_shows_content(address: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether the Web UI's summary and details may carry the intent: the content policy of
    trace export (observability.content_policy) applied to the server's UI — on by default when the
    server is on this machine (like the local trace files), off for a remote one; the standard
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` turns it on or off either way."""
    from observability.content_policy import capture_content

    return capture_content(os.environ if env is None else env, local_file=address.startswith(_LOOPBACK))


def ui_summary(inp: JobInput, *, content: bool = True) -> str:
    """The job's one-line summary for the Web UI's list, "cacm · list · time sharing systems…":
    its collection and mode, then (when `content`) the intent, a researcher's own words, on one
    line, cut at a word with an ellipsis so the line stays near SUMMARY_CHARS and within
    Temporal's 200-byte limit; control characters made visible and Markdown escaped (the UI
    renders the summary as Markdown, so `[x](y)` or `**` in an intent must show as written)."""
    from stores.errors import printable

    head = f"{_md(inp.collection)} · {inp.mode}"
    if not content:
        return head
    text = " ".join(printable(inp.intent).split())
    room = max(SUMMARY_CHARS - len(head) - 3, 20)
    while True:
        cut = (
            text
            if len(text) <= room
            else (text[: room + 1].rsplit(" ", 1)[0].rstrip(" ,;:") if " " in text[: room + 1] else text[:room])
        )
        shown = f"{head} · " + _md(cut) + ("…" if len(cut) < len(text) else "")
        if len(shown.encode()) <= SUMMARY_BYTES:
            return shown
        room = room * 3 // 4  # many multi-byte characters or escapes: shorter


def ui_details(inp: JobInput, *, content: bool = True) -> str:
    """The job's details for the Web UI's job page (Markdown): the intent when `content`, then
    what it runs with — collection, mode, policy, search profile, rounds and budgets."""
    cfg = inp.config
    budget = [f"{cfg.max_seconds:g} s"]
    if cfg.max_tokens is not None:
        budget.append(f"{cfg.max_tokens:,} tokens")
    if cfg.max_dollars is not None:
        budget.append(f"${cfg.max_dollars:g}")
    lines = [f"**intent**: {_md(inp.intent[:2000])}"] if content else []
    lines += [
        f"**collection**: {_md(inp.collection)} · **mode**: {inp.mode} · **policy**: {inp.policy}",
        f"**budget**: {', '.join(budget)} · **rounds**: up to {cfg.max_rounds} · **profile**: {cfg.profile}",
    ]
    return "\n\n".join(lines)


async def _start(client: Client, inp: JobInput, queue: str | None) -> WorkflowHandle:
    content = ui_shows_content(client.service_client.config.target_host)
    common: dict[str, Any] = dict(
        id=inp.job_id,
        task_queue=queue or task_queue(),
        static_summary=ui_summary(inp, content=content),
        static_details=ui_details(inp, content=content),
        memo={AGENT_TRACE_MEMO: inp.trace} if inp.trace else None,
    )
    # The Web UI shows a job's input as its history's first event holds it: the budget is written
    # in `budget_seconds` too (the workflow's `migrated` moves it into the config, the same value),
    # so the input shows it at the top instead of `null`.
    inp = replace(inp, budget_seconds=inp.config.max_seconds)
    try:
        return await client.start_workflow(
            SearchJob.run,
            replace(inp, indexed=True),
            **common,
            search_attributes=TypedSearchAttributes(initial_attributes(inp)),
        )
    except RPCError as err:
        # A server without Quarry's search attributes refuses them as an invalid argument; any other
        # invalid argument is refused again below, without them, and raised from there.
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        return await client.start_workflow(SearchJob.run, replace(inp, indexed=False), **common)


async def terminate_job(client: Client, job_id: str, reason: str) -> dict[str, Any] | None:
    """Terminate a job at once and return its agent span identity (kept in the workflow's memo
    at submission; None for a job started without one): a terminated workflow runs no more code,
    so whoever terminates it closes the job's trace."""
    handle = client.get_workflow_handle(job_id)
    memo = await (await handle.describe()).memo()
    await handle.terminate(reason=reason)
    trace = memo.get(AGENT_TRACE_MEMO)
    return trace if isinstance(trace, dict) else None


@dataclass(frozen=True)
class Termination:
    """How a terminated job ended: the reason its terminator gave and its agent span identity."""

    reason: str
    trace: dict[str, Any] | None


async def termination(client: Client, job_id: str) -> Termination | None:
    """The termination of a job that was terminated by anyone — `quarry job terminate`, the Web UI
    or `temporal workflow terminate` — read from its close event and memo; None for a job that
    was not terminated."""
    handle = client.get_workflow_handle(job_id)
    desc = await handle.describe()
    if desc.status != WorkflowExecutionStatus.TERMINATED:
        return None
    reason = ""
    async for event in handle.fetch_history_events(event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
        if event.HasField("workflow_execution_terminated_event_attributes"):
            reason = event.workflow_execution_terminated_event_attributes.reason
    trace = (await desc.memo()).get(AGENT_TRACE_MEMO)
    return Termination(reason or "terminated outside Quarry", trace if isinstance(trace, dict) else None)


async def result(client: Client, job_id: str) -> dict[str, Any]:
    """The job's final result; a failed job's (its workflow ended Failed) with its error `{code,
    message, hint}` and status "failed" (workflows.job_failure.job_result), not an exception."""
    return await job_result(client.get_workflow_handle(job_id))
