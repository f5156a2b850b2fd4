"""The one place Quarry calls a chat model: traced, metered, redacted, and parsed into types.

- `invoke` makes one call as a `chat {model}` span with the GenAI usage attributes, and turns
  any transport failure into a `ModelError` whose message names the endpoint and carries no
  credential (Temporal retries the activity; the node falls back on the last attempt).
- `structured` asks for a pydantic value by forcing a call of a tool whose schema is that value
  (portable across OpenAI, Anthropic, llama.cpp and vLLM servers), accepts the same JSON written
  as text by models that ignore tools, and sends one repair turn with the validation error
  before giving up — the caller then falls back to the heuristic decision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from nodes.job.config import ModelSettings, Price
from nodes.job.step_control import current_step, reason_text
from nodes.job.usage import Usage, usage_from_metadata
from nodes.llm.caching import with_cache_breakpoints
from nodes.llm.models import ModelSpec, endpoint
from nodes.llm.rate_limits import RATE_LIMIT_STAGE, retry_after_s, status_of, wait_out
from observability.tool_spans import llm_span, record_model_messages, record_usage
from stores.errors import QuarryError
from stores.redact import redact, shown_url

T = TypeVar("T", bound=BaseModel)
_JSON_BLOCK = re.compile(r"\{.*\}", re.S)


class ModelError(Exception):
    """A model call failed (unreachable, timed out, refused): retryable, then a fallback."""

    retryable = True  # whether another activity attempt may help (see ModelStopped)


class ModelStopped(ModelError):
    """The job stopped (budget, stop, cancellation) while a call waited out a rate limit: asking
    again in a new activity attempt would only spend what the job no longer has, so the caller
    falls back at once."""

    retryable = False


@dataclass
class ModelReply:
    message: Any  # langchain_core.messages.AIMessage
    usage: Usage


@dataclass
class Structured(Generic[T]):
    value: T | None
    usage: Usage = field(default_factory=Usage)
    error: str = ""
    repaired: bool = False


def _where(model: Any, spec: str) -> str:
    """A model's endpoint for error messages (base URL only, without any user-info or credential
    query value it carried): the one the client was given, else the one the environment gives its
    provider."""
    for attr in ("openai_api_base", "anthropic_api_url", "base_url"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return shown_url(value)
    try:
        return endpoint(ModelSpec.parse(spec))
    except QuarryError:
        return "its endpoint"


def invoke(
    model: Any,
    messages: Sequence[Any],
    *,
    spec: str,
    purpose: str,
    prices: Mapping[str, Price],
    job_id: str | None = None,
    tools: Sequence[Any] | None = None,
    tool_choice: str | None = None,
    settings: ModelSettings | None = None,
) -> ModelReply:
    """One model call (tools bound if given), traced as `chat {spec}` with token usage; a
    provider's rate limit or overload is waited out and asked again (nodes.llm.rate_limits) within
    `settings`' bounds, each wait counted in `Usage.retries`."""
    settings = settings or ModelSettings()
    provider: dict[str, Any] = {"gen_ai.provider.name": spec.split(":", 1)[0]}  # not a Python name: passed by **
    with llm_span(spec, job_id=job_id, purpose=purpose, **provider) as span:
        bound = _bound(model, tools, tool_choice, settings, spec) if tools else model
        request = with_cache_breakpoints(messages, provider["gen_ai.provider.name"])
        retries = 0
        while True:
            try:
                message = bound.invoke(request)
                break
            except Exception as exc:  # any failure of the endpoint or client: the caller decides retry/fallback
                wait = retry_after_s(exc, retries)
                if (
                    wait is not None
                    and retries < settings.rate_limit_retries
                    and wait <= settings.rate_limit_wait_max_s
                ):
                    retries += 1
                    span.add_event(
                        "rate_limited", {"http.response.status_code": status_of(exc) or 0, "quarry.wait_s": wait}
                    )
                    step = current_step()
                    step.report(RATE_LIMIT_STAGE, retries, settings.rate_limit_retries)
                    if wait_out(wait, step):
                        continue
                    span.set_attribute("quarry.model.retries", retries)
                    span.set_attribute("error.type", "ModelStopped")
                    raise ModelStopped(
                        f"{spec}: {reason_text(step.ended() or 'stopped')} while waiting out its rate limit"
                    ) from None
                text = redact(f"{spec} at {_where(model, spec)} failed: {type(exc).__name__}: {exc}")
                span.set_attribute("error.type", type(exc).__name__)
                span.set_attribute("quarry.model.retries", retries)
                raise ModelError(text[:1000]) from None
        message = _without_secrets(message)
        usage = usage_from_metadata(getattr(message, "usage_metadata", None), spec, prices)
        usage.retries = retries
        _trace_reply(span, messages, message, usage)
        return ModelReply(message, usage)


def _bound(model: Any, tools: Sequence[Any], tool_choice: str | None, settings: ModelSettings, spec: str) -> Any:
    """The model with `tools` bound (and `tool_choice`, where the client takes it)."""
    # OpenAI's strict mode: every object closed and every property required, so the
    # arguments always match the schema (opt-in: ModelSettings.strict_tools).
    strict = {"strict": True} if settings.strict_tools and spec.startswith("openai:") else {}
    try:
        return (
            model.bind_tools(list(tools), tool_choice=tool_choice, **strict)
            if tool_choice
            else model.bind_tools(list(tools), **strict)
        )
    except (NotImplementedError, TypeError, ValueError):
        return model.bind_tools(list(tools)) if tool_choice else model


def _trace_reply(span: Any, messages: Sequence[Any], message: Any, usage: Usage) -> None:
    """The call's retries, token usage, messages and tool calls on its span."""
    span.set_attribute("quarry.model.retries", usage.retries)
    record_usage(span, usage.input_tokens, usage.output_tokens)
    record_model_messages(
        span,
        [(getattr(m, "type", "user"), m.content) for m in messages if hasattr(m, "content")],
        message.content,
        getattr(message, "tool_calls", None),
    )
    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens)
    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_input_tokens)
    span.set_attribute("quarry.usage.reasoning_tokens", usage.reasoning_tokens)
    span.set_attribute("quarry.usage.dollars", usage.dollars)
    span.set_attribute("quarry.tool_calls", len(getattr(message, "tool_calls", []) or []))


def _without_secrets(message: Any) -> Any:
    """The reply with any credential removed from its text and tool arguments: model output is
    stored, traced and shown, so a key a model was tricked into repeating must stop here."""
    update: dict[str, Any] = {}
    if isinstance(message.content, str) and redact(message.content) != message.content:
        update["content"] = redact(message.content)
    calls = list(getattr(message, "tool_calls", []) or [])
    if calls:
        clean = json.loads(redact(json.dumps(calls, default=str)))
        if clean != calls:
            update["tool_calls"] = clean
    return message.model_copy(update=update) if update else message


def _candidates(message: Any, name: str) -> list[Any]:
    """Raw argument objects the reply may hold: tool calls (ours first), broken tool calls, JSON text."""
    found: list[Any] = []
    calls = list(getattr(message, "tool_calls", []) or [])
    found += [c.get("args") for c in sorted(calls, key=lambda c: c.get("name") != name)]
    for bad in getattr(message, "invalid_tool_calls", []) or []:
        found.append(bad.get("args"))
    content = getattr(message, "content", "")
    if isinstance(content, list):  # content blocks (Anthropic): keep the text parts
        content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    if isinstance(content, str) and (m := _JSON_BLOCK.search(content)):
        found.append(m.group(0))
    return found


def parse_structured(message: Any, schema: type[T]) -> tuple[T | None, str]:
    """The first argument object in the reply that validates as `schema`, or (None, why not)."""
    error = "the reply held no arguments (no tool call and no JSON object)"
    for raw in _candidates(message, schema.__name__):
        try:
            obj = json.loads(raw) if isinstance(raw, str) else raw
            # Some models wrap the arguments: {"name": "PlanOut", "arguments": {...}}.
            if (
                isinstance(obj, dict)
                and set(obj) >= {"name"}
                and isinstance(obj.get("arguments", obj.get("parameters")), dict)
            ):
                obj = obj.get("arguments", obj.get("parameters"))
            return schema.model_validate(obj), ""
        except (ValueError, TypeError, ValidationError) as exc:  # json.JSONDecodeError is a ValueError
            error = _short_error(exc)
    return None, error


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5])
    return f"{type(exc).__name__}: {exc}"[:300]


def _repair_turn(message: Any, error: str, name: str) -> list[Any]:
    """The failed reply restated as plain text, then the error: plain messages, because several
    OpenAI-compatible servers reject a tool-call turn whose content is empty."""
    from langchain_core.messages import AIMessage, HumanMessage

    raws = _candidates(message, name)
    said = raws[0] if raws else getattr(message, "content", "")
    said = said if isinstance(said, str) else json.dumps(said, ensure_ascii=False, default=str)
    return [
        AIMessage(content=(said or "(empty reply)")[:2000]),
        HumanMessage(
            content=f"That was not valid: {error}. Call {name} again with arguments that match its schema exactly."
        ),
    ]


def structured(
    model: Any,
    messages: Sequence[Any],
    schema: type[T],
    *,
    spec: str,
    purpose: str,
    prices: Mapping[str, Price],
    job_id: str | None = None,
    repairs: int = 1,
    settings: ModelSettings | None = None,
) -> Structured[T]:
    """A validated `schema` value from the model, repaired at most `repairs` times; `value` is
    None when it never validated (the caller falls back). Raises ModelError if a call fails."""
    convo = list(messages)
    usage = Usage()
    error = ""
    for attempt in range(repairs + 1):
        reply = invoke(
            model,
            convo,
            spec=spec,
            purpose=purpose,
            prices=prices,
            job_id=job_id,
            tools=[schema],
            tool_choice=schema.__name__,
            settings=settings,
        )
        usage = usage.add(reply.usage)
        value, error = parse_structured(reply.message, schema)
        if value is not None:
            return Structured(value, usage, "", attempt > 0)
        convo += _repair_turn(reply.message, error, schema.__name__)
    return Structured(None, usage, f"invalid structured output after {repairs} repair(s): {error}", repairs > 0)
