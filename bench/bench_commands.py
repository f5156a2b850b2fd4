"""What the commands a user types cost, as a fresh process each, against references in the same run.

    python -m bench.bench_commands [--repeats 20] [--datasets ../shared/datasets] [--collection cacm]
    python -m bench.bench_commands --synthetic 100000 [--words 300]   # search and read on 100k documents

Why: a command line is felt by its wall time from Enter to the last line, start-up included; the
targets are ratios to things measured in the same run on the same machine, never absolute times:
`quarry --help` and the job commands ≤ 5× a bare `python -c pass`; `quarry search` / `quarry read`
answered by the resident process ≤ 2× it.

Set-up: Quarry's packages are compiled to bytecode first (as a user's first run leaves them; a
PYTHONDONTWRITEBYTECODE in the environment would otherwise make every run compile them). A scratch
QUARRY_HOME gets the sample corpus and one finished job (run through the embedded Temporal server,
which stays up as it does for a user after `quarry run`), and the --collection (CACM by default, BM25
only; with --synthetic N, a generated corpus of N documents of --words words, bench/scale_corpus.py);
a second, empty home is the fresh one. Each home's resident process is started the way a user's
commands start it (a search in the first, a `job list` in the fresh one) and waited for. Then,
--repeats times, interleaved (the order rotates each round), each command runs as the `quarry`
executable a user types (the console script beside this Python; `python -m quarry` where there is
none):

  --help · collections · job list (fresh home, and the home with the finished job) · job show /
  result / progress / watch / stop of the finished job · search and read on the collection: each
  answered by the resident process, and in-process (QUARRY_RESIDENT=0: the first command in a
  home, before the resident process is up)

and the references:

  python -c pass · Pyserini's own LuceneSearcher in a fresh process (the same index and query,
  depth 1000, the JVM booted by stores.jvm's recipe) · the same search through `quarry serve`'s HTTP
  API (started once), both as one request from this process and as a fresh `python -c` that sends it.

Reported: each median in seconds, its ratio to `python -c pass`, and for search and read the ratio
to Pyserini's fresh process and to the HTTP request; a target is checked on the rows a user gets by
default once the resident process is up. bench/out/bench_commands.json.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

from bench.slices import DEFAULT_DATASETS
from quarry.resident.server import PACKAGES
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "bench_commands.json"
TARGET_JOB = 5.0  # --help and the job commands: × python -c pass
TARGET_RESIDENT = 2.0  # search/read through the resident searcher: × python -c pass
RESIDENT_READY_S = 120.0  # the longest the resident searcher may take to come up (JVM, index readers)
DEPTH = 1000  # quarry search's ranking depth (nodes.job.config.TOOL_LIMITS.depth)

# The reference search: Pyserini's LuceneSearcher, in a process of its own, on the same index.
PYSERINI = """
import sys
from stores.jvm import pyserini_lucene
searcher = pyserini_lucene().LuceneSearcher(sys.argv[1])
hits = searcher.search(sys.argv[2], k=int(sys.argv[3]))
print(hits[0].docid if hits else "")
"""
# The same search through `quarry serve`, from a fresh interpreter (what an HTTP client costs).
HTTP_FRESH = """
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=json.dumps({"query": sys.argv[2]}).encode(),
                             headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=60))["hits"][0]["docid"])
"""


def stop(message: str) -> NoReturn:
    """End the benchmark with why (run_script keeps a SystemExit's status, not its text)."""
    print(message, file=sys.stderr)
    raise SystemExit(1)


def timed(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one process, which must end as expected (a figure from a failed command means
    nothing): exit 0, or 1 for `job stop` of a finished job (its one message: nothing to stop)."""
    started = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - started
    if done.returncode != (1 if args[-2:-1] == ["stop"] else 0) or "Traceback" in done.stderr:
        stop(f"{' '.join(args[:6])}… exited {done.returncode}: {done.stderr[-800:]}")
    return took


def executable() -> list[str]:
    """How a user runs quarry: the console script beside this Python; `python -m quarry` for a
    Quarry without the resident searcher's front (the script would not import)."""
    script = Path(sys.executable).parent / "quarry"
    if script.is_file() and importlib.util.find_spec("quarry.resident.client") is not None:
        return [str(script)]
    return [sys.executable, "-m", "quarry"]


def quarry(env: dict[str, str], *args: str) -> str:
    """A quarry command's stdout, for the set-up."""
    done = subprocess.run([*executable(), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        stop(f"quarry {' '.join(args)} exited {done.returncode}: {done.stderr[-800:]}")
    return done.stdout


def resident_up(env: dict[str, str], home: Path, command: list[str]) -> bool:
    """Start the home's resident process the way a user's commands do (the first `command` that finds
    none starts it) and wait until it answers; False when this Quarry has none or it does not come up."""
    if importlib.util.find_spec("quarry.resident.client") is None:
        return False
    from quarry.resident.client import SOCKET_NAME

    quarry(env, *command)
    deadline = time.monotonic() + RESIDENT_READY_S
    while not (home / "run" / SOCKET_NAME).exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)  # polls a real condition (the socket is bound), bounded above
    quarry(env, *command)  # its first answer opens what the command reads
    return True


def synthetic(n: int, words: int) -> Path:
    """A generated BEIR folder of `n` documents (bench/scale_corpus.py; deterministic), in scratch."""
    from bench.scale_corpus import write_beir

    folder = Path(tempfile.mkdtemp(prefix="quarry-bench-cmd-corpus-")) / f"synthetic-{n}"
    write_beir(folder, n, words=words)
    return folder


def set_up(args: argparse.Namespace, home: Path, env: dict[str, str]) -> dict[str, Any]:
    """The homes' contents and what the commands name: the finished job, the query, a docid."""
    quarry(env, "ingest", "examples/corpus", "--name", "sample")
    done = quarry(env, "run", "sample", "dense passage retrieval", "--wait", "--json")
    job = json.loads(done.strip().splitlines()[-1])["job_id"]
    source = synthetic(args.synthetic, args.words) if args.synthetic else args.datasets.resolve() / args.collection
    name = source.name
    quarry(env, "ingest", str(source), "--name", name)
    if args.synthetic:
        shutil.rmtree(source.parent)  # the collection keeps its own copy
    from stores.collection import Collection

    col = Collection(name, home=home)
    query = next(t for _, t in sorted(col.corpus.queries().items()) if t.strip())
    hits = json.loads(quarry(env | {"QUARRY_RESIDENT": "0"}, "search", name, query, "--json").strip().splitlines()[-1])
    docid = hits["hits"][0]["docid"]
    return {"job": job, "query": query, "docid": docid, "lucene": str(col.paths.lucene_dir), "name": name}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_commands", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder with the BEIR collections")
    parser.add_argument("--collection", default="cacm", help="a BEIR folder under --datasets for search and read")
    parser.add_argument("--synthetic", type=int, default=0, help="search and read a generated corpus of N documents")
    parser.add_argument("--words", type=int, default=300, help="mean words per generated document")
    args = parser.parse_args()
    root = REPO.resolve()
    for package in PACKAGES:  # bytecode as a user's first run leaves it (see the module's docstring)
        compileall.compile_dir(root / package, quiet=1)
    home = Path(tempfile.mkdtemp(prefix="quarry-bench-cmd-"))
    fresh = Path(tempfile.mkdtemp(prefix="quarry-bench-cmd-fresh-"))
    ports = {"QUARRY_TEMPORAL_ADDRESS": "127.0.0.1:7399", "QUARRY_UI_PORT": "8399"}
    env = os.environ | {"QUARRY_HOME": str(home), "QUARRY_RESIDENT": "1"} | ports
    fresh_env = env | {"QUARRY_HOME": str(fresh)}
    off = {"QUARRY_RESIDENT": "0"}
    os.environ["QUARRY_HOME"] = str(home)  # the collection opened in this process (set_up) is this home's
    py, q = sys.executable, executable()
    try:
        got = set_up(args, home, env | off)
        name, job, query, docid = got["name"], got["job"], got["query"], got["docid"]
        search, read = ["search", name, query], ["read", name, docid]
        answered: dict[str, tuple[list[str], dict[str, str]]] = {
            "--help": ([*q, "--help"], env),
            "collections": ([*q, "collections"], env),
            "job list (fresh home)": ([*q, "job", "list"], fresh_env),
            "job list (finished job)": ([*q, "job", "list"], env),
            "job show": ([*q, "job", "show", job], env),
            "job result": ([*q, "job", "result", job], env),
            "job progress (finished)": ([*q, "job", "progress", job], env),
            "job watch (finished)": ([*q, "job", "watch", job], env),
            "job stop (finished)": ([*q, "job", "stop", job], env),
            "search": ([*q, *search], env),
            "read": ([*q, *read], env),
        }
        commands: dict[str, tuple[list[str], dict[str, str]]] = {"python -c pass": ([py, "-c", "pass"], env)}
        for label, (argv, cmd_env) in answered.items():
            commands[f"{label} (in-process)"] = (argv, cmd_env | off)
        commands["pyserini LuceneSearcher (fresh process)"] = (
            [py, "-c", PYSERINI, got["lucene"], query, str(DEPTH)],
            env,
        )
        resident = resident_up(env, home, search) and resident_up(fresh_env, fresh, ["job", "list"])
        if resident:
            commands |= {f"{label} (resident)": command for label, command in answered.items()}
        result = measure(args, home, commands, query, name)
        result["resident"] = "measured" if resident else "not available in this Quarry: slot left empty"
    finally:
        for stopped in (env, fresh_env):
            subprocess.run([*q, "down"], env=stopped, cwd=REPO, capture_output=True)
        for scratch in (home, fresh):  # a synthetic collection is gigabytes
            shutil.rmtree(scratch, ignore_errors=True)
    report(result)


def measure(
    args: argparse.Namespace, home: Path, commands: dict[str, tuple[list[str], dict[str, str]]], query: str, name: str
) -> dict[str, Any]:
    """Every command --repeats times, interleaved, with `quarry serve` up for the HTTP references."""
    import httpx

    from tests.serve_kit import serving

    times: dict[str, list[float]] = {label: [] for label in commands}
    times["serve HTTP (request)"], times["serve HTTP (fresh python + request)"] = [], []
    with serving(home) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        url = f"{served.url}/api/collections/{name}/search"
        labels = list(commands)
        for i in range(args.repeats):
            for label in labels[i % len(labels) :] + labels[: i % len(labels)]:
                argv, env = commands[label]
                times[label].append(timed(argv, env))
            started = time.perf_counter()
            http.post(url, json={"query": query}).raise_for_status()
            times["serve HTTP (request)"].append(time.perf_counter() - started)
            times["serve HTTP (fresh python + request)"].append(
                timed([sys.executable, "-c", HTTP_FRESH, url, query], commands["python -c pass"][1])
            )
    medians = {label: statistics.median(samples) for label, samples in times.items()}
    return {
        "repeats": args.repeats,
        "collection": name,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "median_s": {label: round(m, 4) for label, m in medians.items()},
    }


def report(result: dict[str, Any]) -> None:
    medians = result["median_s"]
    bare = medians["python -c pass"]
    pyserini = medians["pyserini LuceneSearcher (fresh process)"]
    http = medians["serve HTTP (request)"]
    rows: dict[str, Any] = {}
    for label, median in medians.items():
        row: dict[str, Any] = {"median_s": median, "x_python": round(median / bare, 1)}
        if label.startswith(("search", "read")):
            row["x_pyserini_fresh"] = round(median / pyserini, 2)
            row["x_serve_http"] = round(median / http, 1)
        if label.endswith("(resident)"):  # what a user gets by default once it is up
            target = TARGET_RESIDENT if label.startswith(("search", "read")) else TARGET_JOB
            row["target_x_python"], row["pass"] = target, median / bare <= target
        rows[label] = row
        extra = "".join(f"  {k[2:]} {row[k]}×" for k in ("x_pyserini_fresh", "x_serve_http") if k in row)
        verdict = (
            "" if "pass" not in row else ("  PASS" if row["pass"] else f"  FAIL (target ≤ {row['target_x_python']}×)")
        )
        print(f"{label:<40} {median:7.3f} s  {row['x_python']:6.1f}× python{extra}{verdict}")
    if result["resident"] != "measured":
        print(f"resident search/read: {result['resident']}")
    result["commands"] = rows
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_script(main)
