"""The one content policy every exported span goes through (GenAI "capture message content").

Why one place: spans are attributed in many modules (tools, stores, models, nodes, the agent
span, Temporal's own spans), and a rule applied at each call site is a rule someone forgets — the
search query once went to OTLP verbatim because it was a `quarry.*` attribute nobody listed. So
spans are recorded whole, and each exporter passes every span through `apply` with its own
`keep` decision (`capture_content`):

- `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: content kept everywhere (redacted);
- `=false`: content dropped everywhere, the local JSONL files included;
- unset: kept in the local JSONL files (they stay on this machine, 0600), dropped from OTLP.

What is content: user, corpus and model text — the intent, queries (also author names searched),
reasons, steering text, titles, quotes, answers, tool arguments and results, model messages —
and error text, which may echo any of them (span status messages, exception messages and stack
traces). What is not: names, counts, scores, models, job/search/call ids, rounds, and document
ids (identifiers the corpus owner chose; they are what a retriever span shows). `METADATA_KEYS`
lists every non-content key Quarry and Temporal set, so a test can check that a real job's spans
carry no key this module has not classified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Status, StatusCode

from stores.redact import redact

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# Exact keys whose values are user, document or model text.
CONTENT_KEYS = frozenset(
    {
        # OpenTelemetry GenAI opt-in content
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.prompt",
        "gen_ai.completion",
        # OpenInference
        "input.value",
        "output.value",
        "tool.parameters",
        "llm.prompts",
        "llm.input_messages",
        "llm.output_messages",
        # Quarry's own text attributes (queries and author names searched, reasons, intent, steering…)
        "quarry.query",
        "quarry.reason",
        "quarry.intent",
        "quarry.steering",
        "quarry.title",
        "quarry.quote",
        "quarry.answer",
        "quarry.text",
        "quarry.authors",
        "quarry.requirement",
        # exception events: the message and the trace both quote the error text
        "exception.message",
        "exception.stacktrace",
    }
)
# Keys ending so are content wherever they appear (indexed OpenInference lists).
CONTENT_SUFFIXES = (".document.content", ".message.content", ".message.contents", ".tool_call.function.arguments")

# Keys that are not content (checked by tests against every key a real job's spans carry).
METADATA_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.conversation.id",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.type",
        "gen_ai.request.model",
        "gen_ai.provider.name",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "openinference.span.kind",
        "input.mime_type",
        "output.mime_type",
        "tool.name",
        "agent.name",
        "session.id",
        "llm.model_name",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.token_count.total",
        "error.type",
        "exception.type",
        "exception.escaped",
        "quarry.job_id",
        "quarry.node",
        "quarry.round",
        "quarry.rounds",
        "quarry.channel",
        "quarry.search_id",
        "quarry.hits",
        "quarry.error",
        "quarry.offset",
        "quarry.limit",
        "quarry.direction",
        "quarry.documents",
        "quarry.docid",
        "quarry.lines",
        "quarry.store",
        "quarry.status",
        "quarry.collection",
        "quarry.policy",
        "quarry.ranked_count",
        "quarry.purpose",
        "quarry.tool_calls",
        "quarry.usage.reasoning_tokens",
        "quarry.usage.dollars",
        "quarry.model.retries",
        "quarry.turn",
        "quarry.wait_s",  # the rate_limited event: how long the call waited, and the status that asked it to
        "http.response.status_code",
        "quarry.wait_for_worker_ms",
        # Temporal's OpenTelemetry interceptor
        "temporalWorkflowID",
        "temporalRunID",
        "temporalActivityID",
        "temporalUpdateID",
    }
)
_DOCUMENT_META = re.compile(r"^retrieval\.documents\.\d+\.document\.(id|score)$")


def is_content(key: str) -> bool:
    """Whether attribute `key` carries user, corpus or model text (or error text quoting it)."""
    return key in CONTENT_KEYS or key.endswith(CONTENT_SUFFIXES)


def is_classified(key: str) -> bool:
    """Whether this module knows `key` (content or metadata): an unknown key is an audit gap."""
    return is_content(key) or key in METADATA_KEYS or bool(_DOCUMENT_META.match(key))


def capture_content(env: Mapping[str, str], *, local_file: bool) -> bool:
    """Whether an exporter keeps content: the standard variable when set, else only local files."""
    raw = env.get(CAPTURE_ENV, "").strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw in ("false", "0", "no"):
        return False
    return local_file


def apply(key: str, value: Any, keep: bool) -> tuple[bool, Any]:
    """The policy for one attribute: (export it?, the value to export). Content is exported only
    when `keep`, and then with credentials redacted; everything else unchanged."""
    if not is_content(key):
        return True, value
    if not keep:
        return False, None
    return True, redact(value) if isinstance(value, str) else value


def attributes(attrs: Mapping[str, Any], keep: bool) -> dict[str, Any]:
    """`attrs` with the policy applied to each key."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        export, shown = apply(key, value, keep)
        if export:
            out[key] = shown
    return out


def status(current: Status, error_type: str | None, keep: bool) -> Status:
    """A span status whose message obeys the policy: an error message may quote the query, a
    document or a model reply, so without content only the error's type is said."""
    if current.status_code is not StatusCode.ERROR or not current.description:
        return current
    if keep:
        return Status(StatusCode.ERROR, redact(current.description))
    return Status(StatusCode.ERROR, error_type or "Error")
