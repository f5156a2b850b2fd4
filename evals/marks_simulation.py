"""How much a collection gains from a researcher's marks: a simulation from qrels.

Self-tuning lets only judged queries choose (tuning.self_tuning): a person's `quarry job mark`s and
the `llm` librarians' judgements. Whether that pays, and after how many marked queries, can be
measured on a judged collection without letting the tuning see the queries it is scored on:

1. the split's judged queries are shuffled (seeded) and halved: the *train* half plays the
   researcher's past jobs, the *test* half is scored;
2. the default agent runs every query; for each train query the researcher "marks" what a job's
   list shows them — its first `MARK_DEPTH` documents — relevant where the qrels say so, not
   relevant otherwise (documents they never saw get no mark, as in life);
3. for each number of marked queries N (the first N train queries), `self_tune` chooses k1/b, the
   semantic weight and, from `MIN_VERIFIER_QUERIES` on, the profile's own verifier on those marks
   alone (the pseudo-query kinds choose nothing and are not made), and `bm25-self`, `hybrid-self`
   and `agent-self` run on the test half, compared with bm25, hybrid and the default agent there by
   the paired randomization test of tuning.significance.

Everything runs on a copy of the collection in a temporary home (in the scratch area of
the collection's own home, `stores.scratch`), so the user's collection, its
profile and its judgements are never touched. Run: `python -m evals.marks_simulation NAME
[--home H] [--marks 10,30,all] [--metric ndcg@20]`; the JSON goes to `--out`, the Markdown table
to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.runner import EvalResult, evaluate
from stores.collection import Collection
from stores.errors import QuarryError
from stores.judgements import Judgement
from stores.profiles import PROFILE_FILE, PSEUDO_QUERIES_FILE, SelfProfile
from stores.scratch import scratch_dir
from tuning.judged import judged_queries
from tuning.self_tuning import MIN_VERIFIER_QUERIES, self_tune
from tuning.significance import compare

MARK_DEPTH = 20  # what a researcher reads of a job's list before marking
DEFAULT_MARKS = ("10", "30", "all")
DEFAULT_SEED = 13
BASELINES = ("bm25", "hybrid", "agent")
TUNED = ("bm25-self", "hybrid-self", "agent-self")
VERSUS = {"bm25-self": "bm25", "hybrid-self": "hybrid", "agent-self": "agent"}


def halves(qids: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """(train, test): a seeded shuffle of the judged queries, cut in two (test gets the odd one)."""
    order = sorted(qids)
    random.Random(seed).shuffle(order)
    cut = len(order) // 2
    return order[:cut], order[cut:]


def simulated_marks(
    train: Sequence[str],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    shown: Mapping[str, Mapping[str, float]],
    depth: int = MARK_DEPTH,
) -> list[Judgement]:
    """A researcher's marks on the first `depth` documents each train query's job showed them."""
    marks = []
    for qid in train:
        ranked = sorted(shown.get(qid, {}).items(), key=lambda kv: -kv[1])[:depth]
        for docid, _ in ranked:
            relevant = qrels.get(qid, {}).get(docid, 0) > 0
            marks.append(Judgement(f"simulated-{qid}", texts[qid], docid, "user", 1.0 if relevant else 0.0))
    return marks


def copy_collection(source: Collection, home: Path) -> Collection:
    """The collection copied into `home` (every version, its indexes), opened there; its stored
    judgements and profile are left behind, so only the simulated marks tune it."""
    target = home / "collections" / source.name
    shutil.copytree(
        source.paths.root,
        target,
        ignore=shutil.ignore_patterns("judgements.sqlite*", "*.trec", PROFILE_FILE, PSEUDO_QUERIES_FILE),
    )
    return Collection(source.name, home=home)


def _counts(values: Sequence[str], train: int) -> list[int]:
    out = []
    for v in values:
        n = train if v == "all" else int(v)
        if n < 1:
            raise QuarryError("bad_option", f"--marks {v!r}: at least one marked query", "e.g. --marks 10,30,all")
        out.append(min(n, train))
    return sorted(set(out))


def _comparisons(results: Mapping[str, EvalResult], test: Sequence[str], metric: str) -> dict[str, Any]:
    keep = set(test)
    rows = {s: {q: r for q, r in res.per_query.items() if q in keep} for s, res in results.items()}
    out: dict[str, Any] = {}
    for system in TUNED:
        if system not in rows:
            continue
        for baseline in {VERSUS[system], "agent", "hybrid"}:
            if baseline not in rows:
                continue
            c = compare(system, rows[system], baseline, rows[baseline], metric)
            if c is not None:
                out[f"{system}_vs_{baseline}"] = {
                    "system": round(c.system_mean, 4),
                    "baseline": round(c.baseline_mean, 4),
                    "relative": round(c.relative, 4),
                    "p": round(c.p_value, 4),
                    "ci": [round(c.ci_low, 4), round(c.ci_high, 4)],
                }
    return out


def simulate(
    source: Collection,
    *,
    split: str | None = None,
    marks: Sequence[str] = DEFAULT_MARKS,
    seed: int = DEFAULT_SEED,
    metric: str = "ndcg@20",
    limit_queries: int | None = None,
    note=print,
) -> dict[str, Any]:
    """The simulation (module doc) on a copy of `source`; returns every figure as a dict."""
    split, qids, texts, qrels = judged_queries(source, split, limit_queries)
    train, test = halves(qids, seed)
    counts = _counts(marks, len(train))
    started = time.perf_counter()
    with scratch_dir(source.paths.root.parent.parent, "marks-") as tmp:  # a copy of the user's text: in the home
        col = copy_collection(source, tmp)
        base: dict[str, EvalResult] = {}
        for system in BASELINES:  # the agent on every query: train for the marks, test for the score
            note(f"[{col.name}] {system} on {len(qids) if system == 'agent' else len(test)} queries …")
            base[system] = evaluate(col, system, split=split, only=set(qids if system == "agent" else test))
        all_marks = simulated_marks(train, texts, qrels, base["agent"].run)
        rows = []
        for n in counts:
            marked = set(train[:n])
            judgements = [j for j in all_marks if j.job_id.removeprefix("simulated-") in marked]
            note(f"[{col.name}] {n} marked queries ({len(judgements)} marks): self-tuning …")
            tuned = self_tune(col, kinds=(), judgements=judgements, verifier=True)
            results = dict(base)
            for system in TUNED:
                note(f"[{col.name}] {n} marked queries: {system} on {len(test)} test queries …")
                results[system] = evaluate(col, system, split=split, only=set(test))
            rows.append(_row(n, judgements, tuned.profile, results, test, metric))
    return {
        "collection": source.name,
        "split": split,
        "metric": metric,
        "seed": seed,
        "queries": {"train": len(train), "test": len(test)},
        "mark_depth": MARK_DEPTH,
        "min_verifier_queries": MIN_VERIFIER_QUERIES,
        "baselines": {s: round(_mean(r, test, metric), 4) for s, r in base.items()},
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _row(
    n: int,
    judgements: Sequence[Judgement],
    p: SelfProfile,
    results: dict[str, EvalResult],
    test: Sequence[str],
    metric: str,
) -> dict[str, Any]:
    """One number of marked queries: the marks, the profile tuned on them, every system's figures."""
    return {
        "marked_queries": n,
        "marks": len(judgements),
        "relevant_marks": sum(1 for j in judgements if j.relevance > 0),
        "profile": {
            "k1": p.k1,
            "b": p.b,
            "semantic_weight": p.semantic_weight,
            "own_verifier": bool(p.verifier),
            "verifier_fit": p.verifier_pseudo or None,
            "tune_s": p.seconds,
        },
        "means": {s: round(_mean(r, test, metric), 4) for s, r in results.items()},
        "comparisons": _comparisons(results, test, metric),
    }


def _mean(result: EvalResult, qids: Sequence[str], metric: str) -> float:
    vals = [result.per_query.get(q, {}).get(metric, 0.0) for q in qids]
    return sum(vals) / max(len(vals), 1)


def markdown(sim: Mapping[str, Any]) -> str:
    """One table: per number of marked queries, the profile chosen and each *-self system against
    its default and against hybrid on the test half."""
    m = sim["metric"]
    b = sim["baselines"]
    lines = [
        f"### {sim['collection']} ({m}; {sim['queries']['train']} train / {sim['queries']['test']} test "
        f"queries, seed {sim['seed']}; test-half bm25 {b['bm25']:.4f}, hybrid {b['hybrid']:.4f}, "
        f"agent {b['agent']:.4f})",
        "",
        "| marked queries (marks) | k1, b, semantic ×, own verifier | bm25-self vs bm25 | hybrid-self vs hybrid "
        "| agent-self vs agent | agent-self vs hybrid |",
        "|---|---|---:|---:|---:|---:|",
    ]

    def cell(row: Mapping[str, Any], key: str) -> str:
        c = row["comparisons"].get(key)
        if not c:
            return "–"
        text = f"{c['system']:.4f} ({c['relative']:+.1%}, p {c['p']:.3f})"
        return f"**{text}**" if c["p"] < 0.05 else text

    for row in sim["rows"]:
        p = row["profile"]
        lines.append(
            f"| {row['marked_queries']} ({row['marks']}, {row['relevant_marks']} relevant) | "
            f"{p['k1']}, {p['b']}, {p['semantic_weight'] or 1.0}, {'yes' if p['own_verifier'] else 'no'} | "
            + " | ".join(
                cell(row, k)
                for k in ("bm25-self_vs_bm25", "hybrid-self_vs_hybrid", "agent-self_vs_agent", "agent-self_vs_hybrid")
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.marks_simulation", description=__doc__.split("\n\n")[0])
    parser.add_argument("collection")
    parser.add_argument("--home", type=Path, default=None, help="QUARRY_HOME holding the collection")
    parser.add_argument("--split", default=None)
    parser.add_argument("--marks", default=",".join(DEFAULT_MARKS), help="numbers of marked queries, e.g. 10,30,all")
    parser.add_argument("--metric", default="ndcg@20")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--queries", type=int, default=None, help="only the first N judged queries")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    source = Collection(args.collection, home=args.home)  # a QuarryError ends it in one line (run_script)
    sim = simulate(
        source,
        split=args.split,
        marks=[m.strip() for m in args.marks.split(",") if m.strip()],
        seed=args.seed,
        metric=args.metric,
        limit_queries=args.queries,
        note=lambda s: print(s, file=sys.stderr, flush=True),
    )
    if args.out:
        from stores.atomic import write_atomic

        write_atomic(args.out, json.dumps(sim, indent=2))
    print(markdown(sim))


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
