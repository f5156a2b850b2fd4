"""Prompt-cache breakpoints for providers that cache only what a request marks (Anthropic).

OpenAI, DeepSeek and vLLM cache a repeated prompt prefix by themselves; Anthropic caches only up
to blocks that carry `cache_control`, at most four per request, and reads a cached prefix on a
later request whose prefix is identical up to one of its block boundaries. Quarry's calls keep a
stable prefix — tools, the system prompt, then the task (the intent) — and a ReAct conversation
only ever grows at its end, so three breakpoints pay for themselves from the second turn on:

1. the system prompt (the tools come before it in Anthropic's prefix order, so they are cached too);
2. the first user message (the task with the intent), shared by every turn of one job;
3. the last message, so the next turn reads the whole conversation so far from the cache.

The marks are put on a copy of the messages for the one call; the stored conversation is never
changed, and other providers get their messages untouched (OpenAI-compatible servers reject
unknown block keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CACHE_CONTROL = {"type": "ephemeral"}
CACHING_PROVIDERS = ("anthropic",)  # providers that cache only marked prefixes


def _marked(message: Any) -> Any:
    """The message with its content as text blocks, the last one carrying the breakpoint."""
    content = message.content
    if isinstance(content, str):
        if not content.strip():
            return message
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        blocks = [dict(b) if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
    else:
        return message
    blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    return message.model_copy(update={"content": blocks})


def with_cache_breakpoints(messages: Sequence[Any], provider: str) -> list[Any]:
    """`messages` with the breakpoints above when `provider` caches only marked prefixes."""
    out = list(messages)
    if provider not in CACHING_PROVIDERS or not out:
        return out
    marks = set()
    if getattr(out[0], "type", "") == "system":
        marks.add(0)
    first_user = next((i for i, m in enumerate(out) if getattr(m, "type", "") == "human"), None)
    if first_user is not None:
        marks.add(first_user)
    marks.add(len(out) - 1)
    return [_marked(m) if i in marks else m for i, m in enumerate(out)]


__all__ = ["CACHE_CONTROL", "CACHING_PROVIDERS", "with_cache_breakpoints"]
