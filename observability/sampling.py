"""Reads are not traces: the sampler that drops Temporal's query spans.

Why: `quarry job progress`, `job watch` / `run --wait` (a progress query every second), the Web
UI's stack-trace and metadata queries all reach the worker as workflow queries, and Temporal's
OpenTelemetry interceptor traces each one — on the client (`QueryWorkflow:*`) and on the worker
(`HandleQuery:*`), as the root of a new trace when the caller had no span open. A user saw
hundreds of one-span traces per day, some red ("RPCError: Timeout expired") for polls that merely
timed out during a worker's warm-up of a job that then succeeded. A query reads state and changes
nothing, so neither side records it; signals, updates, workflows and activities are kept.

Deciding by span name at start time is the one hook that covers both sides without copying the
interceptor's private classes; the ids are still drawn (the SDK draws them before sampling), so
what a workflow's deterministic id generator hands out is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult, _get_from_env_or_default
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

# Temporal's span names for a query, as `temporalio.contrib.opentelemetry` spells them.
QUERY_SPAN_PREFIXES = ("QueryWorkflow:", "HandleQuery:")


class NoQuerySpans(Sampler):
    """Drop query spans; everything else as the configured sampler (`OTEL_TRACES_SAMPLER`,
    default parent-based always-on) decides."""

    def __init__(self, inner: Sampler | None = None) -> None:
        self.inner = inner or _get_from_env_or_default()

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state=None,
    ) -> SamplingResult:
        if name.startswith(QUERY_SPAN_PREFIXES):
            return SamplingResult(Decision.DROP)
        return self.inner.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"NoQuerySpans({self.inner.get_description()})"
