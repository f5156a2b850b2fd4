"""Probe behind docs/eval/ranker.md's third way to keep the default order from losing to hybrid:
gate the verifier by how much the channels agree.

    python -m evals.ranker_gate_probe --home H [--collections cacm cranfield scifact-train]

Uses the feature caches of `tuning.train_ranker` (run it first). The verifier is semantic-heavy, so
on a query whose lexical and semantic channels disagree it leans on one of them; the gate orders
such a query's verified head by a fallback instead. Per query, the agreement of the intent's own
lexical and semantic ranks inside the verified head is either the overlap of their top 10
(0 … 1) or Spearman's rho; the verifier orders the head when the agreement is on one side of a
threshold and the fallback (the heuristic rule, or hybrid fusion of the two ranks) otherwise.
Leave one collection out: the verifier (`ascent_unleaked`, as shipped) and the gate's threshold and
side are fitted on the other collections (threshold chosen by the worse training collection's
gain over hybrid fusion of the head, the mean breaking ties) and scored on the held-out one against
hybrid RRF(BM25, MiniLM) and the heuristic order, paired randomization test. Nothing here is
shipped; it is a measurement, on the same three collections the verifier was developed on.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from evals.ranker_probes import hybrid_per_query
from nodes.ranking.ranker import FEATURES, Verifier
from tuning.metrics import per_query
from tuning.ranker_scorers import METRIC, UNLEAKED, fit_ascent, rerank
from tuning.significance import compare
from tuning.train_ranker import collect, heuristic_runs

LEX, SEM, HEUR = (FEATURES.index(f) for f in ("lex0_rrf", "sem0_rrf", "heur_rank_inv"))
TOP = 10  # the overlap gate compares the two channels' first 10 inside the head

Score = Callable[[np.ndarray], np.ndarray]


def overlap(head: np.ndarray) -> float:
    """Share of the lexical channel's first 10 (inside the verified head) also in the semantic one's."""
    n = min(TOP, len(head))
    if n == 0:
        return 1.0
    by_lex = set(np.argsort(-head[:, LEX], kind="stable")[:n].tolist())
    return len(by_lex & set(np.argsort(-head[:, SEM], kind="stable")[:n].tolist())) / n


def spearman(head: np.ndarray) -> float:
    """Spearman's rho of the two channels' reciprocal ranks over the head (0 where undefined)."""
    if len(head) < 3 or len(np.unique(head[:, LEX])) < 2 or len(np.unique(head[:, SEM])) < 2:
        return 0.0
    return float(spearmanr(head[:, LEX], head[:, SEM]).statistic)


AGREEMENT: dict[str, tuple[Callable[[np.ndarray], float], tuple[float, ...]]] = {
    "overlap@10": (overlap, tuple(np.round(np.linspace(0, 1, 11), 2))),
    "spearman": (spearman, tuple(np.round(np.linspace(-0.5, 1, 16), 2))),
}
FALLBACK: dict[str, Score] = {
    "heuristic": lambda head: head[:, HEUR],
    "hybrid": lambda head: head[:, LEX] + head[:, SEM],
}


def by_verifier(verifier: Verifier) -> Score:
    """The verifier's scores for a head's feature matrix."""
    return lambda head: np.asarray([verifier.score(x) for x in head])


def gated(
    verifier: Verifier, agreement: Callable[[np.ndarray], float], threshold: float, above: bool, fallback: str
) -> Score:
    """The verifier's order where the channels' agreement is ≥ threshold (`above`) or < it, else the fallback's."""
    own = by_verifier(verifier)

    def score(head: np.ndarray) -> np.ndarray:
        return (own if (agreement(head) >= threshold) == above else FALLBACK[fallback])(head)

    return score


def mean_metric(data: dict[str, Any], runs: dict[str, dict[str, float]]) -> tuple[dict[str, dict[str, float]], float]:
    pq = per_query(data["qrels"], runs)
    return pq, float(np.mean([v[METRIC.get(data["collection"], "ndcg@20")] for v in pq.values()]))


def fit_gate(train: list[dict[str, Any]], verifier: Verifier, agreement_name: str, fallback: str) -> tuple[float, bool]:
    """The threshold and side whose worse training collection gains most over hybrid fusion of the head."""
    agreement, grid = AGREEMENT[agreement_name]
    base = {d["collection"]: mean_metric(d, rerank(d, FALLBACK["hybrid"]))[1] for d in train}
    best: tuple[tuple[float, float], float, bool] | None = None
    for above in (True, False):
        for threshold in grid:
            score = gated(verifier, agreement, threshold, above, fallback)
            gains = [mean_metric(d, rerank(d, score))[1] / base[d["collection"]] - 1 for d in train]
            key = (round(min(gains), 4), float(np.mean(gains)))
            if best is None or key > best[0]:
                best = (key, threshold, above)
    assert best is not None
    return best[1], best[2]


@dataclass(frozen=True)
class Fold:
    """One held-out collection's verifier (fitted on the others) and the baselines every gate is compared with."""

    train: list[dict[str, Any]]
    verifier: Verifier
    metric: str
    base: float  # hybrid's mean on the held-out queries
    heur_pq: dict[str, dict[str, float]]
    heur: float
    plain: float  # the ungated verifier's mean
    heads: list[np.ndarray]


def fold(datasets: dict[str, dict[str, Any]], held: str, hybrid: dict[str, dict[str, float]]) -> Fold:
    test = datasets[held]
    train = [d for n, d in datasets.items() if n != held]
    verifier = fit_ascent(train, "verifier", UNLEAKED)
    metric = METRIC.get(held, "ndcg@20")
    heur_pq, heur = mean_metric(test, heuristic_runs(test))
    return Fold(
        train,
        verifier,
        metric,
        float(np.mean([v[metric] for v in hybrid.values()])),
        heur_pq,
        heur,
        mean_metric(test, rerank(test, by_verifier(verifier)))[1],
        [np.asarray(list(r["features"].values())) for r in test["queries"] if r["features"]],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collections", nargs="+", default=["cacm", "cranfield", "scifact-train"])
    args = parser.parse_args()
    if len(set(args.collections)) < 2:
        parser.error("leave-one-collection-out needs at least two collections")
    datasets = {n: collect(args.home, n) for n in args.collections}
    hybrid = {n: hybrid_per_query(args.home, d) for n, d in datasets.items()}
    print(
        "| gate | fallback | held out | threshold | verifier orders | heuristic | verifier | gated (p) | gated vs heuristic (p) |\n"
        "|---|---|---|---|---:|---:|---:|---:|---:|"
    )
    folds = {held: fold(datasets, held, hybrid[held]) for held in datasets}  # once, for every gate
    for agreement_name, (agreement, _) in AGREEMENT.items():
        for fallback in FALLBACK:
            for held, test in datasets.items():
                f = folds[held]
                threshold, above = fit_gate(f.train, f.verifier, agreement_name, fallback)
                gate_pq, gate = mean_metric(
                    test, rerank(test, gated(f.verifier, agreement, threshold, above, fallback))
                )
                used = np.mean([(agreement(h) >= threshold) == above for h in f.heads])
                vs_hybrid = compare("gated", gate_pq, "hybrid", hybrid[held], f.metric)
                vs_heur = compare("gated", gate_pq, "heuristic", f.heur_pq, f.metric)
                assert vs_hybrid is not None and vs_heur is not None, "fewer than two queries to compare"
                base = f.base
                print(
                    f"| {agreement_name} | {fallback} | {held} | {'≥' if above else '<'} {threshold:g} | {used:.0%} "
                    f"| {f.heur / base - 1:+.2%} | {f.plain / base - 1:+.2%} | {gate / base - 1:+.2%} "
                    f"({vs_hybrid.p_value:.3f}) | {vs_heur.relative:+.2%} ({vs_heur.p_value:.3f}) |",
                    flush=True,
                )


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
