"""What a durable heuristic job costs over the same graph in-process, its Temporal history per
round, and the memory of a worker serving jobs.

    python -m bench.bench_jobs [--datasets ../shared/datasets] [--queries 20]

In one process, for the first N judged queries of CACM and SciFact-train (ingested into a
temporary QUARRY_HOME): each query runs (a) as the compiled search graph invoked in-process and
(b) as a SearchJob workflow on a local dev server with an in-process worker — interleaved, so
machine load hits both alike. Reported: median per-job seconds of each, their ratio (target
≤ 1.25), history bytes per job and per round. Then a worker *process* (`quarry worker`) serves
the same SciFact jobs one after another and its peak resident memory (VmHWM) is read (target
≤ 2 GB). Results also go to bench/out/bench_jobs.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.finished import finished
from bench.slices import DEFAULT_DATASETS
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = ("cacm", "scifact-train")
TARGET_RATIO = 1.25
TARGET_RSS_GB = 2.0


def judged(col, n: int) -> list[str]:
    qrels = col.corpus.qrels(sorted(col.corpus.splits())[0])
    texts = col.corpus.queries()
    return [texts[q] for q in sorted((q for q in qrels if q in texts), key=lambda q: (len(q), q))[:n]]


async def in_process(name: str, intent: str) -> float:
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control

    token = use_control(Control())
    try:
        began = time.perf_counter()
        await (
            make_search_graph()
            .compile()
            .ainvoke(initial_state(f"inproc-{uuid.uuid4().hex[:8]}", name, intent), config={"recursion_limit": 10_000})
        )
        return time.perf_counter() - began
    finally:
        reset_control(token)


async def durable(env, queue: str, name: str, intent: str) -> tuple[float, int, int]:
    from workflows.client import submit
    from workflows.shared import JobInput

    began = time.perf_counter()
    handle = await submit(
        env.client, JobInput(job_id=f"bench-{uuid.uuid4().hex[:8]}", collection=name, intent=intent), queue=queue
    )
    result = await finished(handle)
    elapsed = time.perf_counter() - began
    history = await handle.fetch_history()
    return elapsed, sum(e.ByteSize() for e in history.events), int(result["rounds"])


async def bench_collection(home: Path, name: str, queries: list[str], runners: list[str] | None = None) -> dict:
    """In-process against durable runs of the same jobs, interleaved (the order rotates per query);
    with several workflow `runners`, one worker per runner on its own queue, each measured alike."""
    from contextlib import AsyncExitStack

    from temporalio.testing import WorkflowEnvironment

    from nodes.job.runtime import NodeRuntime, configure_runtime
    from workflows.processes.dev_server import temporal_binary
    from workflows.worker import DEFAULT_RUNNER, build_worker

    kinds = runners or [DEFAULT_RUNNER]
    async with (
        await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), dev_server_extra_args=["--log-level", "error"]
        ) as env,
        AsyncExitStack() as stack,
    ):
        queues = {kind: f"bench-{kind}-{uuid.uuid4().hex[:8]}" for kind in kinds}
        for kind, queue in queues.items():
            await stack.enter_async_context(build_worker(env.client, home=home, queue=queue, runner=kind))
        configure_runtime(NodeRuntime(home))  # the same stores for the in-process runs
        await in_process(name, queries[0])  # warm-up: JVM, caches
        for queue in queues.values():
            await durable(env, queue, name, queries[0])
        legs = ["in-process", *kinds]
        local: list[float] = []
        remote: dict[str, list[float]] = {kind: [] for kind in kinds}
        sizes, rounds = [], []
        for i, q in enumerate(queries):
            for leg in legs[i % len(legs) :] + legs[: i % len(legs)]:
                if leg == "in-process":
                    local.append(await in_process(name, q))
                    continue
                t, size, r = await durable(env, queues[leg], name, q)
                remote[leg].append(t)
                if leg == kinds[0]:
                    sizes.append(size)
                    rounds.append(r)
    ratio = statistics.median(remote[kinds[0]]) / statistics.median(local)
    by_runner = {
        kind: {
            "durable_s_median": round(statistics.median(ts), 3),
            "ratio": round(statistics.median(ts) / statistics.median(local), 3),
        }
        for kind, ts in remote.items()
    }
    return {
        "runner": kinds[0],
        "runners": by_runner,
        "queries": len(queries),
        "in_process_s_median": round(statistics.median(local), 3),
        "durable_s_median": round(statistics.median(remote[kinds[0]]), 3),
        "ratio": round(ratio, 3),
        "pass": ratio <= TARGET_RATIO,
        "history_bytes_median": int(statistics.median(sizes)),
        "history_bytes_max": max(sizes),
        "history_bytes_per_round": int(sum(sizes) / max(sum(rounds), 1)),
        "rounds_mean": round(sum(rounds) / len(rounds), 2),
    }


def worker_peak_rss(home: Path, name: str, queries: list[str]) -> dict:
    """Peak RSS of a real `quarry worker` process serving the jobs one after another."""
    from temporalio.testing import WorkflowEnvironment

    from workflows.client import submit
    from workflows.processes.dev_server import temporal_binary
    from workflows.shared import JobInput

    async def main() -> dict:
        async with await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), dev_server_extra_args=["--log-level", "error"]
        ) as env:
            address = env.client.service_client.config.target_host
            queue = f"bench-rss-{uuid.uuid4().hex[:8]}"
            proc = subprocess.Popen(
                [sys.executable, "-m", "quarry", "--home", str(home), "worker"],
                env=os.environ | {"QUARRY_TEMPORAL_ADDRESS": address, "QUARRY_TASK_QUEUE": queue},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                began = time.perf_counter()
                for q in queries:
                    handle = await submit(
                        env.client,
                        JobInput(job_id=f"rss-{uuid.uuid4().hex[:8]}", collection=name, intent=q),
                        queue=queue,
                    )
                    await finished(handle, 600)
                hwm_kb = next(
                    int(line.split()[1])
                    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                    if line.startswith("VmHWM:")
                )
            finally:
                proc.terminate()
                proc.wait(30)
        gb = hwm_kb / 1024 / 1024
        return {
            "jobs": len(queries),
            "seconds": round(time.perf_counter() - began, 1),
            "peak_rss_gb": round(gb, 3),
            "pass": gb <= TARGET_RSS_GB,
        }

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also build and use the dense index (slower jobs, as in `quarry eval`; the first build takes minutes)",
    )
    parser.add_argument("--no-rss", action="store_true", help="skip the worker memory measurement")
    parser.add_argument(
        "--runners",
        default="",
        help="comma-separated workflow runners to compare in one run (workflows.worker.RUNNERS); the first is reported",
    )
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="quarry-bench-jobs-"))
    os.environ["QUARRY_HOME"] = str(home)
    from stores.collection import Collection, ingest

    out: dict = {}
    for name in args.collections:
        ingest(args.datasets / name, name, home=home)
        col = Collection(name, home)
        if args.dense:
            from stores.dense import DenseIndex

            DenseIndex(col.paths, name).ensure(col.corpus)
        key = f"{name}{'+dense' if args.dense else ''}"
        runners = [r for r in args.runners.split(",") if r] or None
        out[key] = asyncio.run(bench_collection(home, name, judged(col, args.queries), runners))
        print(json.dumps({key: out[key]}), flush=True)
    if not args.no_rss:
        name = args.collections[-1]
        out["worker_rss"] = worker_peak_rss(home, name, judged(Collection(name, home), args.queries)) | {
            "collection": name
        }
        print(json.dumps({"worker_rss": out["worker_rss"]}), flush=True)
    path = REPO / "bench" / "out" / ("bench_jobs-dense.json" if args.dense else "bench_jobs.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
