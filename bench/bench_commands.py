"""Latency of the job commands that need neither Lucene nor the embedding model (target < 1 s).

    python -m bench.bench_commands [--repeats 5]

A scratch QUARRY_HOME gets the sample corpus and one finished job (run through the embedded
server); then each command runs as a fresh process `--repeats` times, interleaved with a bare
`python -c pass` as the reference for interpreter start-up. Reported: median wall seconds per
command, and its ratio to the bare interpreter. bench/out/bench_commands.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.process_exit import run_script

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 1.0


def run(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=env, cwd=REPO, capture_output=True, timeout=120)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="quarry-bench-cmd-"))
    env = os.environ | {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": "127.0.0.1:7399", "QUARRY_UI_PORT": "8399"}
    quarry = [sys.executable, "-m", "quarry"]
    subprocess.run(
        [*quarry, "ingest", "examples/corpus", "--name", "sample"], env=env, cwd=REPO, check=True, capture_output=True
    )
    done = subprocess.run(
        [*quarry, "run", "sample", "dense passage retrieval", "--wait", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    job = json.loads(done.stdout.strip().splitlines()[-1])["job_id"]
    commands = {
        "--help": ["--help"],
        "collections": ["collections"],
        "job list": ["job", "list"],
        "job show": ["job", "show", job],
        "job result": ["job", "result", job],
        "job progress (finished)": ["job", "progress", job],
        "job watch (finished)": ["job", "watch", job],
        "job stop (finished)": ["job", "stop", job],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    bare: list[float] = []
    try:
        for _ in range(args.repeats):
            bare.append(run([sys.executable, "-c", "pass"], env))
            for name, cmd in commands.items():
                times[name].append(run([*quarry, *cmd], env))
    finally:
        subprocess.run([*quarry, "down"], env=env, cwd=REPO, capture_output=True)
    ref = statistics.median(bare)
    out: dict[str, Any] = {"python_startup_s": round(ref, 3), "commands": {}}
    for name, samples in times.items():
        median = statistics.median(samples)
        out["commands"][name] = {
            "median_s": round(median, 3),
            "ratio_to_python": round(median / ref, 1),
            "pass": median < TARGET_S,
        }
        print(
            f"{name:<26} {median:6.3f} s  ({median / ref:4.1f}× python start-up)  {'PASS' if median < TARGET_S else 'FAIL'}"
        )
    path = REPO / "bench" / "out" / "bench_commands.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
