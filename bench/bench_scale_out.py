"""Scale-out: a durable dense build over one worker process and over two, one
embedding thread each, on one Temporal dev server (and, with --chroma, one `chroma run` server both
workers write to); then search jobs spread over both workers.

    python -m bench.bench_scale_out [--docs 600] [--chroma] [--jobs 30]

Each build is of its own copy of the same synthetic collection (~200-word documents, the drill's),
so neither reuses the other's vectors. Reported: wall seconds from start to commit and chunks/s for
one worker and for two, their speed-up (target ≥ 1.6× on this 2-core machine), the batches each
worker embedded (from the ledger the build keeps with the index) and that every batch was embedded
once; then `--jobs` heuristic jobs submitted at once, all of which must complete. Results also go to
bench/out/scale-out.json. Run it alone: it measures the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from tests.drill_kit import free_port, reachable, wait_for
from tests.fakes import SHORT_TOPICS, short_docs
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
TARGET_SPEEDUP = 1.6


def wait_until(ok, what: str, timeout_s: float = 180) -> None:
    wait_for(ok, what, timeout_s, 0.2)


class Processes:
    """The servers and workers this benchmark starts, all stopped at the end."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.procs: list[subprocess.Popen] = []

    def start(self, cmd: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        out = open(self.home / log, "ab")  # noqa: SIM115 - the process writes to it until stopped
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=os.environ | (env or {}))
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)


def start_workers(ps: Processes, n: int, env: dict[str, str]) -> list[subprocess.Popen]:
    workers = []
    for i in range(n):
        log = f"worker-{len(ps.procs)}-{i}.log"
        workers.append(ps.start([sys.executable, "-m", "quarry", "worker"], log, env))
        wait_until(lambda log=log: "worker polling" in (ps.home / log).read_text(errors="replace"), f"worker {i}")
    return workers


async def build(address: str, home: Path, name: str) -> dict[str, Any]:
    from quarry.app.dense_build import follow, start_or_attach
    from stores.collection import Collection
    from workflows.client import connect

    client = await connect(address, tracing=False)
    col = Collection(name, home)
    began = time.perf_counter()
    handle = await start_or_attach(client, home, name, col.version)
    result = await follow(handle, lambda *_: None)
    seconds = time.perf_counter() - began
    from stores.dense_staging import read_ledger

    ledger = read_ledger(col.paths.chroma_dir)
    starts = Counter(e["batch"] for e in ledger if e["event"] == "start")
    return {
        "seconds": round(seconds, 1),
        "chunks": result["meta"]["chunks"],
        "chunks_per_s": round(result["meta"]["chunks"] / seconds, 2),
        "batches": result["batches"],
        "batches_by_worker": sorted(Counter(e["pid"] for e in ledger if e["event"] == "done").values()),
        "embedded_twice": sum(1 for n in starts.values() if n > 1),
        "server": result["meta"]["server"],
    }


async def jobs(address: str, home: Path, name: str, count: int) -> dict[str, Any]:
    from workflows.client import connect, new_job_id, submit
    from workflows.job_failure import job_result
    from workflows.shared import JobInput, task_queue

    client = await connect(address, tracing=False)
    began = time.perf_counter()
    handles = [
        await submit(
            client,
            JobInput(job_id=new_job_id(), collection=name, intent=f"{SHORT_TOPICS[i % len(SHORT_TOPICS)]} number {i}"),
            queue=task_queue(home),
        )
        for i in range(count)
    ]
    results = await asyncio.gather(*(job_result(h) for h in handles))
    return {
        "jobs": count,
        "completed": sum(r.get("status") == "completed" for r in results),
        "seconds": round(time.perf_counter() - began, 1),
    }


def chroma_server(ps: Processes, home: Path) -> int:
    port = free_port()
    cli = Path(sys.executable).parent / "chroma"
    ps.start(
        [str(cli), "run", "--path", str(home / "chroma-server"), "--host", "127.0.0.1", "--port", str(port)],
        "chroma.log",
    )

    def up() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).read()
            return True
        except OSError:
            return False

    wait_until(up, "chroma run")
    return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--chroma", action="store_true", help="both workers write one `chroma run` server")
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    parser.add_argument(
        "--two-first", action="store_true", help="build with two workers first (warm caches favour the second)"
    )
    args = parser.parse_args()

    from stores.collection import ingest
    from workflows.processes.dev_server import server_command

    home = Path(tempfile.mkdtemp(prefix="quarry-scale-out-"))
    src = home / "src.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in short_docs(args.docs)))
    ps = Processes(home)
    out: dict[str, Any] = {
        "docs": args.docs,
        "cpus": os.cpu_count(),
        "chroma_server": args.chroma,
        "order": "two workers first" if args.two_first else "one worker first",
    }
    try:
        for name in ("one", "two"):
            ingest(src, name, home=home)
        port = free_port()
        ps.start(server_command(home, port, free_port()), "temporal.log")
        wait_until(lambda: reachable(port), "the Temporal dev server")
        address = f"127.0.0.1:{port}"
        env = {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": address, "QUARRY_EMBED_THREADS": "1"}
        if args.chroma:
            env |= {"QUARRY_CHROMA_HOST": "127.0.0.1", "QUARRY_CHROMA_PORT": str(chroma_server(ps, home))}
        os.environ.update(env)  # this process reads the same settings (the collection, the Chroma server)
        order = (("two", 2), ("one", 1)) if args.two_first else (("one", 1), ("two", 2))
        for name, workers in order:
            started = start_workers(ps, workers, env)
            key = f"{workers}_worker{'s' if workers > 1 else ''}"
            out[key] = asyncio.run(build(address, home, name))
            print(name, out[key], flush=True)
            if name == order[0][0]:  # the next build gets workers of its own
                for proc in started:
                    ps.stop(proc)
        if args.two_first:
            start_workers(ps, 1, env)  # the jobs below run over two workers in either order
        one, two = out["1_worker"], out["2_workers"]
        out["speedup"] = round(one["seconds"] / two["seconds"], 2)
        out["target_speedup"] = TARGET_SPEEDUP
        out["search_jobs"] = asyncio.run(jobs(address, home, "two", args.jobs))
    finally:
        ps.stop_all()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    (REPO / "bench" / "out").mkdir(exist_ok=True)
    target = (
        REPO
        / "bench"
        / "out"
        / f"scale-out{'-chroma' if args.chroma else ''}{'-two-first' if args.two_first else ''}.json"
    )
    target.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
