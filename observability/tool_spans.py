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

from observability.conventions import (
    KIND,
    OI_INPUT,
    OI_INPUT_MIME,
    OI_KIND,
    OI_OUTPUT,
    OI_OUTPUT_MIME,
    TOOL_ARGUMENTS,
    TOOL_RESULT,
    TOOL_TYPE,
    as_json,
    clip,
    retrieved_documents,
)

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
    if (
        isinstance(value, (list, tuple))
        and all(isinstance(v, _PRIMITIVES) for v in value)
        and len({type(v) for v in value}) <= 1
    ):
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
    """Start `name` as the current span; OK when the block ends, unless it marked itself ERROR;
    on an exception record it, mark ERROR with `error.type`, re-raise."""
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
        status = getattr(span, "status", None)  # an SDK span has one; the API's Span type does not say so
        if status is None or status.status_code is StatusCode.UNSET:
            span.set_status(Status(StatusCode.OK))


@contextmanager
def tool_span(
    tool_name: str,
    *,
    call_id: str | None = None,
    job_id: str | None = None,
    tracer: Tracer | None = None,
    tool_type: str = "function",
    arguments: Mapping[str, Any] | None = None,
    kind: str | None = None,
    **attributes: Any,
) -> Iterator[Span]:
    """Trace one tool call as `execute_tool {tool_name}`; yields the span for result attributes.

    `tool_type` is the GenAI `gen_ai.tool.type`: `function` for the agent's tools, `datastore` for
    a store call made on the job's behalf. `arguments` are recorded as the opt-in content
    attribute `gen_ai.tool.call.arguments` (and OpenInference `input.value`), truncated at
    `conventions.CONTENT_CAP`. `kind` is the OpenInference span kind (TOOL unless RETRIEVER).
    `call_id` defaults to a fresh uuid4 hex (the GenAI convention wants one per call); extra
    keyword attributes become `quarry.<key>` unless the key is already dotted.
    """
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.call.id": call_id or uuid.uuid4().hex,
        TOOL_TYPE: tool_type,
        OI_KIND: kind or KIND.TOOL.value,
        "tool.name": tool_name,
    }
    if arguments is not None:
        text = as_json(dict(arguments))
        attrs.update({TOOL_ARGUMENTS: text, OI_INPUT: text, OI_INPUT_MIME: "application/json", "tool.parameters": text})
    if job_id is not None:
        attrs["quarry.job_id"] = job_id
    attrs.update(quarry_attributes(attributes))
    with _span(f"execute_tool {tool_name}", attrs, tracer) as span:
        yield span


def record_tool_result(span: Span, text: str, hits: list[tuple[str, float]] | None = None) -> None:
    """The tool's result as the opt-in `gen_ai.tool.call.result` (and OpenInference output), and
    for a retrieval the returned docids with their scores as OpenInference documents."""
    text = clip(text)
    span.set_attribute(TOOL_RESULT, text)
    span.set_attribute(OI_OUTPUT, text)
    span.set_attribute(OI_OUTPUT_MIME, "text/plain")
    for key, value in retrieved_documents(hits or []).items():
        span.set_attribute(key, value)


@contextmanager
def node_span(node: str, *, job_id: str | None, round_no: int | None, tracer: Tracer | None = None) -> Iterator[Span]:
    """One graph node's work (an OpenInference CHAIN): tool, store and model spans of the node
    sit under it, and `quarry.round` lets a trace be read per round."""
    attrs = {OI_KIND: KIND.CHAIN.value, "quarry.node": node, "quarry.job_id": job_id, "quarry.round": round_no}
    with _span(f"node {node}", {k: v for k, v in attrs.items() if v is not None}, tracer) as span:
        yield span


@contextmanager
def turn_span(turn: int, *, job_id: str | None, tracer: Tracer | None = None) -> Iterator[Span]:
    """One ReAct turn (an OpenInference AGENT span): its `chat` call sits under it here, and the
    turn's `execute_tool` spans join it from the next activity through `joined(span_ref(span))`,
    so a trace viewer shows the loop turn by turn, not a flat list of calls."""
    attrs = {OI_KIND: KIND.AGENT.value, "quarry.turn": turn, "quarry.job_id": job_id}
    with _span(f"react turn {turn}", {k: v for k, v in attrs.items() if v is not None}, tracer) as span:
        yield span


def span_ref(span: Span) -> dict[str, str] | None:
    """A span's identity as plain strings, to keep in a job's state (None for a span not recorded)."""
    ctx = span.get_span_context()
    if not ctx.is_valid:
        return None
    return {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}


@contextmanager
def joined(ref: Mapping[str, str] | None) -> Iterator[None]:
    """Make the span `ref` names (see `span_ref`, possibly ended, in another process) the parent
    of the spans started inside; without a ref, nothing changes."""
    try:
        ctx = trace.SpanContext(
            int(ref["trace_id"], 16), int(ref["span_id"], 16), is_remote=True, trace_flags=trace.TraceFlags(1)
        ) if ref else None  # fmt: skip
    except (KeyError, TypeError, ValueError):
        ctx = None
    if ctx is None or not ctx.is_valid:
        yield
        return
    with trace.use_span(trace.NonRecordingSpan(ctx), end_on_exit=False):
        yield


@contextmanager
def llm_span(model: str, *, tracer: Tracer | None = None, **attributes: Any) -> Iterator[Span]:
    """Trace one chat-model call as `chat {model}`; pair with `record_usage` for token counts."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        OI_KIND: KIND.LLM.value,
        "llm.model_name": model,
    }
    attrs.update(quarry_attributes(attributes))
    with _span(f"chat {model}", attrs, tracer) as span:
        yield span


def record_usage(span: Span, input_tokens: int | None, output_tokens: int | None) -> None:
    """Set `gen_ai.usage.input_tokens/output_tokens`; unknown counts (None) are left unset."""
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", int(input_tokens))
        span.set_attribute("llm.token_count.prompt", int(input_tokens))
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", int(output_tokens))
        span.set_attribute("llm.token_count.completion", int(output_tokens))
    if input_tokens is not None and output_tokens is not None:
        span.set_attribute("llm.token_count.total", int(input_tokens) + int(output_tokens))


def record_model_messages(span: Span, sent: list[tuple[str, Any]], reply: Any, tool_calls: Any = None) -> None:
    """The conversation sent and the reply, as the opt-in GenAI message attributes and
    OpenInference input/output (each truncated at `conventions.CONTENT_CAP`; keys were redacted
    from the reply before it got here)."""
    roles = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
    sent_json = as_json(
        [
            {"role": roles.get(role, role), "parts": [{"type": "text", "content": clip(str(text), 1000)}]}
            for role, text in sent
        ]
    )
    parts: list[dict[str, Any]] = [{"type": "text", "content": clip(str(reply))}] if reply else []
    parts += [{"type": "tool_call", "name": c.get("name"), "arguments": c.get("args")} for c in tool_calls or []]
    reply_json = as_json([{"role": "assistant", "parts": parts}])
    for key, value in (
        ("gen_ai.input.messages", sent_json),
        ("gen_ai.output.messages", reply_json),
        (OI_INPUT, sent_json),
        (OI_OUTPUT, reply_json),
    ):
        span.set_attribute(key, value)
    span.set_attribute(OI_INPUT_MIME, "application/json")
    span.set_attribute(OI_OUTPUT_MIME, "application/json")


def current_trace_id() -> str | None:
    """The current span's trace id as 32 hex digits (to store with a job), or None outside a span."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None
