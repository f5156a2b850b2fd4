"""Two `evaluate` reports of one split compared question by question and intent by intent.

    python -m evals.debian_docs.compare before.json after.json

Each measure is paired over the questions (or list intents) both reports hold: the mean before and
after, the difference with its bootstrap 95% interval and a paired randomization p
(tuning.significance). This is how docs/eval/answers-and-exclusions.md reports before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evals.debian_docs.evaluate import load, product_of
from tuning.significance import compare

Row = Mapping[str, Any]


def measures(products: Mapping[str, str]) -> list[tuple[str, str, Callable[[str, Row], float]]]:
    """(label, report section, value of one row) for every paired measure."""

    def only_subject(qid: str, row: Row) -> float:
        cited = row.get("cited") or []
        return float(bool(cited) and all(product_of(d) == products.get(qid) for d in cited))

    return [
        ("Exact Answer exact match", "per_question", lambda _, r: float(r["exact"])),
        ("Exact Answer token F1", "per_question", lambda _, r: float(r["f1"])),
        ("questions with an Exact Answer", "per_question", lambda _, r: float(bool(r["exact_answer"]))),
        ("answers citing only the question's product", "per_question", only_subject),
        ("list nDCG@20", "per_intent", lambda _, r: float(r["ndcg@20"])),
        ("judged-excluded documents in the top 20", "per_intent", lambda _, r: float(len(r["excluded_in_top20"]))),
        ("top-10 spread of requirement scores", "per_intent", lambda _, r: float(r["spread"])),
        ("checklists rewording the intent", "per_intent", lambda _, r: float(r["rewording"])),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    before, after = (json.loads(p.read_text()) for p in (args.before, args.after))
    if before.get("split") != after.get("split"):
        print(f"the reports are of different splits ({before.get('split')}, {after.get('split')})", file=sys.stderr)
        return 2
    products = {q["_id"]: q.get("product", "") for q in load("questions", after["split"])}
    for label, section, value in measures(products):
        per = [{q: {"m": value(q, r)} for q, r in rep.get(section, {}).items()} for rep in (before, after)]
        c = compare("after", per[1], "before", per[0], "m")
        if c is None:
            print(f"{label}: fewer than two rows in common")
            continue
        print(f"{label}: {c.summary()}")
    return 0


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(lambda: sys.exit(main()))
