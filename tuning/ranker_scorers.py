"""The candidate scorers of the learned verifier: how each is fitted and how it re-orders a run.

`tuning.train_ranker` measures these held out (leave one collection out) and ships the best linear
one; they are apart from it so that the fitting itself — the feature matrices built from the
cached features and relevance grades, logistic regression (scikit-learn), coordinate ascent on
nDCG, LambdaMART (LightGBM, only if installed) — can be read, tested and probed
(`evals.ranker_probes`) without the data collection and the command line around it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodes.ranking.ranker import FEATURES, RANK_FEATURES, Verifier

METRIC = {"scifact-train": "ndcg@10"}  # the measure per collection; nDCG@20 for the others
# Features whose values do not depend on how long a collection's documents are or whether it has
# citation links or author metadata (CACM has both, Cranfield and scifact neither).
TRANSFERABLE = tuple(
    f for f in FEATURES if f not in ("log_len", "cites_top", "cit_best_inv", "meta_hit") and f not in RANK_FEATURES
)
ASCENT_STEPS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)  # the weights coordinate ascent tries for each feature
ASCENT_PASSES = 3
# The rank features without the alternative BM25 settings, whose k1 values were taken from what
# tuning chose on the same collections' judgements (a leak into the held-out figures).
UNLEAKED = tuple(f for f in RANK_FEATURES if not f.startswith("bm25_"))
# Hybrid fusion inside the verified head: the intent's own lexical and semantic ranks, equal weights.
HYBRID_ANCHOR = ("lex0_rrf", "sem0_rrf")
SHRINK_STEPS = (0.25, 0.5, 0.75)  # how far a shrunk verifier is pulled towards the anchor


def _matrix(
    datasets: list[dict[str, Any]], features: tuple[str, ...] = FEATURES
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    cols = [FEATURES.index(f) for f in features]
    xs, ys, groups = [], [], []
    for data in datasets:
        for row in data["queries"]:
            grades = data["qrels"][row["qid"]]
            if not row["features"]:
                continue
            for docid, vec in row["features"].items():
                xs.append([vec[c] for c in cols])
                ys.append(grades.get(docid, 0))
            groups.append(len(row["features"]))
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), groups


def fit_logistic(
    datasets: list[dict[str, Any]], name: str = "verifier", features: tuple[str, ...] = FEATURES
) -> Verifier:
    from sklearn.linear_model import LogisticRegression

    x, y, _ = _matrix(datasets, features)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
    model.fit((x - mean) / scale, (y > 0).astype(int))
    return Verifier(name, features, tuple(mean), tuple(scale), tuple(model.coef_[0]), float(model.intercept_[0]))


def _head_matrices(
    datasets: list[dict[str, Any]], features: tuple[str, ...]
) -> list[list[tuple[np.ndarray, np.ndarray, float, int]]]:
    """Per collection, per query: (features of the verified head, grades, ideal DCG, cut-off)."""
    cols = [FEATURES.index(f) for f in features]
    out = []
    for data in datasets:
        cut = int(METRIC.get(data["collection"], "ndcg@20").split("@")[1])
        rows = []
        for row in data["queries"]:
            grades = data["qrels"][row["qid"]]
            ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:cut]
            idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
            docs = list(row["features"])
            if not docs or not idcg:
                rows.append((np.zeros((0, len(cols))), np.zeros(0), 1.0, cut))
                continue
            x = np.asarray([[row["features"][d][c] for c in cols] for d in docs], dtype=float)
            rows.append((x, np.asarray([grades.get(d, 0) for d in docs], dtype=float), idcg, cut))
        out.append(rows)
    return out


def _mean_ndcg(rows: list[tuple[np.ndarray, np.ndarray, float, int]], w: np.ndarray) -> float:
    """Mean nDCG@cut (linear gain, as trec_eval) of the verified heads ordered by `x @ w`."""
    total = 0.0
    for x, g, idcg, cut in rows:
        if len(g):
            top = np.argsort(-(x @ w), kind="stable")[:cut]
            total += float((g[top] / np.log2(np.arange(2, len(top) + 2))).sum()) / idcg
    return total / max(1, len(rows))


def fit_ascent(
    datasets: list[dict[str, Any]], name: str = "verifier", features: tuple[str, ...] = RANK_FEATURES
) -> Verifier:
    """A linear scorer over reciprocal-rank features, fitted by coordinate ascent directly on nDCG
    (the metric reported), each training collection weighing the same: its nDCG relative to the
    intent's own lexical+semantic fusion on that collection, averaged. RankLib's coordinate ascent
    in a few lines (RankLib is Java and nothing in Python's well-kept libraries fits a listwise
    linear model); with eight weights on a grid it cannot overfit the way a tree ensemble does."""
    per_col = _head_matrices(datasets, features)
    base = np.asarray([1.0 if f in ("lex0_rrf", "sem0_rrf") else 0.0 for f in features])
    norms = [(_mean_ndcg(rows, base) if base.any() else 1.0) or 1.0 for rows in per_col]

    def objective(w: np.ndarray) -> float:
        return float(np.mean([_mean_ndcg(rows, w) / n for rows, n in zip(per_col, norms, strict=True)]))

    w = np.ones(len(features))
    best = objective(w)
    for _ in range(ASCENT_PASSES):
        improved = False
        for j in range(len(features)):
            for step in ASCENT_STEPS:
                trial = w.copy()
                trial[j] = step
                if not trial.any():
                    continue
                value = objective(trial)
                if value > best + 1e-9:
                    best, w, improved = value, trial, True
        if not improved:
            break
    return Verifier(name, features, (0.0,) * len(features), (1.0,) * len(features), tuple(map(float, w)), 0.0)


def shrink(verifier: Verifier, toward_hybrid: float, name: str | None = None) -> Verifier:
    """`verifier` pulled towards hybrid fusion of the verified head: its weights (a linear scorer on
    reciprocal-rank features, unstandardised, as `fit_ascent` makes) normalised to sum 1, then
    (1 − λ)·w + λ·anchor, the anchor being equal weights on the intent's lexical and semantic
    ranks. λ = 1 orders the head as hybrid does; in between, a verifier whose weights do not carry
    to a collection can move the order only part of the way from hybrid's."""
    if any(m != 0.0 for m in verifier.mean) or any(s != 1.0 for s in verifier.scale):
        raise ValueError("only an unstandardised rank-feature scorer can be shrunk towards hybrid")
    features = tuple(dict.fromkeys((*verifier.features, *HYBRID_ANCHOR)))
    own = dict(zip(verifier.features, verifier.weights, strict=True))
    total = sum(own.values()) or 1.0
    weights = tuple(
        (1 - toward_hybrid) * own.get(f, 0.0) / total + toward_hybrid * (f in HYBRID_ANCHOR) / len(HYBRID_ANCHOR)
        for f in features
    )
    return Verifier(name or verifier.name, features, (0.0,) * len(features), (1.0,) * len(features), weights, 0.0)


def fit_lambdamart(datasets: list[dict[str, Any]]):
    import lightgbm as lgb

    x, y, groups = _matrix(datasets)
    model = lgb.LGBMRanker(
        objective="lambdarank",
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=15,
        min_child_samples=20,
        random_state=0,
        verbose=-1,
    )
    model.fit(x, y.astype(int), group=groups)
    return model


def rerank(data: dict[str, Any], score) -> dict[str, dict[str, float]]:
    """Each query's run with its verified head re-ordered by `score(matrix) -> scores`."""
    runs = {}
    for row in data["queries"]:
        run, feats = row["run"], row["features"]
        head = [d for d in run if d in feats]
        if head:
            scores = score(np.asarray([feats[d] for d in head], dtype=float))
            order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
            new_head = [head[i] for i in order]
            it = iter(new_head)
            run = [next(it) if d in feats else d for d in run]
        runs[row["qid"]] = {d: float(len(run) - i) for i, d in enumerate(run)}
    return runs


def _shrunk_fit(lam: float) -> Callable[[list[dict[str, Any]], str], Verifier]:
    return lambda ds, name: shrink(fit_ascent(ds, name, UNLEAKED), lam)


# How each linear candidate is fitted on the chosen collections (what --write ships).
FITS = {
    "logistic": lambda ds, name: fit_logistic(ds, name),
    "logistic_transferable": lambda ds, name: fit_logistic(ds, name, features=TRANSFERABLE),
    "logistic_ranks": lambda ds, name: fit_logistic(ds, name, features=RANK_FEATURES),
    "ascent_ranks": lambda ds, name: fit_ascent(ds, name),
    "ascent_unleaked": lambda ds, name: fit_ascent(ds, name, UNLEAKED),
    **{f"ascent_unleaked_shrunk{lam:g}": _shrunk_fit(lam) for lam in SHRINK_STEPS},
}
