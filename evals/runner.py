"""Evaluate a retrieval system on a collection's judged queries.

Systems are plain functions `query text -> [(docid, score)]` (tuning.systems, shared with the
tuning, which never imports evals); the runner runs the judged
queries (threads: one Lucene searcher is safe to share), writes a TREC run and scores it with
pytrec_eval. Systems: `bm25` (stored or given k1/b), `bm25-tuned` (k1/b cross-validated on the
judged queries), `bm25-self` and `hybrid-self` (the self-tuned profile, chosen on pseudo-queries),
`dense` (MiniLM chunk vectors), `hybrid` (RRF of bm25 and dense) and `agent` (durable search jobs,
see agent_system.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.answer_match import MATCH_COLUMNS, confidence_pairs, reliability
from evals.trec import write_run
from nodes.job.config import JobConfig
from stores.collection import Collection
from stores.errors import QuarryError
from tuning.judged import judged_queries
from tuning.metrics import mean_metrics, per_query
from tuning.systems import AGENT_SYSTEMS, SELF_SYSTEMS, SYSTEMS, baseline_params, system_ranker

if TYPE_CHECKING:
    from evals.agent_system import AgentOptions


@dataclass
class EvalResult:
    collection: str
    system: str
    split: str
    queries: int
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    run_file: Path
    extras: dict[str, Any] = field(default_factory=dict)
    run: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)  # qid -> docid -> score

    def summary(self) -> dict[str, float | int | str]:
        return {
            **{k: round(v, 4) for k, v in self.metrics.items()},
            **self.extras,
            "queries": self.queries,
            "system": self.system,
            "split": self.split,
            "run_file": str(self.run_file),
        }


def parse_systems(values: list[str] | str | None) -> list[str]:
    """System names from repeated and/or comma-separated values, in order, without repeats."""
    raw = [values] if isinstance(values, str) else list(values or ["bm25"])
    names = list(dict.fromkeys(n.strip() for v in raw for n in v.split(",") if n.strip()))
    for name in names:
        if name not in SYSTEMS:
            raise QuarryError("bad_system", f"unknown system {name!r}", f"choose from: {', '.join(SYSTEMS)}")
    return names or ["bm25"]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _bm25_setting(col: Collection, system: str, k1: float | None, b: float | None) -> dict[str, float]:
    """The BM25 k1/b (and semantic weight) a system's run used (recorded with its metrics)."""
    if system in ("bm25-self", "hybrid-self"):
        from tuning.self_tuning import self_profile

        profile = self_profile(col, tune_if_missing=False)
        weight = {"semantic_weight": profile.semantic_weight or 1.0} if system == "hybrid-self" else {}
        return {"k1": profile.k1, "b": profile.b} | weight
    if system not in ("bm25", "hybrid"):
        return {}
    k1, b = baseline_params(k1, b)
    return {"k1": k1, "b": b}


def _evaluate_tuned(
    col: Collection,
    split: str,
    qids: list[str],
    texts: dict[str, str],
    qrels,
    depth: int,
    threads: int,
    run_file: Path | None,
    on_query,
) -> EvalResult:
    """BM25 with k1/b chosen without the reported queries (evals.cv): on the `train` split when the
    collection has one apart from the evaluated split, else by 5-fold cross-validation."""
    from evals.cv import FOLDS, cross_validate

    lucene = col.lucene
    train: list[str] = []
    train_texts = train_qrels = None
    if split != "train" and "train" in col.corpus.splits():
        train_qrels = col.corpus.qrels("train")
        train = sorted((q for q in train_qrels if q in texts and q not in set(qids)), key=lambda q: (len(q), q))
        train_texts = texts
    started = time.perf_counter()
    run, folds = cross_validate(
        qids,
        texts,
        qrels,
        lambda text, k1, b: {h.docid: h.score for h in lucene.search(text, depth, k1=k1, b=b)},
        train=train,
        train_texts=train_texts,
        train_qrels=train_qrels,
        k=FOLDS,
        threads=threads,
        progress=on_query,
    )
    judged = {q: qrels[q] for q in qids}
    path = run_file or col.paths.runs_dir / f"bm25-tuned-{split}.trec"
    write_run(path, run, "quarry-bm25-tuned")
    how = f"tuned on split train ({len(train)} queries)" if train else f"{len(folds)}-fold cross-validation"
    extras: dict = {
        "tuning": how,
        "fold_params": [{"k1": f.k1, "b": f.b, "test_queries": len(f.test)} for f in folds],
        "tuning_s": round(time.perf_counter() - started, 1),
    }
    return EvalResult(
        col.name, "bm25-tuned", split, len(qids), mean_metrics(judged, run), per_query(judged, run), path, extras, run
    )


def evaluate(
    col: Collection,
    system: str = "bm25",
    *,
    split: str | None = None,
    k1: float | None = None,
    b: float | None = None,
    limit_queries: int | None = None,
    only: Set[str] | None = None,
    depth: int = JobConfig.run_depth,
    run_file: Path | None = None,
    threads: int = 2,
    on_query: Callable[[int, int], None] | None = None,
    agent: AgentOptions | None = None,
) -> EvalResult:
    if system not in SYSTEMS:
        raise QuarryError("bad_system", f"unknown system {system!r}", f"choose one of: {', '.join(SYSTEMS)}")
    split, qids, texts, qrels = judged_queries(col, split, limit_queries, only)
    _ = col.lucene  # open (and validate) before fanning out to threads
    if system in AGENT_SYSTEMS:
        if system not in ("agent", "agent-self") and not (agent and agent.config.models.model):
            raise QuarryError(
                "no_model",
                f"--system {system} needs a model",
                "add --model PROVIDER:NAME, e.g. --model openai:gpt-4o-mini",
            )
        return _evaluate_agent(col, system, split, qids, texts, qrels, run_file, on_query, agent)
    if system in ("bm25-tuned", *SELF_SYSTEMS) and (k1 is not None or b is not None):
        raise QuarryError(
            "bad_option",
            f"{system} chooses its own k1/b; --k1/--b apply to bm25 and hybrid",
            "drop --k1/--b, or use --system bm25 --k1 K --b B",
        )
    if system == "bm25-tuned":
        return _evaluate_tuned(col, split, qids, texts, qrels, depth, threads, run_file, on_query)
    rank = system_ranker(col, system, k1, b, depth)
    rank(texts[qids[0]])  # warm-up (JVM JIT, caches, the embedding model): not part of any latency

    def timed(qid: str) -> tuple[list[tuple[str, float]], float]:
        started = time.perf_counter()
        ranked = rank(texts[qid])
        return ranked, time.perf_counter() - started

    run: dict[str, dict[str, float]] = {}
    elapsed = 0.0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for n, (qid, (ranked, seconds)) in enumerate(zip(qids, pool.map(timed, qids), strict=True), start=1):
            run[qid] = dict(ranked)
            elapsed += seconds
            if on_query:
                on_query(n, len(qids))
    judged = {q: qrels[q] for q in qids}
    path = run_file or col.paths.runs_dir / f"{system}-{split}.trec"
    write_run(path, run, f"quarry-{system}")
    extras: dict[str, float] = {"mean_latency_s": round(elapsed / len(qids), 4)} | _bm25_setting(col, system, k1, b)
    return EvalResult(
        col.name, system, split, len(qids), mean_metrics(judged, run), per_query(judged, run), path, extras, run
    )


def _evaluate_agent(
    col: Collection,
    system: str,
    split: str,
    qids: list[str],
    texts: dict[str, str],
    qrels,
    run_file: Path | None,
    on_query: Callable[[int, int], None] | None,
    options: AgentOptions | None,
) -> EvalResult:
    from evals.agent_system import TIERS, agent_runs, graded_rows, trajectory_tiers

    bm25 = {"k1": col.lucene.meta.k1, "b": col.lucene.meta.b}  # the index's stored parameters
    if system == "agent-self":
        from evals.agent_system import AgentOptions
        from tuning.self_tuning import self_profile

        profile = self_profile(col, note=_stderr)  # tuned now (not applied) when missing
        options = options or AgentOptions()
        options = replace(options, config=replace(options.config, profile="self"))
        bm25 = {"k1": profile.k1, "b": profile.b, "semantic_weight": profile.semantic_weight or 1.0}
    started = time.perf_counter()
    ranked, stats = agent_runs(
        col,
        {q: texts[q] for q in qids},
        system=system,
        options=options,
        answers=col.corpus.answers(),
        on_done=on_query,
        aliases=col.corpus.answer_aliases(),
    )
    elapsed = time.perf_counter() - started
    run = {q: dict(r) for q, r in ranked.items()}
    judged = {q: qrels[q] for q in qids}
    path = run_file or col.paths.runs_dir / f"{system}-{split}.trec"
    write_run(path, run, f"quarry-{system}")
    rows = per_query(judged, run)
    tiers = trajectory_tiers(judged, stats["trajectories"])
    graded = graded_rows(stats["grades"], stats["match_grades"])
    for qid, row in rows.items():
        row.update(tiers.get(qid, {}))
        row.update(graded.get(qid, {}))
    extras = {
        **{f"tier_{t}": round(sum(v[t] for v in tiers.values()) / max(len(tiers), 1), 4) for t in TIERS},
        "hallucination_rate": stats["hallucination_rate"],
        "tool_calls_per_query": stats["tool_calls_per_query"],
        "mean_latency_s": round(elapsed / max(len(qids), 1), 4),
        **bm25,
    }
    if system not in ("agent", "agent-self"):
        extras |= {
            k: stats[k]
            for k in ("tokens_per_query", "dollars_per_query", "fallbacks_per_query", "citation_hallucination_rate")
        }
    extras |= {k: stats[k] for k in ("answer_accuracy", "calibration_error", "graded", "grader_tokens") if k in stats}
    extras |= {k: stats[k] for k in MATCH_COLUMNS if k in stats}
    if stats["match_grades"]:
        extras["reliability"] = reliability(confidence_pairs(stats["match_grades"].values()))
    return EvalResult(col.name, system, split, len(qids), mean_metrics(judged, run), rows, path, extras, run)
