"""A minimal MCP client for bench.bench_serve: what the server's side of an MCP call costs, without
the SDK client's own costs (its memory streams and tasks, and the validation of every result
against the tool's output schema, about 1.1–1.8 ms a call here, docs/performance.md). It speaks the same JSON-RPC on the
same transports as any client; nothing in Quarry knows it exists."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import httpx

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60.0


class RawMcp:
    """The least an MCP client does: initialize, then one `tools/call` request per search, its reply
    parsed as it comes — no SDK streams, tasks or output-schema validation. A transport sends one
    JSON-RPC message and returns the reply to a request (`_send`)."""

    VERSION = "2025-06-18"

    def __init__(self) -> None:
        self.next_id = 0

    def start(self) -> Self:
        hello = {"protocolVersion": self.VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        self._send(self._request("initialize", hello))
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def _send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self._send(self._request("tools/call", {"name": name, "arguments": arguments}))
        if reply is None or "error" in reply or reply["result"].get("isError"):
            raise RuntimeError(f"MCP search failed: {reply}")
        return reply["result"]


class RawMcpHttp(RawMcp):
    """Over Streamable HTTP: one POST per message; a reply is a JSON body or the last `data:` of an SSE stream."""

    def __init__(self, http: httpx.Client) -> None:
        super().__init__()
        self.http = http
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def _send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        reply = self.http.post("/mcp", headers=self.headers, json=message)
        reply.raise_for_status()
        if "id" not in message:
            return None
        if session := reply.headers.get("mcp-session-id"):
            self.headers |= {"mcp-session-id": session, "mcp-protocol-version": self.VERSION}
        body = reply.text
        if not body.startswith("{"):
            body = [line[5:] for line in body.splitlines() if line.startswith("data:") and line[5:].strip()][-1]
        return json.loads(body)


class RawMcpStdio(RawMcp):
    """Over stdio: one JSON line per message to the server's stdin; its reply is the line with the request's id."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__()
        self.proc = proc

    def _send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        while "id" in message:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("quarry mcp closed its stdout")
            reply = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply
        return None


@contextlib.contextmanager
def raw_stdio_server(home: Path, errlog: Any) -> Iterator[RawMcpStdio]:
    """A second `quarry mcp` subprocess, spoken to by RawMcpStdio; closed (stdin) and reaped after."""
    command = [sys.executable, "-m", "quarry", "--home", str(home), "mcp"]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, cwd=REPO, stdin=pipe, stdout=pipe, stderr=errlog, text=True) as proc:
        try:
            yield RawMcpStdio(proc).start()
        finally:
            assert proc.stdin is not None
            proc.stdin.close()  # end of input: the server exits
            try:
                proc.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
