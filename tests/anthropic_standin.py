"""A stand-in Anthropic Messages API on loopback that enforces the wire format, for the real client path.

Quarry reaches Anthropic through langchain-anthropic → the anthropic SDK → `POST /v1/messages`;
the job finds this server only through ANTHROPIC_BASE_URL, as a user's proxy would be found. The
checks are written from Anthropic's published Messages API reference (docs.anthropic.com: "Messages",
"Tool use", "Prompt caching", "Errors"), not from what LangChain happens to send, and a request
that breaks one gets the service's own error shape — `{"type": "error", "error": {"type":
"invalid_request_error", "message": …}}` with status 400 (401 `authentication_error` without a
key) — and is kept in `rejected`, so the test that caused it fails:

- headers: a key (`x-api-key`, or `Authorization: Bearer`, which the 2.x SDK sends) and
  `anthropic-version`;
- body: `model`, `max_tokens` (≥ 1) and `messages` required; no unknown top-level field; `system`
  is a top-level string or list of text blocks, never a message role; `temperature` in [0, 1];
- messages: roles `user`/`assistant` only; consecutive turns of one role are merged (as the API
  does), after which the first turn is the user's; text blocks hold non-whitespace text;
- tools: `tool_use` only in assistant turns, each answered by a `tool_result` with its id in the
  very next user turn, tool results first in that turn and never for an id not just asked; each
  tool has a name and an object `input_schema`;
- `cache_control` is `{"type": "ephemeral"}` (optional `ttl` "5m"/"1h") on at most 4 blocks.

Prompt caching is simulated as the reference describes it: a breakpoint writes the prefix up to it
(tools, then system, then messages) to the cache when that prefix reaches the minimum cacheable
length; a later request reads the longest cached prefix that ends at one of its block boundaries
at or before its last breakpoint. Usage is computed from the request (tokens ≈ characters / 4):
`input_tokens` (after the last breakpoint), `cache_creation_input_tokens`,
`cache_read_input_tokens`; a scripted step only says what the model answers and its output tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any

from tests.openai_standin import Request, StandinServer

MAX_BREAKPOINTS = 4
MIN_CACHEABLE_TOKENS = 1024  # the reference's minimum for Sonnet/Opus-class models
TOP_LEVEL = {
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature",
    "top_k", "top_p", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
    "context_management", "cache_control", "output_config", "inference_geo",
}  # fmt: skip
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def invalid(message: str) -> tuple[int, dict[str, Any]]:
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def rate_limited(retry_after_s: int = 1) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}  # fmt: skip
    return 429, body, {"retry-after": str(retry_after_s)}


def overloaded(retry_after_s: int = 1) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return 529, body, {"retry-after": str(retry_after_s)}


def tool_use(name: str, args: dict[str, Any], output_tokens: int = 40, *, text: str = "") -> dict[str, Any]:
    """A scripted assistant turn that calls one tool (`stop_reason: tool_use`)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": args})
    return {"content": content, "stop_reason": "tool_use", "output_tokens": output_tokens}


def text_reply(text: str, output_tokens: int = 30, stop_reason: str = "end_turn") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "output_tokens": output_tokens}


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, sort_keys=True, ensure_ascii=False)) // 4)


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _canonical(block: dict[str, Any]) -> dict[str, Any]:
    """A block as the cache sees it: without its breakpoint, string content as the one text block
    it is shorthand for (in a tool result too)."""
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if out.get("type") == "tool_result" and "content" in out:
        out["content"] = [{k: v for k, v in b.items() if k != "cache_control"} for b in _blocks(out["content"])]
    return out


class AnthropicStandin(StandinServer):
    chat_path = "/v1/messages"
    url_suffix = ""  # ANTHROPIC_BASE_URL is the host; the SDK adds /v1/messages

    def __init__(self, steps, models=("claude-standin",)) -> None:
        super().__init__(steps, models)
        self.cache: dict[str, int] = {}  # prefix hash -> its tokens
        self.usages: list[dict[str, int]] = []

    # --- the reference's rules -------------------------------------------------------------
    def reject(self, request: Request) -> tuple[int, Any] | None:
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not (request.headers.get("x-api-key") or bearer):
            return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        if not request.headers.get("anthropic-version"):
            return invalid("anthropic-version: header is required")
        body = request.body
        if not isinstance(body, dict):
            return invalid("request body must be a JSON object")
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                return invalid(f"{field}: Field required")
        if extra := sorted(set(body) - TOP_LEVEL):
            return invalid(f"{extra[0]}: Extra inputs are not permitted")
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return invalid("max_tokens: must be an integer of at least 1")
        temperature = body.get("temperature")
        if temperature is not None and not 0.0 <= float(temperature) <= 1.0:
            return invalid("temperature: range: 0..1")
        return self._system_problem(body.get("system")) or self._tools_problem(body) or self._messages_problem(body)

    def _system_problem(self, system: Any) -> tuple[int, Any] | None:
        if system is None or isinstance(system, str):
            return None
        if not isinstance(system, list) or not all(isinstance(b, dict) and b.get("type") == "text" for b in system):
            return invalid("system: Input should be a valid string or a list of text blocks")
        return self._text_problem(system, "system")

    def _tools_problem(self, body: dict[str, Any]) -> tuple[int, Any] | None:
        for i, tool in enumerate(body.get("tools") or []):
            if not TOOL_NAME.match(str(tool.get("name", ""))):
                return invalid(f"tools.{i}.name: String should match pattern '{TOOL_NAME.pattern}'")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return invalid(f"tools.{i}.input_schema: type must be 'object'")
        choice = body.get("tool_choice")
        if choice is not None and choice.get("type") not in ("auto", "any", "tool", "none"):
            return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
        if choice and choice.get("type") == "tool" and not choice.get("name"):
            return invalid("tool_choice.name: Field required")
        marked = [b for b in self._all_blocks(body) if "cache_control" in b]
        if len(marked) > MAX_BREAKPOINTS:
            return invalid(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}.")  # fmt: skip
        for b in marked:
            cc = b["cache_control"]
            if not isinstance(cc, dict) or cc.get("type") != "ephemeral" or cc.get("ttl", "5m") not in ("5m", "1h"):
                return invalid("cache_control: Input tag does not match the expected tag 'ephemeral'")
        return None

    def _text_problem(self, blocks: list[dict[str, Any]], where: str) -> tuple[int, Any] | None:
        for b in blocks:
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                return invalid(f"{where}: text content blocks must contain non-whitespace text")
        return None

    def _messages_problem(self, body: dict[str, Any]) -> tuple[int, Any] | None:
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            return invalid("messages: at least one message is required")
        turns: list[tuple[str, list[dict[str, Any]]]] = []
        for i, m in enumerate(messages):
            role = m.get("role")
            if role == "system":
                return invalid(f'messages.{i}.role: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.')  # fmt: skip
            if role not in ("user", "assistant"):
                return invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            blocks = _blocks(m.get("content"))
            if not blocks:
                return invalid(f"messages.{i}: all messages must have non-empty content")
            if problem := self._text_problem(blocks, f"messages.{i}.content"):
                return problem
            if turns and turns[-1][0] == role:  # the API merges consecutive turns of one role
                turns[-1][1].extend(blocks)
            else:
                turns.append((role, list(blocks)))
        if turns[0][0] != "user":
            return invalid("messages: first message must use the user role")
        asked: list[str] = []
        for n, (role, blocks) in enumerate(turns):
            kinds = [b.get("type") for b in blocks]
            if role == "user":
                results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
                if "tool_use" in kinds:
                    return invalid(f"messages.{n}: tool_use blocks may only appear in assistant messages")
                if results and kinds[: len(results)] != ["tool_result"] * len(results):
                    return invalid(f"messages.{n}: tool_result blocks must come first in the user message's content")  # fmt: skip
                if stray := [r for r in results if r not in asked]:
                    return invalid(f"messages.{n}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray[0]}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")  # fmt: skip
                if missing := [a for a in asked if a not in results]:
                    return invalid(f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing[0]}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.")  # fmt: skip
                asked = []
            else:
                if "tool_result" in kinds:
                    return invalid(f"messages.{n}: tool_result blocks may only appear in user messages")
                if asked:  # an assistant turn straight after unanswered tool calls
                    return invalid(f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {asked[0]}.")  # fmt: skip
                for b in blocks:
                    if b.get("type") == "tool_use" and not (b.get("id") and b.get("name") and isinstance(b.get("input"), dict)):  # fmt: skip
                        return invalid(f"messages.{n}: tool_use blocks need an id, a name and an object input")
                asked = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if asked:
            return invalid(f"messages: `tool_use` ids were found without `tool_result` blocks immediately after: {asked[0]}.")  # fmt: skip
        return None

    # --- what the service computes ---------------------------------------------------------
    @staticmethod
    def _all_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
        """Every cacheable block in prefix order: tools, then system, then the messages' blocks."""
        out: list[dict[str, Any]] = list(body.get("tools") or [])
        system = body.get("system")
        if system:
            out += _blocks(system)
        for m in body.get("messages") or []:
            out += [b for b in _blocks(m.get("content")) if isinstance(b, dict)]
        return out

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = self._all_blocks(body)
        clean = [_canonical(b) for b in blocks]
        sizes = [tokens(b) for b in clean]
        total = sum(sizes)
        digest, prefixes, running = hashlib.sha256(), [], 0
        for b, size in zip(clean, sizes, strict=True):
            digest.update(json.dumps(b, sort_keys=True).encode())
            running += size
            prefixes.append((digest.hexdigest(), running))
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        if not marks:
            return {"input_tokens": total, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        last = marks[-1]
        read = max((prefixes[i][1] for i in range(last + 1) if prefixes[i][0] in self.cache), default=0)
        written = prefixes[last][1] if prefixes[last][1] >= MIN_CACHEABLE_TOKENS else read
        for i in marks:
            if prefixes[i][1] >= MIN_CACHEABLE_TOKENS:
                self.cache[prefixes[i][0]] = prefixes[i][1]
        return {
            "input_tokens": total - max(written, read),
            "cache_creation_input_tokens": max(written - read, 0),
            "cache_read_input_tokens": read,
        }

    def complete(self, request: Request, body: Any) -> Any:
        sent = request.body or {}  # a body `reject` let through is an object
        usage = self._usage(sent) | {"output_tokens": int(body.get("output_tokens", 30))}
        self.usages.append(usage)
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": sent.get("model"),
            "content": body["content"],
            "stop_reason": body.get("stop_reason", "end_turn"),
            "stop_sequence": None,
            "usage": usage,
        }


__all__ = ["AnthropicStandin", "invalid", "overloaded", "rate_limited", "text_reply", "tokens", "tool_use"]
