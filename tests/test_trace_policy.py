"""Trace policy (issue 20 item 8): content obeys the GenAI capture setting on every span kind,
polls are not traces, the agent span starts when the job runs, and a worker whose exporter
settings differ from the shell's is named.

Real parts: a Temporal dev server, real worker processes (the one `quarry run` starts in the
background, and tests/drill_worker.py where a job must be held at a known point), the real
OpenTelemetry SDK and OTLP/HTTP exporter, and an OTLP collector stand-in — a loopback HTTP server
started here that decodes `/v1/traces` with opentelemetry-proto, as a backend would.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from observability.content_policy import CAPTURE_ENV, is_classified
from stores.jobs import JobStore
from tests.drill_kit import ROOT, Gate, Server, result_of, start, wait_for
from tests.fakes import search_docs

INTENT = "graph neural networks for molecular property prediction, not surveys"
INTENT_WORDS = ("neural", "networks", "molecular", "property", "prediction", "surveys")
SECOND_INTENT = "federated learning with differential privacy"
POLLS = 3
OTLP_WAIT_S = 60.0
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


# -- the OTLP collector stand-in --------------------------------------------------------------------


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


class Collector:
    """Accepts OTLP/HTTP protobuf on `/v1/traces` and keeps every span, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                collector.take(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def take(self, request: ExportTraceServiceRequest) -> None:
        found = []
        for rs in request.resource_spans:
            resource = {kv.key: _any_value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    found.append(
                        {
                            "service": resource.get("service.name"),
                            "name": span.name,
                            "kind": _KINDS[span.kind],
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex() or None,
                            "start_ns": span.start_time_unix_nano,
                            "end_ns": span.end_time_unix_nano,
                            "attributes": {kv.key: _any_value(kv.value) for kv in span.attributes},
                            "status": {0: "UNSET", 1: "OK", 2: "ERROR"}[span.status.code],
                            "status_message": span.status.message,
                            "events": [
                                {"name": e.name, "attributes": {kv.key: _any_value(kv.value) for kv in e.attributes}}
                                for e in span.events
                            ],
                        }
                    )
        with self.lock:
            self.spans.extend(found)

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.spans)

    def trace(self, trace_id: str) -> list[dict[str, Any]]:
        return [s for s in self.snapshot() if s["trace_id"] == trace_id]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def texts_of(span: dict[str, Any]) -> list[str]:
    """Every string a backend shows for a span, but its name: attribute and event values, status."""
    found = [span.get("status_message") or ""]

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(span["attributes"])
    for event in span.get("events", []):
        walk(event["attributes"])
    return found


def content_markers(result: dict[str, Any]) -> list[str]:
    """What must not leave the machine by default: the intent, its words, the queries the job ran,
    every title and every sentence of the corpus."""
    markers = [INTENT.lower(), *INTENT_WORDS, *(q.lower() for q in result.get("queries", []) if len(q) > 3)]
    for doc in search_docs():
        markers.append(doc["title"].lower())
        markers += [line.strip().lower() for line in doc["text"].splitlines() if len(line.strip()) > 20]
    return markers


def leaks(spans: list[dict[str, Any]], markers: list[str]) -> list[tuple[str, str]]:
    return [(s["name"], text[:120]) for s in spans for text in texts_of(s) if any(m in text.lower() for m in markers)]


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def collector():
    c = Collector()
    yield c
    c.close()


def _env(home: Path, server: Server, collector: Collector, **extra: str) -> dict[str, str]:
    """A user's shell: this home, this server, OTLP to the stand-in (batches sent every 100 ms)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return (
        env
        | {
            "QUARRY_HOME": str(home),
            "QUARRY_TEMPORAL_ADDRESS": server.address,
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        | extra
    )


def _quarry(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quarry", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def _run_json(env: dict[str, str], intent: str) -> tuple[dict[str, Any], str]:
    done = _quarry(env, "run", "lit", intent, "--wait", "--json", "--budget", "120")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _trace_files(home: Path) -> set[str]:
    return {p.stem for p in (home / "traces").glob("*.jsonl")}


def _trace_id(home: Path, job_id: str) -> str:
    trace_id = JobStore(home / "jobs.sqlite").get(job_id)["trace_id"]
    assert trace_id
    return trace_id


def _wait_for_job_spans(collector: Collector, trace_id: str, client: bool = True) -> list[dict[str, Any]]:
    """The job's spans once the worker's last ones (the agent span, RunWorkflow) and, for a job
    submitted by `quarry run`, the CLI's have arrived."""

    def complete() -> bool:
        names = {s["name"] for s in collector.trace(trace_id)}
        return {"invoke_agent quarry", "RunWorkflow:SearchJob"} <= names and (not client or "quarry run" in names)

    wait_for(complete, "the job's spans to reach the collector", OTLP_WAIT_S)
    return collector.trace(trace_id)


@pytest.fixture(scope="module")
def cli_runs(home: Path, server: Server, collector: Collector) -> dict[str, Any]:
    """What a user does from a shell, with the background worker `quarry run` starts:
    1. `quarry run --wait` with OTLP on and the capture setting unset (the worker inherits it);
       then `quarry job progress` on the finished job, POLLS times;
    2. `quarry run --wait` again, from a shell that now says capture=true while that worker runs;
    3. `quarry down`, then `quarry run --wait` with capture=true: a new worker that has it."""
    plain = _env(home, server, collector)
    captured = _env(home, server, collector, **{CAPTURE_ENV: "true"})
    out: dict[str, Any] = {}
    earlier = len(collector.snapshot())  # spans other tests of this module sent before
    try:
        out["default"], out["default_stderr"] = _run_json(plain, INTENT)
        files = _trace_files(home)
        for _ in range(POLLS):
            polled = _quarry(plain, "job", "progress", out["default"]["job_id"])
            assert polled.returncode == 0, polled.stderr
        out["files_after_polls"] = (files, _trace_files(home))
        out["stale"], out["stale_stderr"] = _run_json(captured, SECOND_INTENT)
        down = _quarry(plain, "down")
        assert down.returncode == 0 and "worker: stopped" in down.stdout, down.stdout + down.stderr
        out["captured"], out["captured_stderr"] = _run_json(captured, INTENT)
    finally:
        _quarry(plain, "down")  # flushes the worker's last OTLP batch on its graceful stop
    for key in ("default", "stale", "captured"):
        out[f"{key}_trace"] = _trace_id(home, out[key]["job_id"])
        out[f"{key}_spans"] = _wait_for_job_spans(collector, out[f"{key}_trace"])
    out["all_spans"] = collector.snapshot()[earlier:]  # complete: every process that exported has exited
    return out


# -- content policy over every span kind -------------------------------------------------------------


def _kinds(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The job's spans by kind: tool, store, node, agent, Temporal's worker spans, client spans."""
    attrs = lambda s: s["attributes"]  # noqa: E731
    return {
        "tool": [s for s in spans if attrs(s).get("gen_ai.tool.type") == "function"],
        "store": [s for s in spans if attrs(s).get("gen_ai.tool.type") == "datastore"],
        "node": [s for s in spans if attrs(s).get("openinference.span.kind") == "CHAIN"],
        "agent": [s for s in spans if s["name"] == "invoke_agent quarry"],
        "temporal": [s for s in spans if s["name"].startswith(("RunWorkflow:", "RunActivity:", "StartActivity:"))],
        "client": [s for s in spans if s["service"] == "quarry-cli"],
    }


def test_by_default_no_span_of_any_kind_exports_content(cli_runs) -> None:
    spans = cli_runs["default_spans"]
    kinds = _kinds(spans)
    assert all(kinds.values()), {k: len(v) for k, v in kinds.items()}
    assert {s["name"] for s in kinds["client"]} >= {"quarry run", "StartWorkflow:SearchJob"}
    assert any(s["name"] == "execute_tool search" for s in kinds["tool"])
    found = leaks(spans, content_markers(cli_runs["default"]))
    assert not found, found[:10]
    # The job and its searches are still legible without content: ids, counts, scores, timings.
    search = next(s for s in kinds["tool"] if s["name"] == "execute_tool search")
    assert search["attributes"]["quarry.hits"] > 0 and "retrieval.documents.0.document.id" in search["attributes"]
    assert "quarry.query" not in search["attributes"] and "input.value" not in kinds["agent"][0]["attributes"]


def test_by_default_the_local_trace_file_keeps_the_content(cli_runs, home: Path) -> None:
    from observability import load_spans, traces_dir

    local = load_spans(traces_dir(home), cli_runs["default_trace"])
    agent = next(s for s in local if s["name"] == "invoke_agent quarry")
    assert agent["attributes"]["input.value"] == INTENT
    assert any(s["attributes"].get("quarry.query") for s in local if s["name"] == "execute_tool search")


def test_with_capture_true_the_content_is_exported(cli_runs) -> None:
    spans = cli_runs["captured_spans"]
    kinds = _kinds(spans)
    assert kinds["agent"][0]["attributes"]["input.value"] == INTENT
    searches = [s["attributes"] for s in kinds["tool"] if s["name"] == "execute_tool search"]
    assert any(a.get("quarry.query") in cli_runs["captured"]["queries"] for a in searches)
    assert any("gen_ai.tool.call.result" in a and "gen_ai.tool.call.arguments" in a for a in searches)
    assert any("gen_ai.tool.call.arguments" in s["attributes"] for s in kinds["store"])
    assert leaks(spans, content_markers(cli_runs["captured"]))


def test_every_attribute_key_of_a_real_job_is_classified(cli_runs) -> None:
    """The audit stays complete: a key nobody classified as content or metadata fails here."""
    keys = {k for key in ("default", "captured") for s in cli_runs[f"{key}_spans"] for k in s["attributes"]}
    keys |= {
        k
        for key in ("default", "captured")
        for s in cli_runs[f"{key}_spans"]
        for e in s["events"]
        for k in e["attributes"]
    }
    assert {k for k in keys if not is_classified(k)} == set()


# -- polls are not traces ----------------------------------------------------------------------------


def test_watching_and_polling_a_job_make_no_traces_of_their_own(cli_runs, home: Path) -> None:
    """`run --wait` polled the job every second until it ended, and `job progress` ran POLLS times
    on the finished job: every exported span belongs to a job's trace, none is a query's, and
    none of these successful jobs has an ERROR span (a poll that timed out during warm-up made one)."""
    jobs = {cli_runs[f"{k}_trace"] for k in ("default", "stale", "captured")}
    before, after = cli_runs["files_after_polls"]
    assert after == before, "job progress wrote trace files"
    ours = [s for s in cli_runs["all_spans"] if s["trace_id"] in jobs]
    others = sorted({(s["service"], s["name"]) for s in cli_runs["all_spans"] if s["trace_id"] not in jobs})
    assert not others, others
    assert not [s for s in cli_runs["all_spans"] if s["name"].startswith(("QueryWorkflow:", "HandleQuery:"))]
    red = [(s["name"], s["status_message"]) for s in ours if s["status"] != "OK"]
    assert {s["status"] for s in ours} == {"OK"}, red
    assert _trace_files(home) >= jobs


# -- the worker's exporter settings ---------------------------------------------------------------------


def test_a_worker_with_other_exporter_settings_is_named(cli_runs, collector: Collector) -> None:
    stale = cli_runs["stale_stderr"]
    assert "warning: the running worker exports traces to " + collector.endpoint in stale, stale[-1500:]
    assert "restart it with quarry down to apply" in stale
    assert "warning" not in cli_runs["default_stderr"] and "warning" not in cli_runs["captured_stderr"]
    # What the warning is about: that job ran on the worker without capture, whatever the shell said.
    agent = _kinds(cli_runs["stale_spans"])["agent"][0]
    assert "input.value" not in agent["attributes"]


def test_the_recorded_settings_hold_no_secret_and_name_a_worker_without_otlp(tmp_path: Path) -> None:
    from observability.exporter_settings import record_worker_settings, worker_settings_note

    worker_env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pw@otel.example:4318/base?token=abc",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic c2VjcmV0LWhlYWRlcg==",
    }
    record_worker_settings(tmp_path, worker_env)
    record = (tmp_path / "run" / "worker.otel").read_text()
    assert "pw" not in record and "token" not in record and "c2VjcmV0" not in record, record
    assert "https://otel.example:4318/base" in record
    assert worker_settings_note(tmp_path, worker_env) is None
    note = worker_settings_note(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:4318/base"})
    assert note and "exports traces to https://otel.example:4318/base" in note, "a changed header is a difference"
    record_worker_settings(tmp_path, {})
    note = worker_settings_note(tmp_path, worker_env)
    assert note and "does not export to OTLP" in note and "quarry down" in note


# -- a job held by the drill worker: polls while it runs, and when its agent span starts ------------------

REACT_QUERY = "graph neural networks molecules"
REACT_REASON = "find the molecular papers first"
API_KEY = "sk-trace-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def held_job(home: Path, server: Server, collector: Collector, tmp_path_factory) -> dict[str, Any]:
    """A drill worker (OTLP on, default policy, a model endpoint stand-in with a key) whose warm-up
    is held while a job is submitted; the warm-up is released at a recorded instant, the job is
    held again in verification while `quarry job progress` polls it POLLS times, then released to
    finish. Then a ReAct job on the same worker, so its `chat` spans are exported too."""
    from tests.openai_standin import StandinServer, tool_call_response

    folder = tmp_path_factory.mktemp("held")
    warm, gate = folder / "warm", Gate(folder / "gate")
    warm.mkdir()
    gate.hold()
    queue = f"trace-{uuid.uuid4().hex[:8]}"
    env = _env(home, server, collector)
    log = home / f"drill-worker-{queue}.log"
    script = [
        tool_call_response("search", {"reason": REACT_REASON, "query": REACT_QUERY}, 900, 30, call_id="c0"),
        tool_call_response("submit", {"reason": "these answer it", "docids": ["gnn02"]}, 1500, 20, call_id="c1"),
    ]
    out: dict[str, Any] = {}
    with StandinServer(script) as standin:
        worker_env = env | {"OPENAI_BASE_URL": standin.base_url, "NO_PROXY": "127.0.0.1", "OPENAI_API_KEY": API_KEY}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.drill_worker",
                "--home",
                str(home),
                "--address",
                server.address,
                "--queue",
                queue,
                "--gate",
                str(gate.folder),
                "--hold-warm-up",
                str(warm),
            ],
            cwd=ROOT,
            env=worker_env,
            stdout=open(log, "ab"),  # noqa: SIM115 - the worker writes to it until stopped
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(lambda: (warm / "warming").exists() or proc.poll() is not None, "the warm-up to start")
            out["submitted_ns"] = time.time_ns()
            handle = asyncio.run(start(server.address, queue, intent=INTENT, tracing=True))
            out["released_ns"] = time.time_ns()
            (warm / "release").write_text("1")
            wait_for(lambda: gate.entered() or proc.poll() is not None, "verification to start", 120)
            assert proc.poll() is None, log.read_text()[-2000:]
            files = _trace_files(home)
            for _ in range(POLLS):
                polled = _quarry(env, "job", "progress", handle.id, "--json")
                assert polled.returncode == 0, polled.stderr
                assert json.loads(polled.stdout)["job_id"] == handle.id
            out["files"] = (files, _trace_files(home))
            gate.release()
            out["result"] = result_of(handle)
            out["job_id"] = handle.id
            from nodes.job.config import JobConfig, ModelSettings

            react = asyncio.run(
                start(
                    server.address,
                    queue,
                    intent=INTENT,
                    tracing=True,
                    policy="react",
                    config=JobConfig(models=ModelSettings(model="openai:standin-model")),
                )
            )
            out["react"] = result_of(react)
        finally:
            gate.release()
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # a graceful stop flushes the last OTLP batch
                proc.wait(60)
    out["trace_id"] = _trace_id(home, out["job_id"])
    out["react_trace"] = _trace_id(home, out["react"]["job_id"])
    out["react_spans"] = _wait_for_job_spans(collector, out["react_trace"], client=False)
    return out


def test_progress_polls_of_a_running_job_make_no_traces(held_job, collector: Collector) -> None:
    before, after = held_job["files"]
    assert after == before, f"{len(after - before)} trace files for {POLLS} polls"
    exported = [s for s in collector.snapshot() if s["name"].startswith(("QueryWorkflow:", "HandleQuery:"))]
    assert not exported


def test_the_agent_span_starts_when_the_job_runs_not_when_it_was_submitted(held_job, home: Path) -> None:
    from observability import load_spans, traces_dir

    spans = load_spans(traces_dir(home), held_job["trace_id"])
    agent = next(s for s in spans if s["name"] == "invoke_agent quarry")
    runs = [s for s in spans if s["name"].startswith("RunWorkflow:")]
    activities = [s for s in spans if s["name"].startswith("RunActivity:")]
    first_activity = min(s["start_ns"] for s in activities)
    # The workflow could not run before the warm-up was released: neither can its agent span start.
    assert agent["start_ns"] >= held_job["released_ns"] > held_job["submitted_ns"]
    assert agent["start_ns"] <= min(s["start_ns"] for s in runs) <= first_activity
    # Its duration is the workflow's run (first run span to the last span's end), not the queueing.
    run_time = max(s["end_ns"] for s in spans) - min(s["start_ns"] for s in runs)
    assert agent["end_ns"] - agent["start_ns"] <= run_time + 1_000_000_000
    assert agent["attributes"]["quarry.wait_for_worker_ms"] > 0
    assert held_job["result"]["status"] == "completed"


def test_a_react_jobs_chat_spans_export_no_content_and_no_key_by_default(held_job, home: Path) -> None:
    """The LLM span kind from a real worker: `chat` spans with usage reach the collector without
    the conversation, the tool calls' arguments or the reason; the worker's API key is nowhere."""
    from observability import load_spans, traces_dir

    spans = held_job["react_spans"]
    chats = [s for s in spans if s["name"] == "chat openai:standin-model"]
    assert len(chats) == 2 and all(c["attributes"]["openinference.span.kind"] == "LLM" for c in chats)
    assert [c["attributes"]["gen_ai.usage.input_tokens"] for c in chats] == [900, 1500]
    markers = [*content_markers(held_job["react"]), REACT_QUERY, REACT_REASON.lower()]
    assert not leaks(spans, markers), leaks(spans, markers)[:5]
    local = load_spans(traces_dir(home), held_job["react_trace"])
    assert any(REACT_REASON in json.dumps(s) for s in local), "the local file keeps the conversation"
    assert API_KEY not in json.dumps(spans) and API_KEY not in json.dumps(local)
    unknown = {
        k
        for s in spans
        for k in [*s["attributes"], *(k for e in s["events"] for k in e["attributes"])]
        if not is_classified(k)
    }
    assert not unknown, "every key a ReAct job's spans carry is classified"


# -- the chat span, and error text, in process through the real exporter ----------------------------------


def _provider(tmp_path: Path, collector: Collector, capture: str | None):
    from observability.setup import build_provider

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint} | ({CAPTURE_ENV: capture} if capture else {})
    return build_provider("quarry-test", tmp_path, env=env)


@pytest.mark.parametrize("capture", [None, "true", "false"], ids=["default", "true", "false"])
def test_chat_and_error_spans_obey_the_policy(tmp_path: Path, collector: Collector, monkeypatch, capture) -> None:
    """A model call through `nodes.llm.calls.invoke` (a scripted LangChain model), a failing one
    whose error quotes the prompt, and a tool whose exception quotes the query: OTLP and the
    local file each get content only where the policy says."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage

    import nodes.llm.calls as llm_calls
    from nodes.llm.calls import ModelError, invoke
    from observability import current_trace_id, get_tracer, llm_span, load_spans, tool_span, traces_dir

    provider = _provider(tmp_path, collector, capture)
    tracer = get_tracer(provider)
    monkeypatch.setattr(llm_calls, "llm_span", functools.partial(llm_span, tracer=tracer))
    secret_prompt = f"zebrafish cardiology {uuid.uuid4().hex[:6]}"
    reply = f"okapi genomics {uuid.uuid4().hex[:6]}"

    class Failing(FakeListChatModel):
        def invoke(self, *args, **kwargs):
            raise RuntimeError(f"endpoint refused the prompt: {secret_prompt}")

    with tracer.start_as_current_span("job") as root:
        trace_id = current_trace_id()
        invoke(
            FakeListChatModel(responses=[reply]),
            [HumanMessage(secret_prompt)],
            spec="fake:model",
            purpose="test",
            prices={},
        )
        with pytest.raises(ModelError):
            invoke(
                Failing(responses=["x"]), [HumanMessage(secret_prompt)], spec="fake:model", purpose="test", prices={}
            )
        with (
            pytest.raises(ValueError),
            tool_span("search", tracer=tracer, query=secret_prompt, arguments={"query": secret_prompt}),
        ):
            raise ValueError(f"no document matches {secret_prompt}")
        root.set_attribute("quarry.job_id", "job-x")
    assert provider.force_flush(10_000)
    provider.shutdown()
    exported = collector.trace(trace_id)
    assert {s["name"] for s in exported} == {"job", "chat fake:model", "execute_tool search"}
    chats = [s for s in exported if s["name"] == "chat fake:model"]
    assert {s["attributes"]["openinference.span.kind"] for s in chats} == {"LLM"}
    assert {s["status"] for s in exported if s["name"] != "job"} >= {"ERROR"}
    markers = [secret_prompt, reply]
    local = load_spans(traces_dir(tmp_path), trace_id)
    local_leaks = leaks(local, markers)
    if capture == "true":
        assert leaks(exported, markers) and local_leaks
    elif capture == "false":
        assert not leaks(exported, markers) and not local_leaks and local
    else:
        assert not leaks(exported, markers), leaks(exported, markers)
        assert local_leaks, "the local file keeps the content by default"
    failed = next(s for s in exported if s["name"] == "execute_tool search")
    assert failed["status"] == "ERROR" and failed["attributes"]["error.type"] == "ValueError"
    if capture != "true":
        assert failed["status_message"] == "ValueError"
        assert all(set(e["attributes"]) <= {"exception.type", "exception.escaped"} for e in failed["events"])


def test_a_query_span_is_never_sampled_and_other_spans_are(tmp_path: Path, collector: Collector) -> None:
    provider = _provider(tmp_path, collector, None)
    tracer = provider.get_tracer("temporalio.contrib.opentelemetry")
    with tracer.start_as_current_span("HandleQuery:progress") as query:
        assert not query.is_recording()
    with tracer.start_as_current_span("QueryWorkflow:progress") as query:
        assert not query.is_recording()
    with tracer.start_as_current_span("HandleSignal:stop") as signal_span:
        assert signal_span.is_recording()
    provider.shutdown()


def test_the_policy_changes_only_content() -> None:
    """The policy changes nothing but content: names, ids, counts and statuses pass as they are."""
    from observability import content_policy

    attrs = {
        "quarry.hits": 3,
        "quarry.job_id": "job-1",
        "retrieval.documents.0.document.id": "gnn01",
        "quarry.query": "graph nets",
        "input.value": "graph nets",
    }
    assert content_policy.attributes(attrs, keep=False) == {
        "quarry.hits": 3,
        "quarry.job_id": "job-1",
        "retrieval.documents.0.document.id": "gnn01",
    }
    assert content_policy.attributes(attrs, keep=True) == attrs


def test_the_agent_span_identity_carries_the_run_start(tmp_path: Path) -> None:
    """What the workflow hands its final activity: the run's start, used as the span's start; a
    job that never ran (terminated in the queue) keeps its submission time."""
    from observability import get_tracer, load_spans
    from observability.agent_span import AgentTrace, emit_agent_span, new_agent_trace, with_run_start
    from observability.setup import build_provider

    ref = new_agent_trace()
    ran = AgentTrace.from_dict(with_run_start(ref.to_dict(), ref.start_ns / 1e9 + 25.0))
    assert with_run_start(None, 1.0) is None and ran.span_start_ns > ref.start_ns == ref.span_start_ns
    provider = build_provider("quarry-test", tmp_path, env={})
    emit_agent_span(
        ran, job_id="job-r", intent="x", output={"ranked": ["d1"]}, status="completed", tracer=get_tracer(provider)
    )
    provider.shutdown()
    (agent,) = load_spans(tmp_path / "traces", ref.trace_id)
    assert agent["start_ns"] == ran.run_start_ns and agent["span_id"] == ref.span_id
    assert abs(agent["attributes"]["quarry.wait_for_worker_ms"] - 25_000) < 1
