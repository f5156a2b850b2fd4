"""Evaluate a retrieval system on a collection's judged queries.

Systems are plain functions `query text -> [(docid, score)]`; the runner runs the judged
queries (threads: one Lucene searcher is safe to share), writes a TREC run and scores it with
pytrec_eval.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from evals.metrics import mean_metrics, per_query
from evals.trec import write_run
from stores.collection import Collection
from stores.errors import QuarryError

RankFn = Callable[[str], list[tuple[str, float]]]
SYSTEMS = ("bm25", "agent")


@dataclass
class EvalResult:
    collection: str
    system: str
    split: str
    queries: int
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    run_file: Path
    extras: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, float | int | str]:
        return {**{k: round(v, 4) for k, v in self.metrics.items()}, **self.extras,
                "queries": self.queries, "system": self.system, "split": self.split,
                "run_file": str(self.run_file)}


def pick_split(col: Collection, split: str | None) -> str:
    splits = col.corpus.splits()
    if not splits:
        raise QuarryError("no_qrels", f"collection {col.name!r} has no relevance judgements",
                          "ingest a BEIR folder with qrels/<split>.tsv to evaluate")
    if split is None:
        return "test" if "test" in splits else splits[0]
    if split not in splits:
        raise QuarryError("bad_split", f"no split {split!r} in {col.name!r}", f"choose one of: {', '.join(splits)}")
    return split


def system_ranker(col: Collection, system: str, k1: float | None, b: float | None, depth: int) -> RankFn:
    if system == "bm25":
        return lambda text: [(h.docid, h.score) for h in col.lucene.search(text, depth, k1=k1, b=b)]
    raise QuarryError("bad_system", f"unknown system {system!r}", f"choose one of: {', '.join(SYSTEMS)}")


def evaluate(col: Collection, system: str = "bm25", *, split: str | None = None, k1: float | None = None,
             b: float | None = None, limit_queries: int | None = None, depth: int = 1000,
             run_file: Path | None = None, threads: int = 2,
             on_query: Callable[[int, int], None] | None = None) -> EvalResult:
    split = pick_split(col, split)
    qrels = col.corpus.qrels(split)
    texts = col.corpus.queries()
    qids = sorted((q for q in qrels if q in texts), key=lambda q: (len(q), q))
    if limit_queries:
        qids = qids[:limit_queries]
    if not qids:
        raise QuarryError("no_queries", f"split {split!r} has no judged queries with text", "check queries.jsonl")
    col.lucene  # open (and validate) before fanning out to threads
    if system == "agent":
        return _evaluate_agent(col, split, qids, texts, qrels, run_file, on_query)
    rank = system_ranker(col, system, k1, b, depth)

    def timed(qid: str) -> tuple[list[tuple[str, float]], float]:
        started = time.perf_counter()
        ranked = rank(texts[qid])
        return ranked, time.perf_counter() - started

    run: dict[str, dict[str, float]] = {}
    elapsed = 0.0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for n, (qid, (ranked, seconds)) in enumerate(zip(qids, pool.map(timed, qids)), start=1):
            run[qid] = dict(ranked)
            elapsed += seconds
            if on_query:
                on_query(n, len(qids))
    judged = {q: qrels[q] for q in qids}
    path = run_file or col.paths.runs_dir / f"{system}-{split}.trec"
    write_run(path, run, f"quarry-{system}")
    return EvalResult(col.name, system, split, len(qids), mean_metrics(judged, run), per_query(judged, run), path,
                      {"mean_latency_s": round(elapsed / len(qids), 4)})


def _evaluate_agent(col: Collection, split: str, qids: list[str], texts: dict[str, str], qrels,
                    run_file: Path | None, on_query: Callable[[int, int], None] | None) -> EvalResult:
    from evals.agent_system import agent_runs

    started = time.perf_counter()
    ranked, stats = agent_runs(col, {q: texts[q] for q in qids}, on_done=on_query)
    elapsed = time.perf_counter() - started
    run = {q: dict(r) for q, r in ranked.items()}
    judged = {q: qrels[q] for q in qids}
    path = run_file or col.paths.runs_dir / f"agent-{split}.trec"
    write_run(path, run, "quarry-agent")
    extras = {"hallucination_rate": stats["hallucination_rate"], "tool_calls_per_query": stats["tool_calls_per_query"],
              "mean_latency_s": round(elapsed / max(len(qids), 1), 4)}
    return EvalResult(col.name, "agent", split, len(qids), mean_metrics(judged, run), per_query(judged, run), path, extras)
