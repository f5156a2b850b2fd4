"""The drill kit: a Temporal dev server on a database file, Quarry worker processes (with the
gate of tests/drill_worker.py), clients and waiting helpers, shared by every test that drives real
processes (tests/test_drills_*.py, test_faults_processes, test_messages, test_port_remembered,
test_trace_policy). Its fixtures (`home`, `server`, `drill_baseline`) live in tests/conftest.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from stores.jobs import JobStore
from workflows.processes.dev_server import server_command
from workflows.shared import JobInput

ROOT = Path(__file__).resolve().parent.parent
INTENT = "graph neural networks for molecular property prediction, 2015-2020, not surveys"
TOPIC_INTENTS = [
    "graph neural networks for molecules",
    "transformer language models for translation",
    "reinforcement learning for robot arm control",
    "federated learning with differential privacy",
]
START_TIMEOUT_S = 60.0
RESULT_TIMEOUT_S = 120.0
# Drills that wait for the server to notice a killed or stopped worker run their workers with this
# heartbeat timeout (Quarry's is 15 s; heartbeats stay at a third of it): the same events, sooner.
DRILL_HEARTBEAT_TIMEOUT_S = 5.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(ok, what: str, timeout_s: float = START_TIMEOUT_S, every_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s} s")
        time.sleep(every_s)


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Server:
    """`temporal server start-dev` on a database file under the drill's home."""

    def __init__(self, home: Path) -> None:
        self.port, self.ui = free_port(), free_port()
        self.folder = home / f"server-{self.port}"  # its own database file, kept across restarts
        self.folder.mkdir(parents=True)
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Server:
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server process writes to it until stopped
        self.proc = subprocess.Popen(
            server_command(self.folder, self.port, self.ui), stdout=log, stderr=subprocess.STDOUT
        )
        wait_for(lambda: reachable(self.port), f"the dev server on {self.port}")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


class Worker:
    def __init__(
        self,
        home: Path,
        address: str,
        queue: str | None,
        gate: Path | None = None,
        env: dict | None = None,
        heartbeat_timeout_s: float | None = None,
    ) -> None:
        cmd = [sys.executable, "-m", "tests.drill_worker", "--home", str(home), "--address", address]
        if queue is not None:
            cmd += ["--queue", queue]
        if gate is not None:
            cmd += ["--gate", str(gate)]
        if heartbeat_timeout_s is not None:  # (see tests/drill_worker.py: scale_heartbeats)
            cmd += ["--heartbeat-timeout", str(heartbeat_timeout_s)]
        self.log = home / f"worker-{uuid.uuid4().hex[:6]}.log"
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=open(self.log, "ab"),  # noqa: SIM115 - the worker writes to it until stopped
            stderr=subprocess.STDOUT,
            env=os.environ | {"QUARRY_HOME": str(home)} | (env or {}),
        )
        ready = home / f"worker-ready-{self.proc.pid}"
        try:
            wait_for(lambda: ready.exists() or self.proc.poll() is not None, "the worker start")
        except AssertionError:
            self.kill()  # a worker that never became ready must not outlive the test
            raise
        assert self.proc.poll() is None, self.log.read_text()[-2000:]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


class Gate:
    """The drill worker's verification gate: hold, see that a call entered, release."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def hold(self) -> None:
        (self.folder / "release").unlink(missing_ok=True)
        (self.folder / "hold").write_text("1")

    def entered(self) -> list[Path]:
        return list(self.folder.glob("entered-*"))

    def release(self) -> None:
        (self.folder / "hold").unlink(missing_ok=True)
        (self.folder / "release").write_text("1")


async def client_for(address: str, tracing: bool = False):
    from workflows.client import connect

    return await connect(address, tracing=tracing)


async def start(address: str, queue: str, intent: str = INTENT, tracing: bool = False, **kw: Any):
    """Submit a job; with `tracing`, the client carries the job's trace context to the workers
    (as `quarry run` does) without exporting spans of its own."""
    from workflows.client import new_job_id, submit

    client = await client_for(address, tracing)
    return await submit(client, JobInput(job_id=new_job_id(), collection="lit", intent=intent, **kw), queue=queue)


def job_spans(home: Path, job_id: str) -> list[dict[str, Any]]:
    from observability import load_spans, traces_dir

    trace_id = JobStore(home / "jobs.sqlite").get(job_id)["trace_id"]
    assert trace_id, "the finished job records its trace"
    return load_spans(traces_dir(home), trace_id)


def assert_one_agent_tree(spans: list[dict[str, Any]], job_id: str, intent: str) -> dict[str, Any]:
    """One `invoke_agent quarry` root with the job's input and output; every node, tool, store
    and model span under it; no UNSET status; both conventions' attribute names."""
    roots = [s for s in spans if s["name"] == "invoke_agent quarry"]
    assert len(roots) == 1, [s["name"] for s in spans if s["parent_span_id"] is None]
    root = roots[0]
    assert root["parent_span_id"] is None and root["status"] == "OK"
    by_id = {s["span_id"]: s for s in spans}

    def under_root(span: dict[str, Any]) -> bool:
        seen = 0
        while span["parent_span_id"] and seen < 100:
            if span["parent_span_id"] == root["span_id"]:
                return True
            span = by_id.get(span["parent_span_id"], {"parent_span_id": None})
            seen += 1
        return False

    ours = [s for s in spans if s["name"].startswith(("execute_tool ", "chat ", "node "))]
    assert ours and all(under_root(s) for s in ours), [s["name"] for s in ours if not under_root(s)]
    assert {s["status"] for s in spans} <= {"OK", "ERROR"}, "no span is left UNSET"
    a = root["attributes"]
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.conversation.id"] == job_id
    assert a["openinference.span.kind"] == "AGENT" and a["input.value"] == intent
    assert intent in a["gen_ai.input.messages"] and json.loads(a["output.value"])["ranked"]
    tools = [s["attributes"] for s in spans if s["name"].startswith("execute_tool ")]
    assert all(t.get("gen_ai.tool.type") in ("function", "datastore") for t in tools)
    assert any(
        t.get("gen_ai.tool.type") == "datastore" and t["gen_ai.tool.name"] == "score_documents" for t in tools
    ), "verification's Lucene scoring is inside a span"
    searches = [t for t in tools if t["gen_ai.tool.name"] == "search" and t.get("quarry.channel") == "lexical"]
    assert searches and all(
        t["openinference.span.kind"] == "RETRIEVER"
        and "gen_ai.tool.call.arguments" in t
        and "retrieval.documents.0.document.id" in t
        for t in searches
    )
    return root


def result_of(handle) -> dict[str, Any]:
    """The job's result, a failed job's too (its workflow ends Failed: workflows.job_failure)."""
    from workflows.job_failure import job_result

    return asyncio.run(asyncio.wait_for(job_result(handle), RESULT_TIMEOUT_S))


def key(result: dict[str, Any]) -> tuple:
    return [(r["docid"], r["score"]) for r in result["ranked"]], result["run"], result["queries"]
