"""Two run files of one collection compared query by query (paired, with significance).

    QUARRY_HOME=H python -m evals.compare_runs cacm before.run after.run [--split test] [--metric ndcg@20]

For "no lower than before" claims: the same queries, the collection's own judgements, the mean
difference with its bootstrap 95% interval and a paired randomization p (tuning.significance).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.trec import read_run
from tuning.metrics import per_query
from tuning.significance import compare


def main(argv: list[str] | None = None) -> int:
    from stores.collection import Collection

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection")
    parser.add_argument("before", type=Path, help="the baseline's TREC run file")
    parser.add_argument("after", type=Path, help="the system's TREC run file")
    parser.add_argument("--split", default="test", help="whose judgements (scifact-train: train)")
    parser.add_argument("--metric", default="ndcg@20")
    args = parser.parse_args(argv)
    qrels = Collection(args.collection).corpus.qrels(args.split)
    if not qrels:
        print(f"{args.collection} has no judgements for split {args.split!r}", file=sys.stderr)
        return 2
    c = compare(
        "after", per_query(qrels, read_run(args.after)), "before", per_query(qrels, read_run(args.before)), args.metric
    )
    if c is None:
        print("fewer than two queries in common: nothing to compare", file=sys.stderr)
        return 2
    print(f"{args.collection} {args.metric}: {c.summary(4)}")
    return 0


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(lambda: sys.exit(main()))
