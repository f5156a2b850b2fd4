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
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any] | tuple[int, Any] | Callable[["Request"], "dict[str, Any] | tuple[int, Any]"]


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


class StandinServer:
    """The scripted server in a daemon thread on 127.0.0.1 (a free port); use as a context manager."""

    def __init__(self, steps: Sequence[Step], models: Sequence[str] = ("standin-model",)) -> None:
        self.steps = list(steps)
        self.models = list(models)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def start(self) -> StandinServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=10)
            self._httpd = None

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _answer(self, request: Request) -> tuple[int, Any]:
        """The (status, JSON body) for one request; the script's next step for a chat call."""
        with self._lock:
            self.requests.append(request)
            if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
                return 200, {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "created": 0, "owned_by": "standin"} for m in self.models],
                }
            if request.method != "POST" or request.path.rstrip("/") != "/v1/chat/completions":
                return 404, {"error": {"message": f"no route {request.method} {request.path}", "type": "not_found"}}
            if not self.steps:
                return 500, {"error": {"message": "the stand-in's script is exhausted", "type": "standin_exhausted"}}
            step = self.steps.pop(0)
        if callable(step):
            step = step(request)
        return step if isinstance(step, tuple) else (200, step)


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
            status, payload = server._answer(request)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    return Handler
