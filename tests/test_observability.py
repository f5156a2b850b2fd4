"""Observability: GenAI span names/attributes, JSONL trace files, trace views, exporter choice.

Every test builds its own TracerProvider (never the process-global one), so tests stay
independent of each other and of whatever else in the suite sets up tracing.
"""

from __future__ import annotations

import http.server
import json
import multiprocessing
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

import observability.setup as obs_setup
from observability import (
    JsonlSpanExporter,
    build_provider,
    current_trace_id,
    get_tracer,
    llm_span,
    load_spans,
    record_usage,
    setup_tracing,
    span_tree_lines,
    temporal_plugin,
    tool_span,
    tool_summary,
)
from observability.conventions import ShapingExporter
from observability.tool_spans import record_tool_result
from observability.whole_activities import WholeActivities
from stores.errors import QuarryError


@pytest.fixture()
def traced(tmp_path: Path):
    """A private provider writing JSONL under tmp_path/traces; yields (tracer, folder)."""
    folder = tmp_path / "traces"
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter(folder)))
    yield get_tracer(provider), folder
    provider.shutdown()


def _exporters(provider: TracerProvider) -> list[object]:
    """The exporters behind a provider's processors (SDK internals: inspection only)."""
    found = []
    for whole in provider._active_span_processor._span_processors:
        assert isinstance(whole, WholeActivities), "every exporter gets an activity's spans whole"
        proc = whole.inner
        if isinstance(proc, BatchSpanProcessor):
            found.append(("batch", _unwrap(proc._batch_processor._exporter)))
        elif isinstance(proc, SimpleSpanProcessor):
            found.append(("simple", _unwrap(proc.span_exporter)))
    return found


def _unwrap(exporter):
    """The exporter behind Quarry's ShapingExporter (statuses and content policy)."""
    return exporter.inner if isinstance(exporter, ShapingExporter) else exporter


def test_tool_span_has_genai_name_and_attributes(traced) -> None:
    tracer, folder = traced
    with tool_span(
        "search",
        call_id="c1",
        job_id="j1",
        tracer=tracer,
        query="bm25",
        search_id="s1",
        skipped=None,
        **{"gen_ai.tool.type": "function"},
    ) as span:
        span.set_attribute("quarry.hits", 1000)
        trace_id = current_trace_id()
    assert trace_id is not None and len(trace_id) == 32
    (rec,) = load_spans(folder, trace_id)
    assert rec["name"] == "execute_tool search"
    assert rec["attributes"] == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "c1",
        "quarry.job_id": "j1",
        "quarry.query": "bm25",
        "quarry.search_id": "s1",
        "gen_ai.tool.type": "function",
        "quarry.hits": 1000,
        "openinference.span.kind": "TOOL",
        "tool.name": "search",
    }
    assert rec["status"] == "OK" and rec["kind"] == "INTERNAL" and rec["parent_span_id"] is None
    assert len(rec["span_id"]) == 16 and rec["end_ns"] >= rec["start_ns"]


def test_call_id_defaults_to_fresh_uuid_hex(traced) -> None:
    """Without a call id each tool span gets its own: a random (version 4) UUID as 32 hex digits;
    an empty one given counts as none."""
    import uuid

    tracer, folder = traced
    trace_ids = []
    for given in (None, None, ""):
        with tool_span("read_document", tracer=tracer, call_id=given):
            trace_ids.append(current_trace_id())
    call_ids = []
    for trace_id in trace_ids:
        (rec,) = load_spans(folder, trace_id)
        call_ids.append(rec["attributes"]["gen_ai.tool.call.id"])
    assert len(set(call_ids)) == 3, f"call ids repeat: {call_ids}"
    for call_id in call_ids:
        assert uuid.UUID(call_id).hex == call_id and uuid.UUID(call_id).version == 4, call_id


def test_nested_spans_share_one_file_with_parent_ids(traced) -> None:
    tracer, folder = traced
    with tracer.start_as_current_span("job") as job:
        with tool_span("search", tracer=tracer, search_id="s1") as search:
            search.set_attribute("quarry.hits", 1000)
        with llm_span("gpt-x", tracer=tracer) as chat:
            record_usage(chat, 120, 30)
            with tool_span("read_document", tracer=tracer, docid="d7"):
                pass
        trace_id = current_trace_id()
    assert trace_id == format(job.get_span_context().trace_id, "032x")
    assert [p.name for p in folder.iterdir()] == [f"{trace_id}.jsonl"]
    spans = {s["name"]: s for s in load_spans(folder, trace_id)}
    assert set(spans) == {"job", "execute_tool search", "chat gpt-x", "execute_tool read_document"}
    job_id = spans["job"]["span_id"]
    assert spans["execute_tool search"]["parent_span_id"] == job_id
    assert spans["chat gpt-x"]["parent_span_id"] == job_id
    assert spans["execute_tool read_document"]["parent_span_id"] == spans["chat gpt-x"]["span_id"]
    chat_attrs = spans["chat gpt-x"]["attributes"]
    assert chat_attrs["gen_ai.operation.name"] == "chat"
    assert chat_attrs["gen_ai.request.model"] == "gpt-x"
    assert (chat_attrs["gen_ai.usage.input_tokens"], chat_attrs["gen_ai.usage.output_tokens"]) == (120, 30)

    lines = span_tree_lines(list(spans.values()))
    assert [line.lstrip().split("  ")[0] for line in lines] == [
        "job",
        "execute_tool search",
        "chat gpt-x",
        "execute_tool read_document",
    ]
    assert lines[0].startswith("job  ") and lines[0].endswith(" ms")
    assert lines[1].startswith("  execute_tool search  ") and lines[1].endswith("ms  search_id=s1 hits=1000")
    assert lines[2].startswith("  chat gpt-x  ") and lines[2].endswith("in=120 out=30")
    assert lines[3].startswith("    execute_tool read_document  ") and lines[3].endswith("docid=d7")


def test_exception_marks_span_error_and_reraises(traced) -> None:
    tracer, folder = traced
    with pytest.raises(ValueError, match="boom"), tracer.start_as_current_span("job"):
        trace_id = current_trace_id()
        with tool_span("search", tracer=tracer):
            raise ValueError("boom")
    spans = {s["name"]: s for s in load_spans(folder, trace_id)}
    failed = spans["execute_tool search"]
    assert failed["status"] == "ERROR" and failed["status_message"] == "ValueError: boom"
    assert failed["attributes"]["error.type"] == "ValueError"
    assert [e["name"] for e in failed["events"]] == ["exception"]
    assert failed["events"][0]["attributes"]["exception.message"] == "boom"
    assert "ERROR ValueError: boom" in span_tree_lines(list(spans.values()))[1]


def test_current_trace_id_is_none_outside_spans() -> None:
    assert current_trace_id() is None


def _span(name: str, span_id: str, parent: str | None, start: int, ms: float, **attrs) -> dict:
    return {
        "name": name,
        "span_id": span_id,
        "parent_span_id": parent,
        "start_ns": start,
        "duration_ms": ms,
        "status": "UNSET",
        "attributes": attrs,
    }


def _tool(span_id: str, tool: str, start: int, ms: float) -> dict:
    return _span(
        f"execute_tool {tool}",
        span_id,
        "root",
        start,
        ms,
        **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
    )


def test_tool_summary_counts_totals_and_median() -> None:
    spans = [
        _span("job", "root", None, 0, 100.0),
        _tool("a", "search", 1, 10.0),
        _tool("b", "search", 2, 30.0),
        _tool("c", "search", 3, 20.0),
        _tool("d", "read_document", 4, 50.0),
        _tool("e", "read_document", 5, 60.0),
        _span("chat m", "f", "root", 6, 500.0, **{"gen_ai.operation.name": "chat"}),
    ]
    assert tool_summary(spans) == [
        {"tool": "read_document", "count": 2, "total_ms": 110.0, "p50_ms": 55.0},
        {"tool": "search", "count": 3, "total_ms": 60.0, "p50_ms": 20.0},
    ]
    assert tool_summary([]) == []


def test_tree_orders_children_by_start_and_treats_orphans_as_roots() -> None:
    spans = [
        _span("late child", "c2", "r", 30, 1.0),
        _span("orphan", "o", "missing-parent", 5, 2.0),
        _span("root", "r", None, 0, 40.0),
        _span("early child", "c1", "r", 10, 1.0),
    ]
    assert span_tree_lines(spans) == [
        "root  40.0 ms",
        "  early child  1.0 ms",
        "  late child  1.0 ms",
        "orphan  2.0 ms",
    ]


def test_load_spans_errors_are_repairable(tmp_path: Path) -> None:
    with pytest.raises(QuarryError) as missing:
        load_spans(tmp_path, "0" * 32)
    assert missing.value.code == "no_trace" and missing.value.hint
    with pytest.raises(QuarryError) as bad:
        load_spans(tmp_path, "../etc/passwd")
    assert bad.value.code == "bad_trace_id"


def _append_many(folder: Path, worker: int) -> None:
    """Child process: append big lines through the exporter's single-write path."""
    from observability.jsonl_exporter import _append_line

    for i in range(50):
        line = json.dumps({"worker": worker, "i": i, "pad": "x" * 100_000}) + "\n"
        _append_line(folder / "shared.jsonl", line.encode())


def test_concurrent_processes_append_whole_lines(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(tmp_path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=20)
        assert p.exitcode == 0
    rows = [json.loads(line) for line in (tmp_path / "shared.jsonl").read_text().splitlines()]
    assert sorted((r["worker"], r["i"]) for r in rows) == [(w, i) for w in range(4) for i in range(50)]


def test_build_provider_without_endpoint_writes_jsonl(tmp_path: Path) -> None:
    provider = build_provider("quarry-test", tmp_path, env={})
    try:
        ((mode, exporter),) = _exporters(provider)
        assert mode == "simple" and isinstance(exporter, JsonlSpanExporter)
        assert exporter.folder == tmp_path / "traces"
        assert provider.resource.attributes["service.name"] == "quarry-test"
    finally:
        provider.shutdown()


@pytest.mark.parametrize(
    ("protocol", "module", "endpoint"),
    [
        (None, "opentelemetry.exporter.otlp.proto.http.trace_exporter", "http://127.0.0.1:9/v1/traces"),
        ("http/protobuf", "opentelemetry.exporter.otlp.proto.http.trace_exporter", "http://127.0.0.1:9/v1/traces"),
        ("grpc", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None),
    ],
)
def test_build_provider_with_endpoint_uses_otlp(tmp_path: Path, monkeypatch, protocol, module, endpoint) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("QUARRY_TRACE_FILES", raising=False)
    if protocol:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    else:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    provider = build_provider("quarry-test", tmp_path)
    try:
        (mode, exporter), (files, jsonl) = _exporters(provider)
        assert mode == "batch" and files == "simple" and isinstance(jsonl, JsonlSpanExporter)
        assert type(exporter).__name__ == "OTLPSpanExporter" and type(exporter).__module__ == module
        if endpoint:
            assert exporter._endpoint == endpoint
    finally:
        provider.shutdown()


def test_trace_files_are_kept_beside_otlp_unless_switched_off(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    for flag, modes in ((None, ["batch", "simple"]), ("1", ["batch", "simple"]), ("0", ["batch"])):
        provider = build_provider("quarry-test", tmp_path, env=env | ({"QUARRY_TRACE_FILES": flag} if flag else {}))
        try:
            assert [mode for mode, _ in _exporters(provider)] == modes
        finally:
            provider.shutdown()
    # Without OTLP the files cannot be switched off: they are the only record.
    provider = build_provider("quarry-test", tmp_path, env={"QUARRY_TRACE_FILES": "0"})
    try:
        assert [mode for mode, _ in _exporters(provider)] == ["simple"]
    finally:
        provider.shutdown()


def test_unknown_protocol_is_a_config_error(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    with pytest.raises(QuarryError) as err:
        build_provider("quarry-test", tmp_path, env=env)
    assert err.value.code == "bad_config"


def test_setup_tracing_is_idempotent_and_replay_safe(tmp_path: Path, monkeypatch) -> None:
    from temporalio.contrib.opentelemetry import OpenTelemetryPlugin, ReplaySafeTracerProvider

    installed: list[object] = []
    monkeypatch.setattr(obs_setup, "_provider", None)
    monkeypatch.setattr("opentelemetry.trace.set_tracer_provider", installed.append)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    first = setup_tracing("quarry-test", tmp_path)
    try:
        assert setup_tracing("other", tmp_path / "elsewhere") is first
        (global_provider,) = installed
        assert isinstance(global_provider, ReplaySafeTracerProvider)
        assert isinstance(temporal_plugin(), OpenTelemetryPlugin)
    finally:
        first.shutdown()


class _Collector(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, int]]] = []  # shared: the server makes a handler per request

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append((self.command, self.path, len(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_otlp_http_export_really_posts_to_v1_traces(tmp_path: Path) -> None:
    _Collector.received = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    server.timeout = 0.5

    def serve() -> None:  # bounded: a few requests or ~5 s, whichever comes first
        for _ in range(10):
            server.handle_request()
            if _Collector.received:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
    provider = build_provider("quarry-test", tmp_path, env=env)
    try:
        with tool_span("search", tracer=get_tracer(provider), search_id="s1"):
            pass
        assert provider.force_flush(5_000)
    finally:
        provider.shutdown()
        thread.join(timeout=6)
        server.server_close()
    assert _Collector.received and _Collector.received[0][:2] == ("POST", "/v1/traces")
    assert _Collector.received[0][2] > 0


# -- the GenAI / OpenInference conventions, statuses, content policy, the agent span -----------


def _shaping_provider(folder: Path, keep_content: bool = True) -> TracerProvider:
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    from observability.agent_span import ForcedIds

    provider = TracerProvider(shutdown_on_exit=False, id_generator=ForcedIds(RandomIdGenerator()))
    provider.add_span_processor(SimpleSpanProcessor(ShapingExporter(JsonlSpanExporter(folder), keep_content)))
    return provider


def test_exported_spans_never_stay_unset(tmp_path: Path) -> None:
    provider = _shaping_provider(tmp_path)
    tracer = get_tracer(provider)
    with tracer.start_as_current_span("plain") as plain:  # a span Quarry did not shape (like Temporal's)
        trace_id = format(plain.get_span_context().trace_id, "032x")
    with (
        pytest.raises(RuntimeError),
        tracer.start_as_current_span(
            "failing", record_exception=True, set_status_on_exception=False, context=trace.set_span_in_context(plain)
        ),
    ):
        raise RuntimeError("disk on fire")
    spans = {s["name"]: s for s in load_spans(tmp_path, trace_id)}
    assert spans["plain"]["status"] == "OK"
    assert spans["failing"]["status"] == "ERROR" and spans["failing"]["attributes"]["error.type"] == "RuntimeError"


def test_content_is_kept_in_files_dropped_elsewhere_and_redacted(tmp_path: Path, monkeypatch) -> None:
    from observability.conventions import CAPTURE_ENV, capture_content

    assert capture_content({}, local_file=True) and not capture_content({}, local_file=False)
    assert capture_content({CAPTURE_ENV: "true"}, local_file=False)
    assert not capture_content({CAPTURE_ENV: "false"}, local_file=True)
    monkeypatch.setenv("SOMEONES_API_KEY", "sk-live-0123456789abcdef")
    for keep, folder in ((True, tmp_path / "kept"), (False, tmp_path / "dropped")):
        provider = _shaping_provider(folder, keep)
        with tool_span(
            "search",
            tracer=get_tracer(provider),
            arguments={"query": "key sk-live-0123456789abcdef leaked", "reason": "r"},
        ) as span:
            trace_id = current_trace_id()
            span.set_attribute("quarry.hits", 3)
        (rec,) = load_spans(folder, trace_id)
        attrs = rec["attributes"]
        assert attrs["quarry.hits"] == 3 and attrs["gen_ai.tool.type"] == "function"
        if keep:
            assert "leaked" in attrs["gen_ai.tool.call.arguments"] and "leaked" in attrs["input.value"]
            assert "sk-live" not in json.dumps(rec), "content is redacted on its way out"
        else:
            assert not {"gen_ai.tool.call.arguments", "input.value", "tool.parameters"} & set(attrs)


def test_content_is_cut_at_the_named_cap() -> None:
    from observability.conventions import CONTENT_CAP, clip

    text = clip("x" * (CONTENT_CAP + 10))
    assert text.startswith("x" * CONTENT_CAP) and text.endswith(f"[truncated at {CONTENT_CAP} characters]")
    assert clip("short") == "short"


def test_the_agent_span_is_emitted_late_under_its_fixed_ids_and_parents_what_ran_before(tmp_path: Path) -> None:
    from observability.agent_span import AgentTrace, emit_agent_span, new_agent_trace, under_agent

    provider = _shaping_provider(tmp_path)
    tracer = get_tracer(provider)
    ref = new_agent_trace()
    assert AgentTrace.from_dict(ref.to_dict()) == ref
    # what a worker does long before the job ends
    with under_agent(ref), tool_span("search", tracer=tracer, query="q") as span:
        record_tool_result(span, "2 hits", [("d1", 3.5), ("d2", 1.0)])
    emit_agent_span(
        ref,
        job_id="job-1",
        intent="graph neural networks",
        tracer=tracer,
        output={"ranked": ["d1", "d2"], "answer": ""},
        status="completed",
    )
    spans = {s["name"]: s for s in load_spans(tmp_path, ref.trace_id)}
    root, search = spans["invoke_agent quarry"], spans["execute_tool search"]
    assert root["span_id"] == ref.span_id and root["parent_span_id"] is None and root["start_ns"] == ref.start_ns
    assert search["parent_span_id"] == ref.span_id
    a = root["attributes"]
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "quarry"
    assert a["gen_ai.conversation.id"] == "job-1" and a["openinference.span.kind"] == "AGENT"
    assert "graph neural networks" in a["gen_ai.input.messages"] and a["input.value"] == "graph neural networks"
    assert json.loads(a["output.value"]) == {"ranked": ["d1", "d2"]} and root["status"] == "OK"
    s = search["attributes"]
    assert s["openinference.span.kind"] == "TOOL" and s["gen_ai.tool.call.result"] == "2 hits"
    assert s["retrieval.documents.1.document.id"] == "d2" and s["retrieval.documents.0.document.score"] == 3.5


def test_a_failed_job_has_an_error_agent_span(tmp_path: Path) -> None:
    from observability.agent_span import emit_agent_span, new_agent_trace

    provider = _shaping_provider(tmp_path)
    ref = new_agent_trace()
    emit_agent_span(
        ref,
        job_id="job-2",
        intent="x",
        output={},
        status="failed",
        error="QuarryError: the collection is gone",
        tracer=get_tracer(provider),
    )
    (root,) = load_spans(tmp_path, ref.trace_id)
    assert root["status"] == "ERROR" and root["attributes"]["error.type"] == "QuarryError"


def test_rounds_grouping_filters_and_duplicate_spans(tmp_path: Path) -> None:
    from observability import rounds_summary, select_spans

    spans = [
        _span("invoke_agent quarry", "root", None, 0, 100.0),
        _span("node retrieval", "n1", "root", 1, 10.0, **{"quarry.round": 1}),
        _tool("t1", "search", 2, 2.0) | {"parent_span_id": "n1"},
        _span("node retrieval", "n2", "root", 20, 10.0, **{"quarry.round": 2}),
        _tool("t2", "search", 21, 4.0) | {"parent_span_id": "n2"},
        _tool("t3", "read_documents", 22, 6.0) | {"parent_span_id": "n2"},
        _span(
            "chat m",
            "c1",
            "n2",
            23,
            50.0,
            **{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4},
        ),
    ]
    spans[2]["attributes"]["quarry.query"] = "graph nets"
    spans[4]["attributes"] |= {"quarry.query": "graph graph nets nets nets", "quarry.channel": "semantic"}
    assert [s["span_id"] for s in select_spans(spans, tool="search")] == ["t1", "t2"]
    assert [s["span_id"] for s in select_spans(spans, round_no=2)] == ["n2", "t2", "t3", "c1"]
    groups = {g["round"]: g for g in rounds_summary(spans)}
    assert groups[1]["queries"] == ["lexical: graph nets"] and groups[1]["tools"][0]["count"] == 1
    assert groups[2]["queries"] == ["semantic: graph nets (weighted)"]
    assert groups[2]["model_calls"] == 1 and groups[2]["input_tokens"] == 10 and groups[2]["output_tokens"] == 4
    assert groups[None]["spans"] == 1
    folder = tmp_path / "t"
    folder.mkdir()
    trace_id = "ab" * 16
    (folder / f"{trace_id}.jsonl").write_text("\n".join(json.dumps(s) for s in spans + spans[:1]) + "\n")
    assert len(load_spans(folder, trace_id)) == len(spans), "a span exported twice is read once"
