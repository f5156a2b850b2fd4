"""What the learned verifier costs a job: the final order with it vs the heuristic rule.

    python -m bench.bench_verifier --home H [--collection cacm] [--queries 20]

For each of the first N judged queries the heuristic round graph runs in-process (as
tuning.train_ranker does); then, on the same finished pool, the final order is computed both
ways, best of 3: the heuristic rule (`ranked_candidates`) and the verifier path
(`nodes.rounds.answer.verified_order`: `ranker_inputs` — the job's stored rankings, citation
links, lengths and, for a verifier that uses them, three alternative BM25 scorings of the
verified head — plus `final_order`). Reported: milliseconds
per job for each, and the verifier's extra time as a share of the whole in-process job.
bench/out/bench_verifier.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import cast

OUT = Path(__file__).resolve().parent / "out" / "bench_verifier.json"


def _best_of(fn, n: int = 3) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.pool import load_pool
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from nodes.job.state import JobState, ranked_candidates
    from nodes.rounds.answer import verified_order
    from stores.collection import Collection
    from tuning.judged import judged_queries

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="cacm")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    rt = NodeRuntime(args.home)
    configure_runtime(rt)
    col = Collection(args.collection, args.home)
    verifier = rt.verifier()
    if verifier is None:
        raise SystemExit("no verifier is shipped (stores/data/verifier.json): nothing to measure")
    _, qids, texts, _ = judged_queries(col, None)
    jobs, rules, verified = [], [], []
    graph = make_search_graph().compile()
    for qid in qids[: args.queries]:
        token = use_control(Control())
        try:
            started = time.perf_counter()
            state = cast(
                JobState,
                asyncio.run(
                    graph.ainvoke(
                        initial_state(f"bench-verifier-{qid}", col.name, texts[qid]), config={"recursion_limit": 10_000}
                    )
                ),
            )
            jobs.append(time.perf_counter() - started)
        finally:
            reset_control(token)
        pool = load_pool(rt.jobs, state)

        def with_verifier() -> None:
            verified_order(rt, state, pool, verifier)

        with_verifier()  # warm the alternative BM25 scorers once
        rules.append(_best_of(lambda: ranked_candidates(pool)))
        verified.append(_best_of(with_verifier))
    configure_runtime(None)
    job_s, rule_ms, verifier_ms = (
        statistics.median(jobs),
        statistics.median(rules) * 1e3,
        statistics.median(verified) * 1e3,
    )
    out = {
        "collection": col.name,
        "queries": len(jobs),
        "job_median_s": round(job_s, 3),
        "heuristic_rule_ms": round(rule_ms, 2),
        "verifier_ms": round(verifier_ms, 2),
        "verifier_extra_share_of_job": round((verifier_ms - rule_ms) / 1e3 / job_s, 4),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(json.dumps(out))


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
