"""`quarry eval --report DIR`: a Markdown report with a metrics table and PNG plots.

The report covers the systems evaluated in one call (same collection, split and queries):
recall versus retrieval depth per system, the BM25 k1×b heatmap if `quarry tune` has run, and,
when the agent is among the systems, its per-query nDCG@20 minus the best other system's.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytrec_eval

from evals.answer_match import MATCH_COLUMNS
from evals.runner import EvalResult
from stores.collection import Collection
from tuning.metrics import BASE_METRICS, Qrels, Run
from tuning.plots import per_query_differences, recall_curves, reliability_diagram
from tuning.significance import ALPHA, RESAMPLES, SEED, compare
from tuning.systems import AGENT_SYSTEMS, SELF_SYSTEMS

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


COLUMNS = {
    "ndcg@10": "nDCG at rank 10 (graded relevance, log-discounted, normalised by the ideal ranking)",
    "ndcg@20": "nDCG at rank 20",
    "recall@20": "share of a query's relevant documents in the top 20",
    "precision@20": "share of the top 20 that is relevant",
    "f1@20": "harmonic mean of P@20 and R@20 per query",
    "recall@100": "recall in the top 100",
    "recall@1000": "recall in the top 1000 (the deep run)",
    "map": "mean average precision over the whole run",
    "mean_latency_s": "wall seconds per query, after one warm-up query (agent systems: per job, jobs run 4 at a time)",
    "k1": "BM25 k1 used (bm25 and hybrid: Anserini's default 0.9 unless given)",
    "semantic_weight": "hybrid-self: the semantic channel's RRF weight against the lexical one's 1",
    "b": "BM25 b used (default 0.4)",
    "tuning": "how bm25-tuned chose k1/b without the reported queries",
    "tuning_s": "seconds spent tuning",
    "tier_surfaced": "agent: share of relevant documents that any search or channel returned to the job",
    "tier_previewed": "agent: share shown as previews (ranks paged through or citation lists)",
    "tier_opened": "agent: share read in full (verification or read_document)",
    "tier_cited": "agent: share in the job's ranked output",
    "hallucination_rate": "share of output docids that the collection does not hold (must be 0)",
    "tool_calls_per_query": "agent: tool calls per job",
    "tokens_per_query": "model tokens (input + output) per job",
    "dollars_per_query": "model cost per job",
    "fallbacks_per_query": "model steps that fell back to the heuristic, per job",
    "citation_hallucination_rate": "share of answer citations removed by the citation check",
    "answer_accuracy": "share of graded answers the judge found correct",
    "graded": "answers graded",
    "calibration_error": "expected calibration error of stated confidence (10 bins)",
    "grader_tokens": "tokens the grader used",
    **MATCH_COLUMNS,
}
SCALAR = (int, float, str)


def metrics_table(results: Sequence[EvalResult]) -> str:
    """Markdown table: one row per system, the base metrics then every scalar extra any system has."""
    extras = list(dict.fromkeys(k for r in results for k, v in r.extras.items() if isinstance(v, SCALAR)))
    header = ["system", *BASE_METRICS, *extras]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for r in results:
        values = [
            r.system,
            *(r.metrics.get(m) for m in BASE_METRICS),
            *(f"{r.extras[k]:g}" if k in SETTINGS and k in r.extras else r.extras.get(k) for k in extras),
        ]
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
    return best.system, {
        q: agent.per_query.get(q, {}).get(metric, 0.0) - best.per_query.get(q, {}).get(metric, 0.0)
        for q in sorted(qids)
    }


def significance_section(results: Sequence[EvalResult], metric: str) -> list[str]:
    """Every system against the best non-agent baseline: mean difference, 95% CI, paired p."""
    baselines = [r for r in results if r.system not in AGENT_SYSTEMS]
    if not baselines or len(results) < 2:
        return []
    best = max(baselines, key=lambda r: (r.metrics.get(metric, 0.0), r.system))
    rows = [
        c
        for r in results
        if r is not best and (c := compare(r.system, r.per_query, best.system, best.per_query, metric)) is not None
    ]
    if not rows:
        return []
    out = [
        f"## Against the best baseline ({best.system}, {metric})",
        "",
        f"Paired per query: mean difference, its 95% bootstrap interval, and the p-value of a paired "
        f"randomization test ({RESAMPLES:,} resamples, seed {SEED}); * marks p < {ALPHA}.",
        "",
        f"| system | {metric} | Δ vs {best.system} | relative | 95% CI of Δ | p |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for c in rows:
        out.append(
            f"| {c.system} | {c.system_mean:.4f} | {c.diff:+.4f}{' *' if c.significant else ''} | "
            f"{100 * c.relative:+.1f}% | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] | {c.p_value:.4f} |"
        )
    return out


def self_tuned_section(results: Sequence[EvalResult], metric: str) -> list[str]:
    """Each self-tuned system against its default counterpart, and `agent-self` against `hybrid`
    (paired, as above): what tuning on the collection's own documents bought."""
    by_name = {r.system: r for r in results}
    pairs = [(s, s.removesuffix("-self")) for s in SELF_SYSTEMS if s in by_name and s.removesuffix("-self") in by_name]
    if "agent-self" in by_name and "hybrid" in by_name:
        pairs.append(("agent-self", "hybrid"))
    rows = [c for a, b in pairs if (c := compare(a, by_name[a].per_query, b, by_name[b].per_query, metric)) is not None]
    if not rows:
        return []
    out = [
        f"## Self-tuned against default ({metric})",
        "",
        "The `*-self` systems use settings chosen on pseudo-queries made from the collection's documents "
        "(`quarry tune NAME --self`; its qrels are never read). Paired as above; * marks p < "
        f"{ALPHA}.",
        "",
        f"| system | against | {metric} | Δ | relative | 95% CI of Δ | p |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for c in rows:
        out.append(
            f"| {c.system} | {c.baseline} | {c.system_mean:.4f} | {c.diff:+.4f}{' *' if c.significant else ''} | "
            f"{100 * c.relative:+.1f}% | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] | {c.p_value:.4f} |"
        )
    return [*out, ""]


def tuning_section(results: Sequence[EvalResult]) -> list[str]:
    tuned = next((r for r in results if r.system == "bm25-tuned"), None)
    if tuned is None:
        return []
    folds = tuned.extras.get("fold_params", [])
    return [
        "## How bm25-tuned was tuned",
        "",
        f"{tuned.extras.get('tuning')}; settings chosen per fold "
        "(each fold's queries ranked with the setting that scored best on the others):",
        "",
        "| fold | k1 | b | test queries |",
        "|---:|---:|---:|---:|",
        *[f"| {i} | {f['k1']:g} | {f['b']:g} | {f['test_queries']} |" for i, f in enumerate(folds, start=1)],
        "",
    ]


def reproduce_section(col: Collection, command: str) -> list[str]:
    """The exact command, versions, corpus hash and machine, to reproduce the report."""
    import importlib.metadata as md
    import os
    import platform

    def version(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "—"

    mem = ""
    try:
        with open("/proc/meminfo") as meminfo:
            kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    packages = ", ".join(
        f"{p} {version(p)}"
        for p in (
            "quarry",
            "pyserini",
            "temporalio",
            "temporalio-langgraph",
            "langgraph",
            "chromadb",
            "sentence-transformers",
            "torch",
            "pytrec-eval-terrier",
            "scipy",
        )
    )
    return [
        "## Reproduce",
        "",
        "```",
        command,
        "```",
        "",
        f"- versions: Python {platform.python_version()}, {packages}",
        f"- corpus: `{col.name}`, fingerprint `{col.corpus.fingerprint}`, {col.corpus.count()} documents; "
        f"index k1 {col.lucene.meta.k1:g}, b {col.lucene.meta.b:g}",
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs{mem}",
        "",
    ]


def write_report(
    out_dir: Path,
    col: Collection,
    results: Sequence[EvalResult],
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    *,
    metric: str = DIFF_METRIC,
    command: str = "",
) -> Path:
    """Write `out_dir/report.md` and its PNGs; return the report's path."""
    if not results:
        raise ValueError("no results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    first = results[0]
    qrels = qrels if qrels is not None else col.corpus.qrels(first.split)
    judged = {q: qrels[q] for q in first.per_query if q in qrels}
    lines = [
        f"# Quarry evaluation: {col.name}",
        "",
        f"Split `{first.split}`, {first.queries} judged queries, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Metrics by pytrec_eval. "
        "`bm25` and `hybrid` use Anserini's default BM25 (k1 0.9, b 0.4); `bm25-tuned` chooses k1/b without "
        "the queries it is scored on (see below); `bm25-self` and `hybrid-self` use the collection's self-tuned "
        "profile, chosen on pseudo-queries made from its documents (no qrels read); the agent systems use the parameters stored with the index "
        f"(k1 {col.lucene.meta.k1:g}, b {col.lucene.meta.b:g}).",
        "",
        "## Metrics",
        "",
        metrics_table(results),
        "",
        *significance_section(results, metric),
        "",
        *self_tuned_section(results, metric),
        *tuning_section(results),
        "## Columns",
        "",
        *[f"- `{k}`: {v}" for k, v in COLUMNS.items() if any(k in r.metrics or k in r.extras for r in results)],
        "",
    ]

    lines += _recall_section(col, results, judged, out_dir)
    lines += _calibration_sections(col, results, out_dir)
    lines += _grids_section(col, out_dir)
    lines += _agent_section(results, metric, out_dir)
    lines += reproduce_section(
        col, command or f"quarry eval {col.name} --system {','.join(r.system for r in results)} --report {out_dir}"
    )

    path = out_dir / REPORT_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _recall_section(
    col: Collection, results: Sequence[EvalResult], judged: Mapping[str, Mapping[str, int]], out_dir: Path
) -> list[str]:
    """Recall at each depth per system, plotted and tabled (none without runs)."""
    lines: list[str] = []
    first = results[0]
    curves = {r.system: recall_at_depths(judged, r.run) for r in results if r.run}
    if curves:
        png = recall_curves(curves, out_dir / "recall-depth.png", title=f"{col.name} · recall vs depth · {first.split}")
        lines += [
            "## Recall versus retrieval depth",
            "",
            f"![recall versus depth]({png.name})",
            "",
            "| system | " + " | ".join(f"R@{d}" for d in DEPTHS) + " |",
            "|---|" + "---:|" * len(DEPTHS),
        ]
        lines += ["| " + name + " | " + " | ".join(f"{c[d]:.4f}" for d in DEPTHS) + " |" for name, c in curves.items()]
        lines.append("")
    return lines


def _calibration_sections(col: Collection, results: Sequence[EvalResult], out_dir: Path) -> list[str]:
    """A reliability diagram per system that stated confidences."""
    lines: list[str] = []
    for r in results:
        if "reliability" in r.extras:
            png = reliability_diagram(
                r.extras["reliability"], out_dir / f"reliability-{r.system}.png", title=f"{col.name} · {r.system}"
            )
            lines += [
                f"## Calibration of {r.system}'s confidence",
                "",
                f"![reliability of {r.system}]({png.name})",
                "",
                f"Exact match {r.extras.get('exact_match', 0):.1%} of {r.extras.get('answers_graded', 0)} answers; "
                f"{r.extras.get('with_confidence', 0)} stated a confidence, expected calibration error "
                f"{r.extras.get('confidence_ece', 0):.3f}.",
                "",
            ]
    return lines


def _grids_section(col: Collection, out_dir: Path) -> list[str]:
    """The k1 × b heatmaps `quarry tune` left in the runs folder, copied beside the report."""
    lines: list[str] = []
    grids = sorted(col.paths.runs_dir.glob("bm25-grid-*.png")) if col.paths.runs_dir.is_dir() else []
    if grids:
        lines += ["## BM25 k1 × b grid (quarry tune, on all the judged queries: for orientation only)", ""]
        for grid in grids:
            shutil.copyfile(grid, out_dir / grid.name)
            lines += [f"![{grid.stem}]({grid.name})", ""]
    return lines


def _agent_section(results: Sequence[EvalResult], metric: str, out_dir: Path) -> list[str]:
    """The agent's per-query difference from the best baseline (none without both)."""
    lines: list[str] = []
    diff = agent_differences(results, metric)
    if diff:
        baseline, values = diff
        png = per_query_differences(
            values,
            out_dir / "agent-vs-baseline.png",
            ylabel=f"Δ {metric}",
            title=f"agent − {baseline}, {metric} per query",
        )
        wins = sum(v > 1e-9 for v in values.values())
        losses = sum(v < -1e-9 for v in values.values())
        lines += [
            f"## Agent versus the best baseline ({baseline})",
            "",
            f"![agent minus {baseline}]({png.name})",
            "",
            f"Per query {metric}: agent better on {wins}, worse on {losses}, equal on "
            f"{len(values) - wins - losses} of {len(values)} queries.",
            "",
        ]
    return lines
