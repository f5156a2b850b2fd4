"""How big a job's trace is: spans and bytes per round, and what grouping the reads saves.

    python -m bench.bench_trace [--collection-path examples/corpus] [--mode list answer]

Heuristic jobs (3 rounds) run in-process on the bundled sample corpus with Quarry's tracing
(JSONL files through the shaping exporter, content kept as the local default does). Reported per
mode: total spans and bytes of the trace file, spans and bytes per round (from `quarry.round` on
node spans), and how many per-document `read_document` events the batched `read_documents`
spans carry — each of which was a span of its own before batching. Results also go to
bench/out/bench_trace.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Literal

from workflows.processes.exit import run_script

ROOT = Path(__file__).resolve().parent.parent


def run_job(home: Path, name: str, intent: str, mode: Literal["list", "answer"]) -> str:
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control
    from observability import get_tracer
    from observability.agent_span import emit_agent_span, new_agent_trace, under_agent

    ref = new_agent_trace()
    job_id = f"bench-trace-{uuid.uuid4().hex[:8]}"
    token = use_control(Control())
    try:
        with under_agent(ref), get_tracer().start_as_current_span("RunWorkflow:SearchJob"):
            asyncio.run(
                make_search_graph()
                .compile()
                .ainvoke(initial_state(job_id, name, intent, mode=mode), config={"recursion_limit": 10_000})
            )
    finally:
        reset_control(token)
    from nodes.job.runtime import runtime

    result = runtime().jobs.load_draft(job_id) or {}  # the result is kept by reference, in the job store
    emit_agent_span(
        ref,
        job_id=job_id,
        intent=intent,
        status="completed",
        output={"answer": result.get("answer") or "", "ranked": [r["docid"] for r in result.get("ranked", [])]},
    )
    return ref.trace_id


def measure(folder: Path, trace_id: str) -> dict:
    from observability import load_spans
    from observability.trace_view import span_rounds

    path = folder / f"{trace_id}.jsonl"
    lines = path.read_text().splitlines()
    spans = load_spans(folder, trace_id)
    rounds = span_rounds(spans)
    per_round: dict[str, dict[str, int]] = defaultdict(lambda: {"spans": 0, "bytes": 0})
    for line in lines:
        span = json.loads(line)
        key = str(rounds.get(span["span_id"]))
        per_round[key]["spans"] += 1
        per_round[key]["bytes"] += len(line.encode()) + 1
    events = sum(len(s.get("events", [])) for s in spans if s["name"] == "execute_tool read_documents")
    return {
        "spans": len(spans),
        "bytes": path.stat().st_size,
        "per_round": dict(per_round),
        "read_events_in_batches": events,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection-path", type=Path, default=ROOT / "examples" / "corpus")
    parser.add_argument("--mode", nargs="+", default=["list", "answer"])
    args = parser.parse_args()
    from opentelemetry import trace

    from nodes.job.runtime import NodeRuntime, configure_runtime
    from observability import build_provider, traces_dir
    from stores.collection import ingest

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        ingest(args.collection_path, "bench", home=home)
        provider = build_provider("quarry-bench", home, env={})
        trace.set_tracer_provider(provider)
        configure_runtime(NodeRuntime(home))
        intent = "dense passage retrieval with dual encoders for open-domain question answering, not surveys"
        for mode in args.mode:
            out[mode] = measure(traces_dir(home), run_job(home, "bench", intent, mode))
            m = out[mode]
            print(
                f"{mode}: {m['spans']} spans, {m['bytes'] / 1024:.1f} KiB; read_document events in batches: "
                f"{m['read_events_in_batches']} (spans saved)"
            )
            for key, row in sorted(m["per_round"].items()):
                label = "outside rounds" if key == "None" else f"round {key}"
                print(f"  {label}: {row['spans']} spans, {row['bytes'] / 1024:.1f} KiB")
        configure_runtime(None)
        provider.shutdown()
    target = ROOT / "bench" / "out" / "bench_trace.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
