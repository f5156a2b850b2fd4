"""Retrieval metrics from `pytrec_eval` (trec_eval's own code), never hand-written.

F1@k is the one exception: trec_eval has no F1, so it is the per-query harmonic mean of
trec_eval's P@k and recall@k, averaged over queries.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytrec_eval

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

BASE_METRICS = ("ndcg@10", "ndcg@20", "recall@20", "precision@20", "f1@20", "recall@100", "recall@1000", "map")
_TREC = {
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut_20": "ndcg@20",
    "recall_20": "recall@20",
    "P_20": "precision@20",
    "recall_100": "recall@100",
    "recall_1000": "recall@1000",
    "map": "map",
}


def per_query(qrels: Qrels, run: Run) -> dict[str, dict[str, float]]:
    """Metric values per judged query (queries missing from the run score 0)."""
    judged = {q: dict(d) for q, d in qrels.items() if any(v > 0 for v in d.values())}
    full_run = {q: dict(run.get(q, {})) or {"__none__": 0.0} for q in judged}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, set(_TREC))
    out: dict[str, dict[str, float]] = {}
    for qid, values in evaluator.evaluate(full_run).items():
        row = {name: float(values[key]) for key, name in _TREC.items()}
        p, r = row["precision@20"], row["recall@20"]
        row["f1@20"] = 2 * p * r / (p + r) if p + r else 0.0
        out[qid] = row
    return out


def mean_metrics(qrels: Qrels, run: Run) -> dict[str, float]:
    """Mean of each metric over the judged queries, keyed as in `BASE_METRICS`."""
    rows = per_query(qrels, run)
    if not rows:
        return {m: 0.0 for m in BASE_METRICS}
    return {m: sum(r[m] for r in rows.values()) / len(rows) for m in BASE_METRICS}
