"""The attribute vocabularies Quarry's spans speak, and the exporter wrapper that enforces them.

Two conventions, both on every span, so any backend reads a job:
- OpenTelemetry GenAI (`gen_ai.*`): `invoke_agent`, `execute_tool` and `chat` operations, tool
  types, usage, and the opt-in content attributes (messages, tool arguments and results).
- OpenInference (`openinference.span.kind`, `input.value`, `retrieval.documents.*`, `llm.*`),
  which Arize Phoenix and Arize read to show AGENT / TOOL / LLM / RETRIEVER / CHAIN spans.

Content (intents, queries, reasons, answers, tool arguments and results, model messages, error
text) is recorded on the span and filtered per exporter when it is exported, by the one policy in
`content_policy` (see there for the exact rule and the classification of every key). Every
exported span also gets a final status: UNSET becomes OK, or ERROR (with `error.type`) when the
span recorded an exception — Temporal's own spans included.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as GA
from opentelemetry.trace import Status, StatusCode

from observability import content_policy
from observability.content_policy import CAPTURE_ENV, capture_content, is_content  # noqa: F401 (re-exported)

CONTENT_CAP = 4000  # characters of any one content attribute (intent, arguments, result, message)
RETRIEVED_SHOWN = 20  # documents listed on a retriever span (the rest stay in the job store)

# GenAI names used here (kept as the semconv package spells them).
OPERATION, AGENT_NAME, CONVERSATION_ID = GA.GEN_AI_OPERATION_NAME, GA.GEN_AI_AGENT_NAME, GA.GEN_AI_CONVERSATION_ID
TOOL_NAME, TOOL_TYPE, TOOL_CALL_ID = GA.GEN_AI_TOOL_NAME, GA.GEN_AI_TOOL_TYPE, GA.GEN_AI_TOOL_CALL_ID
TOOL_ARGUMENTS, TOOL_RESULT = GA.GEN_AI_TOOL_CALL_ARGUMENTS, GA.GEN_AI_TOOL_CALL_RESULT
INPUT_MESSAGES, OUTPUT_MESSAGES = GA.GEN_AI_INPUT_MESSAGES, GA.GEN_AI_OUTPUT_MESSAGES
# OpenInference names.
OI_KIND, OI_INPUT, OI_OUTPUT = (
    SpanAttributes.OPENINFERENCE_SPAN_KIND,
    SpanAttributes.INPUT_VALUE,
    SpanAttributes.OUTPUT_VALUE,
)
OI_INPUT_MIME, OI_OUTPUT_MIME = SpanAttributes.INPUT_MIME_TYPE, SpanAttributes.OUTPUT_MIME_TYPE
KIND = OpenInferenceSpanKindValues


def clip(text: str, cap: int = CONTENT_CAP) -> str:
    """`text`, cut at `cap` characters with the cap named (so a reader knows it was cut)."""
    return text if len(text) <= cap else text[:cap] + f"…[truncated at {cap} characters]"


def as_json(value: Any, cap: int = CONTENT_CAP) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str), cap)


def messages(role: str, text: str) -> str:
    """One GenAI message (`gen_ai.input.messages` / `output.messages` shape) as JSON text."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": clip(text)}]}], ensure_ascii=False)


def retrieved_documents(hits: Sequence[tuple[str, float]], shown: int = RETRIEVED_SHOWN) -> dict[str, Any]:
    """OpenInference retriever attributes for the first `shown` (docid, score) pairs."""
    out: dict[str, Any] = {}
    for i, (docid, score) in enumerate(hits[:shown]):
        prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}."
        out[prefix + DocumentAttributes.DOCUMENT_ID] = str(docid)
        out[prefix + DocumentAttributes.DOCUMENT_SCORE] = float(score)
    return out


def final_status(span: ReadableSpan) -> tuple[Status, str | None]:
    """The span's status with UNSET resolved: ERROR if it recorded an exception, else OK."""
    if span.status.status_code is not StatusCode.UNSET:
        error = (span.attributes or {}).get("error.type") if span.status.status_code is StatusCode.ERROR else None
        return span.status, (str(error) if error else None)
    for event in span.events:
        if event.name == "exception":
            kind = str((event.attributes or {}).get("exception.type", "Exception"))
            return Status(StatusCode.ERROR, str((event.attributes or {}).get("exception.message", ""))[:500]), kind
    return Status(StatusCode.OK), None


def shaped(span: ReadableSpan, keep_content: bool) -> ReadableSpan:
    """A copy of `span` with its final status (and `error.type` on errors) and the content policy
    applied to its attributes, its status message and its events' attributes (an exception
    event quotes the error text). Spans are immutable once ended, hence a copy."""
    status, error_type = final_status(span)
    attrs = dict(span.attributes or {})
    if status.status_code is StatusCode.ERROR:
        attrs.setdefault("error.type", error_type or "Error")
    attrs = content_policy.attributes(attrs, keep_content)
    status = content_policy.status(status, str(attrs.get("error.type") or error_type or "Error"), keep_content)
    events = [
        Event(e.name, content_policy.attributes(e.attributes or {}, keep_content), e.timestamp) for e in span.events
    ]
    same_events = all(
        dict(a.attributes or {}) == dict(b.attributes or {}) for a, b in zip(events, span.events, strict=True)
    )
    if status is span.status and attrs == dict(span.attributes or {}) and same_events:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attrs,
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class ShapingExporter(SpanExporter):
    """Wraps an exporter: every span leaves with a final status and the content policy applied."""

    def __init__(self, inner: SpanExporter, keep_content: bool) -> None:
        self.inner, self.keep_content = inner, keep_content

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([shaped(s, self.keep_content) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
