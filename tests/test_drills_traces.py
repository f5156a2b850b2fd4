"""Drills of traces from worker processes: spans over OTLP to a collector stand-in while the local
JSONL keeps `quarry trace` working, and a ReAct job's model calls under its one agent span.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from tests.drill_kit import INTENT, ROOT, Worker, assert_one_agent_tree, job_spans, result_of, start, wait_for


class Collector:
    """An OTLP/HTTP collector stand-in on loopback: it keeps every span it is sent."""

    def __init__(self) -> None:
        import http.server
        import threading

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        spans = self.spans = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            spans.append(
                                {
                                    "name": span.name,
                                    "attributes": {a.key for a in span.attributes},
                                    "trace_id": span.trace_id.hex(),
                                }
                            )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


def test_traces_over_otlp_keep_quarry_trace_working(home, server) -> None:
    """With OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach the collector (content left out, as the
    GenAI conventions' default asks) and the local JSONL stays beside them, so `quarry trace` and
    the path `job result` prints still work."""
    collector = Collector()
    otlp = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    queue = f"drill-otlp-{uuid.uuid4().hex[:8]}"
    worker = Worker(home, server.address, queue, env=otlp)
    try:
        handle = asyncio.run(start(server.address, queue, tracing=True))
        result = result_of(handle)
        wait_for(
            lambda: any(s["name"] == "invoke_agent quarry" for s in collector.spans),
            "the agent span to reach the collector",
        )
    finally:
        worker.kill(signal.SIGTERM)
        collector.close()
    assert result["status"] == "completed"
    agent = next(s for s in collector.spans if s["name"] == "invoke_agent quarry")
    assert {"gen_ai.operation.name", "gen_ai.conversation.id", "openinference.span.kind"} <= agent["attributes"]
    assert not {"gen_ai.input.messages", "input.value", "output.value"} & agent["attributes"], (
        "no content over OTLP by default"
    )
    assert any(s["name"] == "execute_tool search" for s in collector.spans)
    env = os.environ | {"QUARRY_HOME": str(home), **otlp}
    traced = subprocess.run(
        [sys.executable, "-m", "quarry", "trace", handle.id, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert traced.returncode == 0, traced.stderr
    data = json.loads(traced.stdout)
    assert Path(data["file"]).is_file() and data["trace_id"] == agent["trace_id"]
    assert any(s["name"] == "invoke_agent quarry" for s in data["spans"])
    shown = subprocess.run(
        [sys.executable, "-m", "quarry", "job", "result", handle.id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.startswith("trace:")]
    assert Path(line.split(":", 1)[1].strip()).is_file()
    searches = subprocess.run(
        [sys.executable, "-m", "quarry", "trace", handle.id, "--tool", "search", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert {s["attributes"]["gen_ai.tool.name"] for s in json.loads(searches.stdout)["spans"]} == {"search"}
    grouped = subprocess.run(
        [sys.executable, "-m", "quarry", "trace", handle.id, "--grouped"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert grouped.returncode == 0 and "round 1:" in grouped.stdout and "query:" in grouped.stdout, grouped.stdout
    off = subprocess.run(
        [sys.executable, "-m", "quarry", "trace", handle.id, "--tool", "no_such_tool"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert off.returncode != 0 and "tools in this trace" in off.stderr + off.stdout and "Traceback" not in off.stderr


def test_a_react_jobs_model_calls_sit_under_its_agent_span(home, server) -> None:
    """A ReAct job against an OpenAI-compatible stand-in on loopback, run by a worker process:
    its `chat` spans (with usage) are inside the one `invoke_agent` span with the tools."""
    from nodes.job.config import JobConfig, ModelSettings
    from tests.openai_standin import StandinServer, tool_call_response

    script = [
        tool_call_response(
            "search", {"reason": "find GNN papers", "query": "graph neural networks"}, 900, 30, call_id="c0"
        ),
        tool_call_response("submit", {"reason": "these answer it", "docids": ["gnn02"]}, 1500, 20, call_id="c1"),
    ]
    queue = f"drill-react-{uuid.uuid4().hex[:8]}"
    with StandinServer(script) as standin:
        worker = Worker(
            home,
            server.address,
            queue,
            env={
                "OPENAI_BASE_URL": standin.base_url,
                "NO_PROXY": "127.0.0.1",
                "OPENAI_API_KEY": "sk-drill-" + uuid.uuid4().hex,
            },
        )
        try:
            config = JobConfig(models=ModelSettings(model="openai:standin-model"))
            handle = asyncio.run(start(server.address, queue, tracing=True, policy="react", config=config))
            result = result_of(handle)
        finally:
            worker.kill(signal.SIGTERM)
    assert result["status"] == "completed" and result["stop_reason"] == "submitted", result.get("fallbacks")
    spans = job_spans(home, handle.id)
    assert_one_agent_tree(spans, handle.id, INTENT)
    chats = [s for s in spans if s["name"] == "chat openai:standin-model"]
    assert len(chats) == 2 and [c["attributes"]["gen_ai.usage.input_tokens"] for c in chats] == [900, 1500]
    assert all(
        c["attributes"]["openinference.span.kind"] == "LLM"
        and c["attributes"]["llm.token_count.total"] > 0
        and "gen_ai.output.messages" in c["attributes"]
        for c in chats
    )
