"""Spans for tool calls and LLM calls, named and attributed per the OpenTelemetry GenAI conventions.

Why a wrapper: every tool call in Quarry must be traced the same way (`execute_tool {name}`,
`gen_ai.*` attributes, failures as ERROR spans) so trace summaries and recall tiers can be
computed from any trace. Quarry-specific attributes get a `quarry.` prefix to stay out of the
standard namespaces. A `tracer` may be passed in, so tests use their own provider instead of
the process-global one.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer, TracerProvider

TRACER_NAME = "quarry"

_PRIMITIVES = (str, bool, int, float)


def get_tracer(provider: TracerProvider | None = None) -> Tracer:
    """The "quarry" tracer from `provider`, or from the global provider when None."""
    if provider is None:
        return trace.get_tracer(TRACER_NAME)
    return provider.get_tracer(TRACER_NAME)


def _attr_value(value: Any) -> Any:
    """OTel drops values that are not primitives or sequences of one primitive type; keep them as text.

    Containers become JSON text (readable in any backend), anything else its `str()`.
    """
    if isinstance(value, _PRIMITIVES):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, _PRIMITIVES) for v in value):
        if len({type(v) for v in value}) <= 1:
            return list(value)
    return json.dumps(value, default=str, ensure_ascii=False) if isinstance(value, (dict, list, tuple)) else str(value)


def quarry_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Prefix keys with `quarry.` unless already dotted (namespaced); drop None values."""
    return {
        (key if "." in key else f"quarry.{key}"): _attr_value(value)
        for key, value in attributes.items()
        if value is not None
    }


@contextmanager
def _span(name: str, attributes: dict[str, Any], tracer: Tracer | None) -> Iterator[Span]:
    """Start `name` as the current span; on an exception record it, mark ERROR, re-raise."""
    tracer = tracer or get_tracer()
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise


@contextmanager
def tool_span(tool_name: str, *, call_id: str | None = None, job_id: str | None = None,
              tracer: Tracer | None = None, **attributes: Any) -> Iterator[Span]:
    """Trace one tool call as `execute_tool {tool_name}`; yields the span for result attributes.

    `call_id` defaults to a fresh uuid4 hex (the GenAI convention wants one per call); extra
    keyword attributes become `quarry.<key>` unless the key is already dotted.
    """
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.call.id": call_id or uuid.uuid4().hex,
    }
    if job_id is not None:
        attrs["quarry.job_id"] = job_id
    attrs.update(quarry_attributes(attributes))
    with _span(f"execute_tool {tool_name}", attrs, tracer) as span:
        yield span


@contextmanager
def llm_span(model: str, *, tracer: Tracer | None = None, **attributes: Any) -> Iterator[Span]:
    """Trace one chat-model call as `chat {model}`; pair with `record_usage` for token counts."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
    attrs.update(quarry_attributes(attributes))
    with _span(f"chat {model}", attrs, tracer) as span:
        yield span


def record_usage(span: Span, input_tokens: int | None, output_tokens: int | None) -> None:
    """Set `gen_ai.usage.input_tokens/output_tokens`; unknown counts (None) are left unset."""
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", int(input_tokens))
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", int(output_tokens))


def current_trace_id() -> str | None:
    """The current span's trace id as 32 hex digits (to store with a job), or None outside a span."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None
