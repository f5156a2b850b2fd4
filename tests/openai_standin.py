"""A stand-in OpenAI-compatible chat server on loopback, for tests of the real client path.

Quarry talks to OpenAI-compatible endpoints through langchain-openai → the openai SDK → HTTP.
A scripted LangChain model (tests.fakes) skips all of that, so this server lets a test run a
job against the real client code and then look at what actually went over the wire: the tool
schemas, the token limits, the conversation and the credentials. Nothing outside tests/ knows
about it; the job finds it only through OPENAI_BASE_URL, like a user's vLLM or llama.cpp server.

`StandinServer(steps)` answers POST /v1/chat/completions with the next step of its script:
a chat.completion dict, `(status, body)` for an error, or a callable of the `Request` that
returns either (to echo a header back, as a hostile or careless endpoint might). Every
request is recorded as a `Request` (parsed JSON body, lower-cased headers).

A chat request the real API refuses is answered with OpenAI's 400 error shape, written from its
API reference (Chat Completions, function calling, structured outputs), and kept in `rejected`,
so a test fails when Quarry sends one: unknown roles; an assistant's `tool_calls` not answered
by one tool message per id before any other message (parallel calls included); a tool message
that answers nothing; null content without tool calls; bad tool names; and, for a function sent
with `strict: true`, a schema whose objects do not set `additionalProperties: false` and require
every property. `rate_limited()` scripts a 429 with `retry-after`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# A step: a response body, `(status, body)`, `(status, body, headers)`, or a callable of the request
# that returns one of those.
Reply = dict[str, Any] | tuple[int, Any] | tuple[int, Any, dict[str, str]]
Step = Reply | Callable[["Request"], Reply]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any] | None


def tool_call_response(
    name: str,
    args: dict[str, Any],
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    *,
    model: str = "standin-model",
    call_id: str | None = None,
) -> dict[str, Any]:
    """A chat.completion whose only choice calls one tool, with OpenAI's usage shape (cache hits
    and reasoning tokens in the *_details objects, which LangChain maps to usage_metadata)."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id or f"call_{uuid.uuid4().hex[:16]}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }


TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ROLES = ("system", "developer", "user", "assistant", "tool")


def invalid(message: str, param: str | None = None, code: str | None = None) -> tuple[int, dict[str, Any]]:
    """OpenAI's error shape for a request it refuses."""
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def rate_limited(retry_after_s: int = 1) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}  # fmt: skip
    return 429, body, {"retry-after": str(retry_after_s)}


def strict_problem(schema: Any, where: str = "()") -> str | None:
    """Why a `strict: true` function schema is refused: every object (nested ones too) must set
    `additionalProperties: false` and list every property in `required`."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied and to be false."
        props = schema.get("properties") or {}
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return f"In context={where}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{missing[0]}'."  # fmt: skip
        for key, sub in props.items():
            if problem := strict_problem(sub, f"('properties', '{key}')"):
                return problem
    children = [schema["items"]] if isinstance(schema.get("items"), dict) else []
    for key in ("anyOf", "allOf", "oneOf"):
        children += list(schema.get(key) or [])
    for key in ("$defs", "definitions"):
        children += list((schema.get(key) or {}).values())
    for sub in children:
        if problem := strict_problem(sub, where):
            return problem
    return None


def chat_request_problem(body: Any) -> tuple[int, dict[str, Any]] | None:
    """The 400 OpenAI's Chat Completions API answers a malformed request with (None: well formed):
    model and messages required; known roles; an assistant's tool calls answered by tool
    messages, one per id, before any other message; no tool message without a call; content null
    only beside tool calls; tool names and, with `strict`, strict schemas."""
    if not isinstance(body, dict):
        return invalid("We could not parse the JSON body of your request.")
    for field in ("model", "messages"):
        if field not in body:
            return invalid(f"Missing required parameter: '{field}'.", field, "missing_required_parameter")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages")
    pending: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ROLES:
            return invalid(f"Invalid value: '{role}'. Supported values are: {', '.join(ROLES)}.", f"messages[{i}].role")
        if pending and role != "tool":
            return invalid(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
                "messages",
            )
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                return invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    f"messages[{i}].role",
                )
            pending.remove(m["tool_call_id"])
        calls = m.get("tool_calls") or []
        if role == "assistant":
            if m.get("content") is None and not calls:
                return invalid(f"Invalid value for 'content': expected a string, got null.", f"messages[{i}].content")  # noqa: F541
            for call in calls:
                fn = call.get("function") or {}
                if not call.get("id") or call.get("type") != "function" or not isinstance(fn.get("arguments"), str):
                    return invalid("Invalid 'tool_calls': each needs an id, type 'function' and string arguments.", f"messages[{i}].tool_calls")  # fmt: skip
            pending = [c["id"] for c in calls]
        elif m.get("content") is None:
            return invalid(f"Invalid value for 'content': expected a string, got null.", f"messages[{i}].content")  # noqa: F541
    if pending:
        return invalid(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
            "messages",
        )
    for i, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") or {}
        if tool.get("type") != "function" or not TOOL_NAME.match(str(fn.get("name", ""))):
            return invalid(f"Invalid 'tools[{i}].function.name': string does not match pattern.", f"tools[{i}].function.name")  # fmt: skip
        if fn.get("strict") and (problem := strict_problem(fn.get("parameters"))):
            return invalid(f"Invalid schema for function '{fn['name']}': {problem}", f"tools[{i}].function.parameters", "invalid_function_parameters")  # fmt: skip
    return None


class StandinServer:
    """The scripted server in a daemon thread on 127.0.0.1 (a free port); use as a context manager.

    A provider's stand-in subclasses it: `chat_path` is its chat route, `url_suffix` what its
    clients' base URL ends with, `reject` answers a request the real service would refuse (before
    the script is consulted, so a malformed request fails the test that sent it) and `complete`
    fills what the service computes itself (usage from the request)."""

    chat_path = "/v1/chat/completions"
    url_suffix = "/v1"

    def __init__(self, steps: Sequence[Step], models: Sequence[str] = ("standin-model",)) -> None:
        self.steps = list(steps)
        self.models = list(models)
        self.requests: list[Request] = []
        self.rejected: list[tuple[Request, tuple[int, Any]]] = []  # what `reject` refused, with its answer
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.url_suffix}"

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.split("?")[0].rstrip("/") == self.chat_path]

    def reject(self, request: Request) -> tuple[int, Any] | None:
        """OpenAI's 400 for a chat request its API reference refuses (module doc); None to answer it."""
        return chat_request_problem(request.body)

    def complete(self, request: Request, body: Any) -> Any:
        """The scripted body with what the service itself would add (here: nothing)."""
        return body

    def start(self) -> Self:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _answer(self, request: Request) -> tuple[int, Any, dict[str, str]]:
        """The (status, JSON body, headers) for one request; the script's next step for a chat call."""
        with self._lock:
            self.requests.append(request)
            if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
                return (
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "created": 0, "owned_by": "standin"} for m in self.models
                        ],
                    },
                    {},
                )
            if request.method != "POST" or request.path.split("?")[0].rstrip("/") != self.chat_path:
                return 404, {"error": {"message": f"no route {request.method} {request.path}", "type": "not_found"}}, {}
            refused = self.reject(request)
            if refused is not None:
                self.rejected.append((request, refused))
                return (*refused, {})
            if not self.steps:
                return (
                    500,
                    {"error": {"message": "the stand-in's script is exhausted", "type": "standin_exhausted"}},
                    {},
                )
            step = self.steps.pop(0)
        if callable(step):
            step = step(request)
        if not isinstance(step, tuple):
            step = (200, step)
        status, body, headers = (*step, {})[:3]
        return status, (self.complete(request, body) if status == 200 else body), headers


def _handler_for(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            status, payload, headers = server._answer(request)
            data = (
                (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
                if payload is not None
                else b""
            )
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Type" not in headers:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    return Handler
