"""Probes behind docs/eval/ranker.md's reading: does a tree model find what the linear verifier
misses, and does it transfer?

    python -m evals.ranker_probes --home H [--collections cacm cranfield scifact-train]

Uses the feature caches of `tuning.train_ranker` (run it first) and LightGBM (not a dependency:
`pip install lightgbm`). Prints, relative to hybrid RRF(BM25, MiniLM) on the same queries:
- in-domain: LambdaMART on the reciprocal-rank features, 5-fold cross-validation within one
  collection (each query scored by a model that never saw it);
- held out: the same model trained on the other collections, unconstrained and with every
  feature constrained to be monotone (a better rank never lowers relevance).
Nothing here is shipped; these are measurements, and all of them use the same three collections
the verifier was developed on.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from nodes.ranking.ranker import FEATURES, RANK_FEATURES
from stores.collection import Collection
from tuning.judged import judged_queries
from tuning.metrics import per_query
from tuning.ranker_scorers import METRIC, _matrix, rerank
from tuning.systems import system_ranker
from tuning.train_ranker import collect

PARAMS = dict(
    objective="lambdarank",
    n_estimators=150,
    learning_rate=0.05,
    num_leaves=7,
    min_child_samples=50,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    random_state=0,
    verbose=-1,
)
FOLDS = 5
COLUMNS = [FEATURES.index(f) for f in RANK_FEATURES]


def _fit(datasets: list[dict[str, Any]], monotone: bool = False):
    import lightgbm as lgb

    x, y, groups = _matrix(datasets, RANK_FEATURES)
    extra = (
        {"monotone_constraints": [1] * len(RANK_FEATURES), "monotone_constraints_method": "advanced"}
        if monotone
        else {}
    )
    model = lgb.LGBMRanker(**PARAMS, **extra)
    model.fit(x, np.minimum(y, 4).astype(int), group=groups)
    return lambda matrix: model.predict(matrix[:, COLUMNS])


def _relative(data: dict[str, Any], runs: dict[str, dict[str, float]], hybrid: dict[str, dict[str, float]]) -> float:
    metric = METRIC.get(data["collection"], "ndcg@20")
    pq = per_query(data["qrels"], runs)
    return float(np.mean([v[metric] for v in pq.values()]) / np.mean([v[metric] for v in hybrid.values()]) - 1)


def hybrid_per_query(home: Path, data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Hybrid RRF(BM25, MiniLM)'s per-query scores on the judged queries of `data`'s collection:
    the baseline every probe reports against."""
    col = Collection(data["collection"], home)
    rank = system_ranker(col, "hybrid", None, None, 1000)
    _, qids, texts, _ = judged_queries(col, None)
    return per_query(data["qrels"], {q: dict(rank(texts[q])) for q in qids})


def in_domain(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each query's run re-ordered by a model trained on the other folds of the same collection."""
    rows = [r for r in data["queries"] if r["features"]]
    fold = np.random.default_rng(0).integers(0, FOLDS, len(rows))
    runs: dict[str, dict[str, float]] = {}
    for k in range(FOLDS):
        train = dict(data, queries=[r for r, f in zip(rows, fold, strict=True) if f != k])
        test = dict(data, queries=[r for r, f in zip(rows, fold, strict=True) if f == k])
        runs |= rerank(test, _fit([train]))
    empty = dict(data, queries=[r for r in data["queries"] if not r["features"]])
    return runs | rerank(empty, lambda m: np.zeros(len(m)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collections", nargs="+", default=["cacm", "cranfield", "scifact-train"])
    args = parser.parse_args()
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        parser.error("the probes need LightGBM: pip install lightgbm")
    datasets = {n: collect(args.home, n) for n in args.collections}
    print("| collection | in-domain 5-fold | held out | held out, monotone |\n|---|---|---|---|")
    for name, data in datasets.items():
        hybrid = hybrid_per_query(args.home, data)
        others = [d for n, d in datasets.items() if n != name]
        cells = [_relative(data, in_domain(data), hybrid)]
        cells += [_relative(data, rerank(data, _fit(others, monotone)), hybrid) for monotone in (False, True)]
        print(f"| {name} | " + " | ".join(f"{c:+.1%}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
