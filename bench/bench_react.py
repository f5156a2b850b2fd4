"""What durability costs a ReAct job, and how its Temporal history grows with the conversation.

    python -m bench.bench_react [--turns 10 40] [--repeats 3]

A scripted chat model (no network; every turn returns immediately) alternates search and
read_document calls on the bundled sample corpus for T turns, then submits. In one process:

  (a) the ReAct graph compiled and run in-process (the same nodes, tools and job store), and
  (b) the same job as a SearchJob workflow on a local Temporal dev server with an in-process
      worker (agent and tools activities, the conversation in the job store).

Reported: wall time per turn of each and their ratio (b)/(a), and the workflow history size in
bytes at each T — with the conversation kept by reference it should grow by a constant per turn,
not with the conversation's length.

Prompt caching (`--cache-turns 40`): the same kind of T-turn job, in-process, through
the real Anthropic client (langchain-anthropic → anthropic SDK) against the Messages API stand-in
(tests.anthropic_standin), which computes usage and cache reads/writes from what it is sent.
Run twice — with Quarry's cache breakpoints (nodes.llm.caching) and without them (before) —
reporting per turn the input tokens billed at the full price, read from the cache and written to
it, and the job's dollars at claude-sonnet-4-5's list prices (cache reads 0.1×, writes 1.25×).
Results also go to bench/out/bench_react.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench.finished import finished
from stores.atomic import write_atomic
from workflows.processes.exit import run_script

ROOT = Path(__file__).resolve().parent.parent
QUERIES = [
    "dense passage retrieval",
    "learned sparse retrieval",
    "query expansion feedback",
    "late interaction",
    "retrieval augmented generation",
    "citation analysis",
    "nearest neighbour search",
    "bert re-ranking",
]


def script(turns: int):
    from tests.fakes import tool_call, usage

    steps = []
    for t in range(turns):
        if t % 2 == 0:
            steps.append(
                tool_call("search", usage(1000 + 200 * t, 20), reason="bench", query=QUERIES[(t // 2) % len(QUERIES)])
            )
        else:
            steps.append(tool_call("read_document", usage(1000 + 200 * t, 20), reason="bench", docid="dpr-2020"))
    steps.append(tool_call("submit", usage(1000, 20), reason="bench", docids=["dpr-2020"]))
    return steps


def config(turns: int):
    from nodes.job.config import JobConfig, ModelSettings

    return JobConfig(
        models=ModelSettings(model="openai:bench", react_max_steps=turns + 5), max_tool_calls=10_000, max_seconds=3600
    )


async def in_process(home: Path, turns: int) -> float:
    from graphs.react_graph import make_react_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from tests.fakes import ModelRouter, ScriptedChatModel

    model = ScriptedChatModel(script=script(turns))
    rt = NodeRuntime(home, models=ModelRouter(openai__bench=model))
    configure_runtime(rt)
    token = use_control(Control())
    try:
        app = make_react_graph().compile()
        state = initial_state(
            f"bench-{uuid.uuid4().hex[:8]}", "sample", "dense retrieval", policy="react", config=config(turns)
        )
        began = time.perf_counter()
        final = await app.ainvoke(state, config={"recursion_limit": 10_000})
        elapsed = time.perf_counter() - began
    finally:
        reset_control(token)
        configure_runtime(None)
    result = rt.jobs.load_draft(final["job_id"])  # the result waits in the job store (state holds a summary)
    assert result is not None, final["job_id"]
    assert result["submitted"]["docids"] == ["dpr-2020"], result.get("submitted")
    return elapsed


async def durable(env, home: Path, turns: int) -> tuple[float, int]:
    from tests.fakes import ModelRouter, ScriptedChatModel
    from workflows.client import submit
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    model = ScriptedChatModel(script=script(turns))
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    async with build_worker(env.client, home=home, queue=queue, models=ModelRouter(openai__bench=model)):
        inp = JobInput(
            job_id=f"bench-{uuid.uuid4().hex[:8]}",
            collection="sample",
            intent="dense retrieval",
            policy="react",
            config=config(turns),
        )
        began = time.perf_counter()
        handle = await submit(env.client, inp, queue=queue)
        result = await finished(handle)
        elapsed = time.perf_counter() - began
        history = await handle.fetch_history()
    assert result["submitted"]["docids"] == ["dpr-2020"]
    return elapsed, len(history.to_json().encode())


CACHE_MODEL = "anthropic:claude-standin"


def anthropic_script(turns: int):
    from tests.anthropic_standin import tool_use

    steps = []
    for t in range(turns):
        if t % 2 == 0:
            steps.append(tool_use("search", {"reason": "bench", "query": QUERIES[(t // 2) % len(QUERIES)]}, 20))
        else:
            steps.append(tool_use("read_document", {"reason": "bench", "docid": "dpr-2020"}, 20))
    steps.append(tool_use("submit", {"reason": "bench", "docids": ["dpr-2020"]}, 20))
    return steps


async def cache_accounting(home: Path, turns: int, breakpoints: bool) -> dict:
    """One T-turn ReAct job in-process over the Anthropic stand-in; its usage, per turn and priced."""
    import os

    import nodes.llm.calls as calls
    from graphs.react_graph import make_react_graph
    from graphs.state import initial_state
    from nodes.job.config import JobConfig, ModelSettings
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from nodes.job.usage import DEFAULT_PRICES
    from tests.anthropic_standin import AnthropicStandin

    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    cfg = JobConfig(
        models=ModelSettings(model=CACHE_MODEL, react_max_steps=turns + 5),
        prices={CACHE_MODEL: price},
        max_tool_calls=10_000,
        max_seconds=3600,
    )
    marking = calls.with_cache_breakpoints
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "NO_PROXY")}
    with AnthropicStandin(anthropic_script(turns)) as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench", NO_PROXY="127.0.0.1")
        if not breakpoints:
            calls.with_cache_breakpoints = lambda messages, provider: list(messages)  # before: no marks
        rt = NodeRuntime(home)
        configure_runtime(rt)
        token = use_control(Control())
        try:
            state = initial_state(
                f"bench-{uuid.uuid4().hex[:8]}", "sample", "dense retrieval", policy="react", config=cfg
            )
            final = await make_react_graph().compile().ainvoke(state, config={"recursion_limit": 10_000})
        finally:
            reset_control(token)
            configure_runtime(None)
            calls.with_cache_breakpoints = marking
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert not server.rejected, server.rejected[:1]
    result = rt.jobs.load_draft(final["job_id"])
    assert result is not None and result["submitted"]["docids"] == ["dpr-2020"], final["job_id"]
    u, n = server.usages, len(server.usages)
    full = sum(x["input_tokens"] for x in u)
    read = sum(x["cache_read_input_tokens"] for x in u)
    written = sum(x["cache_creation_input_tokens"] for x in u)
    return {
        "breakpoints": breakpoints,
        "turns": n,
        "input_tokens": full + read + written,
        "full_price_input_per_turn": round(full / n),
        "cache_read_per_turn": round(read / n),
        "cache_write_per_turn": round(written / n),
        "dollars": round(final["usage"]["dollars"], 4),
        "dollars_recomputed": round(
            (
                full * price.input
                + read * price.cached_input
                + written * (price.cache_write or price.input)
                + sum(x["output_tokens"] for x in u) * price.output
            )
            / 1e6,
            4,
        ),
    }


async def main_async(args) -> dict:
    from temporalio.testing import WorkflowEnvironment

    from stores.collection import ingest
    from workflows.processes.dev_server import temporal_binary

    home = Path(tempfile.mkdtemp(prefix="quarry-bench-react-"))
    ingest(ROOT / "examples" / "corpus", "sample", home=home)
    out: dict = {}
    if args.cache_turns:
        out["cache"] = [await cache_accounting(home, args.cache_turns, b) for b in (False, True)]
        for row in out["cache"]:
            print(json.dumps(row), flush=True)
        before, after = out["cache"]
        print(
            f"full-price input per turn {before['full_price_input_per_turn']:,} -> {after['full_price_input_per_turn']:,}"
            f" tokens; ${before['dollars']} -> ${after['dollars']} per {args.cache_turns}-turn job"
        )
    if args.only_cache:
        return out
    await in_process(home, 2)  # warm-up: JVM, imports
    rows = []
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()), dev_server_extra_args=["--log-level", "error"]
    ) as env:
        await durable(env, home, 2)
        for turns in args.turns:
            local, remote, sizes = [], [], []
            for _ in range(args.repeats):  # interleaved, so load on the machine hits both alike
                local.append(await in_process(home, turns))
                seconds, size = await durable(env, home, turns)
                remote.append(seconds)
                sizes.append(size)
            row = {
                "turns": turns,
                "in_process_ms_per_turn": round(1000 * statistics.median(local) / (turns + 1), 1),
                "durable_ms_per_turn": round(1000 * statistics.median(remote) / (turns + 1), 1),
                "history_bytes": sizes[0],
            }
            row["ratio"] = round(row["durable_ms_per_turn"] / row["in_process_ms_per_turn"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        per_turn = (b["history_bytes"] - a["history_bytes"]) / (b["turns"] - a["turns"])
        print(f"history grows {per_turn:.0f} bytes per turn between {a['turns']} and {b['turns']} turns")
    return out | {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache-turns", type=int, default=40, help="turns of the prompt-caching job (0: skip it)")
    parser.add_argument("--only-cache", action="store_true", help="only the prompt-caching comparison")
    args = parser.parse_args()
    out = asyncio.run(main_async(args))
    path = ROOT / "bench" / "out" / "bench_react.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
