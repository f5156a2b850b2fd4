"""The `agent` system for evaluation: real SearchJob workflows on a local dev server + worker.

Evaluation goes through the same workflow code path as users; jobs run several at a time. The
agent's run is the job's own deep run (its ranked pool, then the rest of its full-depth rankings
fused the same way), topped up from the user-words BM25 ranking only when shorter than the depth,
so depth metrics (Recall@1000) compare like with like.

Trajectory recall tiers (Pi-Serini): of a query's relevant documents, the share the job
surfaced (in any cached ranking), previewed, opened and cited — where along the way relevant
documents were lost.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from nodes.config import JobConfig
from stores.collection import Collection
from stores.jobs import JobStore

CONCURRENCY = 4
TIERS = ("surfaced", "previewed", "opened", "cited")


def trajectory_tiers(qrels: Mapping[str, Mapping[str, int]],
                     trajectories: Mapping[str, Mapping[str, list[str]]]) -> dict[str, dict[str, float]]:
    """Per query with relevant documents and a trajectory: recall of the relevant documents in
    each tier (`{qid: {"surfaced": r, "previewed": r, "opened": r, "cited": r}}`)."""
    out: dict[str, dict[str, float]] = {}
    for qid, traj in trajectories.items():
        relevant = {d for d, grade in qrels.get(qid, {}).items() if grade > 0}
        if relevant:
            out[qid] = {t: len(relevant & set(traj.get(t, ()))) / len(relevant) for t in TIERS}
    return out


async def _run_jobs(col: Collection, texts: dict[str, str], home: Path, budget_s: float, rounds: int,
                    on_done: Callable[[int, int], None] | None) -> dict[str, dict]:
    from temporalio.testing import WorkflowEnvironment

    from workflows.client import submit
    from workflows.dev_server import temporal_binary
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(temporal_binary()),
                                                dev_server_extra_args=["--log-level", "error"])
    results: dict[str, dict] = {}
    async with env:
        queue = f"quarry-eval-{uuid.uuid4().hex[:8]}"
        async with build_worker(env.client, home=home, queue=queue):
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(qid: str) -> None:
                async with gate:
                    inp = JobInput(job_id=f"eval-{col.name}-{qid}-{uuid.uuid4().hex[:6]}", collection=col.name,
                                   intent=texts[qid], budget_seconds=budget_s, config=JobConfig(max_rounds=rounds))
                    handle = await submit(env.client, inp, queue=queue)
                    results[qid] = {"job_id": inp.job_id, **(await handle.result())}
                    if on_done:
                        on_done(len(results), len(texts))
            await asyncio.gather(*(one(q) for q in texts))
    return results


def agent_runs(col: Collection, texts: dict[str, str], *, budget_s: float = 300.0, rounds: int = 3,
               depth: int = 1000, on_done: Callable[[int, int], None] | None = None) -> tuple[dict[str, list[tuple[str, float]]], dict]:
    """Run one job per query; return runs (docid, pseudo-score) and job statistics (including
    each query's trajectory: surfaced, previewed, opened and cited docids)."""
    home = col.paths.root.parent.parent
    results = asyncio.run(_run_jobs(col, texts, home, budget_s, rounds, on_done))
    jobs = JobStore(home / "jobs.sqlite")
    runs: dict[str, list[tuple[str, float]]] = {}
    trajectories: dict[str, dict[str, list[str]]] = {}
    unknown = outputs = tool_calls = 0
    for qid, res in results.items():
        traj = res.get("trajectory", {})
        trajectories[qid] = {"surfaced": sorted(jobs.surfaced(res["job_id"])),
                             **{t: list(traj.get(t, [])) for t in TIERS[1:]}}
        order = list(res.get("run", []))
        seen = set(order)
        order += [h.docid for h in col.lucene.search(texts[qid], depth) if h.docid not in seen]
        order = order[:depth]
        outputs += len(order)
        unknown += sum(1 for d in order if not col.corpus.has(d))
        tool_calls += res.get("stats", {}).get("tool_calls", 0)
        runs[qid] = [(d, float(depth - i)) for i, d in enumerate(order)]
    stats = {"hallucination_rate": unknown / outputs if outputs else 0.0,
             "tool_calls_per_query": round(tool_calls / max(len(results), 1), 2),
             "statuses": sorted({r.get("status", "?") for r in results.values()}),
             "trajectories": trajectories}
    return runs, stats
