"""One `invoke_agent quarry` span per job, parent of everything the job does.

A job outlives any one process: it is submitted by a CLI, run by activities on one or more
workers, across continue-as-new runs, and may be resumed by a worker that was not born when it
started. No process can hold its span open for the whole job. So the span's identity is fixed
when the job is submitted (`new_agent_trace`: trace id, span id, start time, carried in the job's
input), everything is started *under* that identity (`agent_context`: the client's
`StartWorkflow` span, and through Temporal's header propagation every workflow, activity, node,
tool and model span), and the span itself is emitted once, when the job finishes
(`emit_agent_span`, from the final activity), with the intent as its input, the ranked ids or
the answer as its output, and a status. Backends then show one agent span whose children span
the whole job.

The span starts when the job starts *running* — the workflow's first task on a worker, which the
workflow adds to the identity as `run_start_ns` — not at submission: a job queued behind a worker's
warm-up (or with no worker at all) is not yet the agent at work, and a 3.8 s job once showed as
28.6 s. The wait is kept as `quarry.wait_for_worker_ms`; the submission's own spans (`quarry run`,
`StartWorkflow`) stay in the trace, under the agent span, a moment before it starts.
"""

from __future__ import annotations

import contextvars
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags, Tracer

from observability.conventions import (
    AGENT_NAME,
    CONVERSATION_ID,
    INPUT_MESSAGES,
    KIND,
    OI_INPUT,
    OI_INPUT_MIME,
    OI_KIND,
    OI_OUTPUT,
    OI_OUTPUT_MIME,
    OPERATION,
    OUTPUT_MESSAGES,
    as_json,
    clip,
    messages,
)
from observability.tool_spans import get_tracer
from stores.job_status import JobStatus

AGENT = "quarry"
_forced: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("quarry_forced_ids", default=None)


@dataclass(frozen=True)
class AgentTrace:
    """The job's agent span identity (hex ids: JSON-safe in Temporal payloads), its submission
    time and, once a worker runs it, when the workflow started running."""

    trace_id: str
    span_id: str
    start_ns: int
    run_start_ns: int | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> AgentTrace | None:
        if not raw:
            return None
        run = raw.get("run_start_ns")
        return cls(str(raw["trace_id"]), str(raw["span_id"]), int(raw["start_ns"]), int(run) if run else None)

    @property
    def span_start_ns(self) -> int:
        """When the agent span starts: the run's start, or submission for a job that never ran."""
        return self.run_start_ns if self.run_start_ns and self.run_start_ns >= self.start_ns else self.start_ns

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def new_agent_trace() -> AgentTrace:
    return AgentTrace(secrets.token_hex(16), secrets.token_hex(8), time.time_ns())


def with_run_start(trace_ref: Mapping[str, Any] | None, run_start_s: float) -> dict[str, Any] | None:
    """The identity dict a workflow hands its final activity: `run_start_s` (the workflow's first
    run, in seconds, `workflow.now()`) added. Plain dict work: it runs inside the workflow."""
    if not trace_ref:
        return None
    return dict(trace_ref) | {"run_start_ns": int(run_start_s * 1_000_000_000)}


def agent_context(ref: AgentTrace) -> otel_context.Context:
    """A context whose current span is the (not yet emitted) agent span, to start children in."""
    parent = SpanContext(
        int(ref.trace_id, 16), int(ref.span_id, 16), is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(NonRecordingSpan(parent), otel_context.Context())


@contextmanager
def under_agent(ref: AgentTrace | None) -> Iterator[None]:
    """Run the block with the agent span as the current span (a no-op without one)."""
    if ref is None:
        yield
        return
    token = otel_context.attach(agent_context(ref))
    try:
        yield
    finally:
        otel_context.detach(token)


class ForcedIds(IdGenerator):
    """Ids from `inner`, except while `emit_agent_span` asks for the ids fixed at submission."""

    def __init__(self, inner: IdGenerator) -> None:
        self.inner = inner

    def generate_trace_id(self) -> int:
        forced = _forced.get()
        return forced[0] if forced else self.inner.generate_trace_id()

    def generate_span_id(self) -> int:
        forced = _forced.get()
        return forced[1] if forced else self.inner.generate_span_id()


def emit_agent_span(
    ref: AgentTrace,
    *,
    job_id: str,
    intent: str,
    output: Mapping[str, Any],
    status: str,
    error: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    tracer: Tracer | None = None,
) -> None:
    """Emit the job's `invoke_agent quarry` span with the identity fixed at submission.

    `output` is what the job returned to the user: `answer` text and/or `ranked` docids. A
    provider without `ForcedIds` (not set up by Quarry) still gets a correct span, only under a
    fresh id, which is better than none.
    """
    answer = str(output.get("answer") or "")
    ranked = [str(d) for d in output.get("ranked", [])]
    out_text = answer if answer else as_json(ranked)
    attrs: dict[str, Any] = {
        OPERATION: "invoke_agent",
        AGENT_NAME: AGENT,
        CONVERSATION_ID: job_id,
        "quarry.job_id": job_id,
        "quarry.status": status,
        OI_KIND: KIND.AGENT.value,
        "agent.name": AGENT,
        "session.id": job_id,
        INPUT_MESSAGES: messages("user", intent),
        OUTPUT_MESSAGES: messages("assistant", out_text),
        OI_INPUT: clip(intent),
        OI_INPUT_MIME: "text/plain",
        OI_OUTPUT: clip(answer) if answer else as_json({"ranked": ranked}),
        OI_OUTPUT_MIME: "text/plain" if answer else "application/json",
        "quarry.ranked_count": len(ranked),
    }
    if ref.span_start_ns != ref.start_ns:
        attrs["quarry.wait_for_worker_ms"] = round((ref.span_start_ns - ref.start_ns) / 1e6, 3)
    attrs.update(attributes or {})
    token = _forced.set((int(ref.trace_id, 16), int(ref.span_id, 16)))
    try:
        span = (tracer or get_tracer()).start_span(
            f"invoke_agent {AGENT}",
            context=otel_context.Context(),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            start_time=ref.span_start_ns,
        )
    finally:
        _forced.reset(token)
    if status == JobStatus.FAILED:
        span.set_attribute("error.type", (error or "JobFailed").split(":", 1)[0][:100])
        span.set_status(Status(StatusCode.ERROR, clip(error or "the job failed", 500)))
    elif status == JobStatus.TERMINATED:  # cut off from outside: the agent did not finish its work
        span.set_attribute("error.type", "JobTerminated")
        span.set_status(Status(StatusCode.ERROR, clip(error or "the job was terminated", 500)))
    else:
        span.set_status(Status(StatusCode.OK))
    span.end()
