"""A stand-in Ollama server (native `/api/chat`) on loopback that enforces its wire format.

`ollama:NAME` models go through langchain-ollama → the `ollama` client → `POST
{OLLAMA_HOST}/api/chat`, not through the OpenAI-compatible `/v1`. Checked as Ollama's API
reference (github.com/ollama/ollama, docs/api.md "Generate a chat completion") and its Go types
define them; a request that breaks one gets Ollama's error shape `{"error": "…"}` (400, or 404
for an unknown model) and is kept in `rejected`:

- `model` names a model the server has; `messages` a list of `{role, content}` with role
  system/user/assistant/tool and `content` a string (a list fails Go's JSON decoding);
- an assistant's `tool_calls` are `{"function": {"name", "arguments"}}` with `arguments` an
  object (a JSON string fails decoding); `tools` are `{"type": "function", "function": {name, parameters}}`;
- `options` is an object (`num_predict` an integer).

Unknown fields are ignored, as Go's decoder does. The reply streams as NDJSON when `stream` is
true or absent (the default), one JSON object otherwise: the message, then a final chunk with
`done: true`, `done_reason` ("stop", "length") and usage as `prompt_eval_count` / `eval_count`
(the prompt's count computed from the request: characters / 4).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tests.openai_standin import Request, StandinServer

ROLES = ("system", "user", "assistant", "tool")


def error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": message}


def tool_calls(*calls: tuple[str, dict[str, Any]], eval_count: int = 30) -> dict[str, Any]:
    """A scripted assistant turn calling tools (Ollama's calls carry no id; arguments are an object)."""
    return {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls],
        },
        "done_reason": "stop",
        "eval_count": eval_count,
    }


class OllamaStandin(StandinServer):
    chat_path = "/api/chat"
    url_suffix = ""  # OLLAMA_HOST is the server's root

    def __init__(self, steps, models=("standin-model",)) -> None:
        super().__init__(steps, models)
        self.usages: list[dict[str, int]] = []

    def reject(self, request: Request) -> tuple[int, Any] | None:
        body = request.body
        if not isinstance(body, dict):
            return error(400, "invalid request body")
        if not body.get("model"):
            return error(400, "model is required")
        if body["model"] not in self.models and body["model"].split(":")[0] not in self.models:
            return error(404, f'model "{body["model"]}" not found, try pulling it first')
        messages = body.get("messages")
        if not isinstance(messages, list):
            return error(400, "json: cannot unmarshal messages: expected an array")
        for i, m in enumerate(messages):
            if m.get("role") not in ROLES:
                return error(400, f"invalid role {m.get('role')!r} in messages[{i}]")
            if not isinstance(m.get("content", ""), str):
                return error(400, "json: cannot unmarshal array into Go struct field Message.messages.content of type string")  # fmt: skip
            for call in m.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not fn.get("name"):
                    return error(400, f"messages[{i}].tool_calls: function name is required")
                if not isinstance(fn.get("arguments"), dict):
                    return error(400, "json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments")  # fmt: skip
        for i, tool in enumerate(body.get("tools") or []):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name"):
                return error(400, f"tools[{i}]: a tool is {{type: function, function: {{name, parameters}}}}")
        options = body.get("options")
        if options is not None and not isinstance(options, dict):
            return error(400, "json: cannot unmarshal options: expected an object")
        if options and "num_predict" in options and not isinstance(options["num_predict"], int):
            return error(400, "json: cannot unmarshal num_predict: expected an integer")
        return None

    def complete(self, request: Request, body: Any) -> Any:
        prompt = max(1, len(json.dumps(request.body.get("messages", []))) // 4)
        usage = {"prompt_eval_count": prompt, "eval_count": int(body.get("eval_count", 30))}
        self.usages.append(usage)
        now = datetime.now(UTC).isoformat()
        model = request.body["model"]
        final = {
            "model": model,
            "created_at": now,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": body.get("done_reason", "stop"),
            "total_duration": 1_000_000,
            **usage,
        }
        chunk = {"model": model, "created_at": now, "message": body["message"], "done": False}
        if request.body.get("stream", True) is False:
            return final | {"message": body["message"]}
        return ("\n".join(json.dumps(c) for c in (chunk, final)) + "\n").encode()


__all__ = ["OllamaStandin", "error", "tool_calls"]
