"""Tuned BM25 that is never scored on the queries it was tuned on.

When the judged queries come in one split, they are divided into k folds (a seeded shuffle,
then round-robin, so fold sizes differ by at most one and no query is in two folds); each fold's
queries are ranked with the (k1, b) that scored best on the other folds. When the collection has
a separate `train` split, the setting is chosen on it and applied to the evaluated split. The run
every query gets therefore comes from parameters chosen without it; the report gives each fold's
choice.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tuning.metrics import per_query

FOLDS = 5
SEED = 13
# A coarser grid than `quarry tune`'s: cross-validation ranks every query under every setting.
CV_K1 = (0.6, 0.9, 1.2, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0)
CV_B = (0.2, 0.3, 0.4, 0.6, 0.75, 0.9, 1.0)
OBJECTIVE = "ndcg@20"

Ranker = Callable[[str, float, float], dict[str, float]]  # (query text, k1, b) -> {docid: score}


@dataclass(frozen=True)
class Fold:
    train: tuple[str, ...]
    test: tuple[str, ...]
    k1: float = 0.0
    b: float = 0.0


def make_folds(qids: Sequence[str], k: int = FOLDS, seed: int = SEED) -> list[Fold]:
    """k disjoint test folds covering every query once; each fold trains on all the others."""
    if len(qids) < 2:
        raise ValueError("cross-validation needs at least two judged queries")
    k = max(2, min(k, len(qids)))
    order = sorted(set(qids))
    random.Random(seed).shuffle(order)
    tests = [tuple(sorted(order[i::k])) for i in range(k)]
    return [Fold(train=tuple(sorted(q for t in tests if t is not test for q in t)), test=test) for test in tests]


def best_setting(scores: Mapping[tuple[float, float], Mapping[str, float]], qids: Sequence[str]) -> tuple[float, float]:
    """The (k1, b) with the highest mean objective over `qids`; ties to the smaller k1, then b."""
    return min(scores, key=lambda s: (-sum(scores[s].get(q, 0.0) for q in qids) / max(len(qids), 1), s))


def cross_validate(
    qids: Sequence[str],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    rank: Ranker,
    *,
    train: Sequence[str] = (),
    train_texts: Mapping[str, str] | None = None,
    train_qrels: Mapping[str, Mapping[str, int]] | None = None,
    k: int = FOLDS,
    grid: tuple[Sequence[float], Sequence[float]] = (CV_K1, CV_B),
    threads: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, dict[str, float]], list[Fold]]:
    """The run in which every query of `qids` is ranked with a setting chosen without it."""
    settings = [(k1, b) for k1 in grid[0] for b in grid[1]]
    held_out = list(train)  # a separate train split: choose there, apply to all of qids
    pool_qids = held_out or list(qids)
    pool_texts = train_texts or texts
    pool_qrels = train_qrels or qrels
    scores: dict[tuple[float, float], dict[str, float]] = {}
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for n, (k1, b) in enumerate(settings, start=1):
            pool_run = dict(
                zip(pool_qids, pool.map(lambda q, k1=k1, b=b: rank(pool_texts[q], k1, b), pool_qids), strict=True)
            )
            scores[(k1, b)] = {
                q: m[OBJECTIVE] for q, m in per_query({q: pool_qrels[q] for q in pool_qids}, pool_run).items()
            }
            if progress:
                progress(n, len(settings))
    folds = [Fold(tuple(held_out), tuple(sorted(qids)))] if held_out else make_folds(qids, k)
    run: dict[str, dict[str, float]] = {}
    chosen = []
    for fold in folds:
        k1, b = best_setting(scores, fold.train)
        chosen.append(Fold(fold.train, fold.test, k1, b))
        for q in fold.test:
            run[q] = rank(texts[q], k1, b)
    return run, chosen
