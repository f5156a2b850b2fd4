"""Does verifying deeper pay? The heuristic agent with `verify_top` 100, 200, 300.

    python -m evals.depth --home H cacm cranfield

Each judged query runs through the round graph in-process (as tuning.train_ranker collects
features) with `JobConfig(verify_top=N)`; printed per collection and depth: nDCG@20 (nDCG@10 for
scifact), Recall@100, Recall@1000, seconds per query, and the paired test against depth 100.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import numpy as np

from tuning.judged import judged_queries
from tuning.metrics import per_query
from tuning.significance import compare

DEPTHS = (100, 200, 300)


def run_depth(rt, name: str, qids: list[str], texts: dict[str, str], depth: int) -> dict[str, dict[str, float]]:
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.config import JobConfig
    from nodes.job.control import Control, reset_control, use_control

    runs = {}
    for qid in qids:
        job = f"depth-{name}-{depth}-{qid}"
        token = use_control(Control())
        try:
            asyncio.run(
                make_search_graph()
                .compile()
                .ainvoke(
                    initial_state(job, name, texts[qid], config=JobConfig(verify_top=depth)),
                    config={"recursion_limit": 10_000},
                )
            )
        finally:
            reset_control(token)
        run = rt.jobs.load_draft(job)["run"]
        runs[qid] = {d: float(len(run) - i) for i, d in enumerate(run)}
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("collections", nargs="+")
    args = parser.parse_args()
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from stores.collection import Collection

    rt = NodeRuntime(args.home)
    configure_runtime(rt)
    for name in args.collections:
        col = Collection(name, args.home)
        _, qids, texts, qrels = judged_queries(col, None)
        metric = "ndcg@10" if name.startswith("scifact") else "ndcg@20"
        base = None
        for depth in DEPTHS:
            started = time.perf_counter()
            pq = per_query(qrels, run_depth(rt, name, qids, texts, depth))
            seconds = (time.perf_counter() - started) / len(qids)
            means = {
                k: round(float(np.mean([v[k] for v in pq.values()])), 4) for k in (metric, "recall@100", "recall@1000")
            }
            versus = ""
            if base is None:
                base = pq
            else:
                c = compare(f"verify_top={depth}", pq, "verify_top=100", base, metric)
                assert c is not None, "fewer than two queries to compare"
                versus = f" vs 100: {c.relative:+.2%} (p={c.p_value:.3f})"
            print(f"{name} verify_top={depth}: {means} {seconds:.2f} s/query{versus}", flush=True)
    configure_runtime(None)


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
