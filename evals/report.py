"""`quarry eval --report DIR`: a Markdown report with a metrics table and PNG plots.

The report covers the systems evaluated in one call (same collection, split and queries):
recall versus retrieval depth per system, the BM25 k1×b heatmap if `quarry tune` has run, and,
when the agent is among the systems, its per-query nDCG@20 minus the best other system's.
"""
from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import pytrec_eval

from evals.metrics import BASE_METRICS, Qrels, Run
from evals.plots import per_query_differences, recall_curves
from evals.runner import AGENT_SYSTEMS, EvalResult
from stores.collection import Collection

DEPTHS = (10, 20, 50, 100, 200, 500, 1000)
REPORT_FILE = "report.md"
DIFF_METRIC = "ndcg@20"
SETTINGS = ("k1", "b")  # parameters, not measurements: printed as given


def recall_at_depths(qrels: Qrels, run: Run, depths: Sequence[int] = DEPTHS) -> dict[int, float]:
    """Mean recall@d over the queries with a relevant document (pytrec_eval; queries missing
    from the run count as 0)."""
    judged = {q: dict(d) for q, d in qrels.items() if any(v > 0 for v in d.values())}
    if not judged:
        return {d: 0.0 for d in depths}
    full_run = {q: dict(run.get(q, {})) or {"__none__": 0.0} for q in judged}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"recall." + ",".join(str(d) for d in depths)})
    rows = evaluator.evaluate(full_run).values()
    return {d: sum(r[f"recall_{d}"] for r in rows) / len(judged) for d in depths}


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "–" if value is None else str(value)


def metrics_table(results: Sequence[EvalResult]) -> str:
    """Markdown table: one row per system, the base metrics then every extra any system has."""
    extras = list(dict.fromkeys(k for r in results for k in r.extras))
    header = ["system", *BASE_METRICS, *extras]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for r in results:
        values = [r.system, *(r.metrics.get(m) for m in BASE_METRICS),
                  *(f"{r.extras[k]:g}" if k in SETTINGS and k in r.extras else r.extras.get(k) for k in extras)]
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines)


def agent_differences(results: Sequence[EvalResult], metric: str = DIFF_METRIC) -> tuple[str, dict[str, float]] | None:
    """(best other system, {qid: agent − best other}) by `metric`, or None without an agent or
    another system."""
    agent = next((r for r in results if r.system in AGENT_SYSTEMS), None)
    others = [r for r in results if r is not agent]
    if agent is None or not others:
        return None
    best = max(others, key=lambda r: (r.metrics.get(metric, 0.0), r.system))
    qids = set(agent.per_query) | set(best.per_query)
    return best.system, {q: agent.per_query.get(q, {}).get(metric, 0.0) - best.per_query.get(q, {}).get(metric, 0.0)
                         for q in sorted(qids)}


def write_report(out_dir: Path, col: Collection, results: Sequence[EvalResult],
                 qrels: Mapping[str, Mapping[str, int]] | None = None) -> Path:
    """Write `out_dir/report.md` and its PNGs; return the report's path."""
    if not results:
        raise ValueError("no results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    first = results[0]
    qrels = qrels if qrels is not None else col.corpus.qrels(first.split)
    judged = {q: qrels[q] for q in first.per_query if q in qrels}
    lines = [f"# Quarry evaluation: {col.name}", "",
             f"Split `{first.split}`, {first.queries} judged queries, "
             f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. Metrics by pytrec_eval; "
             "extras: latency in seconds per query, BM25 k1/b used, agent trajectory recall tiers.", "",
             "## Metrics", "", metrics_table(results), ""]

    curves = {r.system: recall_at_depths(judged, r.run) for r in results if r.run}
    if curves:
        png = recall_curves(curves, out_dir / "recall-depth.png",
                            title=f"{col.name} · recall vs depth · {first.split}")
        lines += ["## Recall versus retrieval depth", "", f"![recall versus depth]({png.name})", "",
                  "| system | " + " | ".join(f"R@{d}" for d in DEPTHS) + " |",
                  "|---|" + "---:|" * len(DEPTHS)]
        lines += ["| " + name + " | " + " | ".join(f"{c[d]:.4f}" for d in DEPTHS) + " |" for name, c in curves.items()]
        lines.append("")

    grids = sorted(col.paths.runs_dir.glob("bm25-grid-*.png")) if col.paths.runs_dir.is_dir() else []
    if grids:
        lines += ["## BM25 k1 × b grid (quarry tune)", ""]
        for grid in grids:
            shutil.copyfile(grid, out_dir / grid.name)
            lines += [f"![{grid.stem}]({grid.name})", ""]

    diff = agent_differences(results)
    if diff:
        baseline, values = diff
        png = per_query_differences(values, out_dir / "agent-vs-baseline.png", ylabel=f"Δ {DIFF_METRIC}",
                                    title=f"agent − {baseline}, {DIFF_METRIC} per query")
        wins = sum(v > 1e-9 for v in values.values())
        losses = sum(v < -1e-9 for v in values.values())
        lines += [f"## Agent versus the best baseline ({baseline})", "",
                  f"![agent minus {baseline}]({png.name})", "",
                  f"Per query {DIFF_METRIC}: agent better on {wins}, worse on {losses}, equal on "
                  f"{len(values) - wins - losses} of {len(values)} queries.", ""]

    path = out_dir / REPORT_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
