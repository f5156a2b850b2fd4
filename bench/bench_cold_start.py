"""What a fresh worker's first job costs against its second: the cold-start penalty a job pays
inside its own budget.

    python -m bench.bench_cold_start [--datasets ../shared/datasets] [--trials 5]

CACM is ingested into a temporary QUARRY_HOME and a local dev server started. Each trial starts a
new `quarry worker` process, waits for the line it prints when it starts polling (`ready_s`),
then runs the same heuristic job twice, one after the other, timing each from submission to
result. Reported: medians of ready time, first and second job, and first/second (the reference is
the second job of the same worker, in the same run). A job's budget starts when a worker picks
it up, so whatever the worker opens before polling is not spent from the first job's budget.
Results also go to bench/out/bench_cold_start.json.
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

REPO = Path(__file__).resolve().parents[1]
COLLECTION = "cacm"
READY_LINE = "worker polling"


def start_worker(home: Path, address: str, queue: str) -> tuple[subprocess.Popen, float]:
    """A `quarry worker` process and the seconds until it said it polls."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "quarry", "--home", str(home), "worker"],
        env=os.environ | {"QUARRY_TEMPORAL_ADDRESS": address, "QUARRY_TASK_QUEUE": queue, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if READY_LINE in line:
            return proc, time.perf_counter() - began
    raise SystemExit(f"the worker ended before polling (exit {proc.wait()})")


async def one_trial(client, home: Path, address: str, intent: str) -> dict:
    from workflows.client import submit
    from workflows.shared import JobInput

    queue = f"bench-cold-{uuid.uuid4().hex[:8]}"
    proc, ready_s = await asyncio.to_thread(start_worker, home, address, queue)
    try:
        times = []
        for _ in range(2):
            began = time.perf_counter()
            handle = await submit(
                client,
                JobInput(job_id=f"cold-{uuid.uuid4().hex[:8]}", collection=COLLECTION, intent=intent),
                queue=queue,
            )
            await finished(handle, 600)
            times.append(time.perf_counter() - began)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"ready_s": ready_s, "first_s": times[0], "second_s": times[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="quarry-bench-cold-"))
    os.environ["QUARRY_HOME"] = str(home)
    from temporalio.testing import WorkflowEnvironment

    from stores.collection import Collection, ingest
    from workflows.processes.dev_server import temporal_binary

    ingest(args.datasets / COLLECTION, COLLECTION, home=home)
    col = Collection(COLLECTION, home)
    intent = col.corpus.queries()[sorted(col.corpus.queries())[0]]

    async def run() -> list[dict]:
        async with await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), dev_server_extra_args=["--log-level", "error"]
        ) as env:
            address = env.client.service_client.config.target_host
            trials = []
            for i in range(args.trials):
                trials.append(await one_trial(env.client, home, address, intent))
                print(json.dumps({"trial": i + 1} | {k: round(v, 2) for k, v in trials[-1].items()}), flush=True)
            return trials

    trials = asyncio.run(run())
    med = {k: round(statistics.median(t[k] for t in trials), 2) for k in ("ready_s", "first_s", "second_s")}
    out = {
        "collection": COLLECTION,
        "trials": len(trials),
        "median": med,
        "first_over_second": round(med["first_s"] / med["second_s"], 2),
        "runs": trials,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}))
    path = REPO / "bench" / "out" / "bench_cold_start.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
