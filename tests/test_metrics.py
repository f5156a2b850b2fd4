"""Retrieval metrics on a toy run whose values are worked out by hand, and TREC run files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evals.trec import read_run, write_run
from tuning.metrics import BASE_METRICS, mean_metrics, per_query

QRELS = {
    # q1: binary; d3 is judged but not relevant
    "q1": {"d1": 1, "d2": 1, "d3": 0},
    # q2: graded (trec_eval's nDCG gain is the grade itself)
    "q2": {"d4": 2, "d5": 1},
}
RUN = {
    "q1": {"d1": 0.9, "dx": 0.8, "d2": 0.7},  # relevant at ranks 1 and 3
    "q2": {"d5": 0.9, "d6": 0.5},  # d5 (grade 1) at rank 1, d4 (grade 2) never retrieved
}

LOG2_3 = math.log2(3)
# q1: DCG = 1/log2(2) + 1/log2(4) = 1.5 ; IDCG = 1 + 1/log2(3)
Q1_NDCG = 1.5 / (1 + 1 / LOG2_3)
# q2: DCG = 1/log2(2) = 1 ; IDCG = 2/log2(2) + 1/log2(3)
Q2_NDCG = 1 / (2 + 1 / LOG2_3)
Q1 = {
    "ndcg@10": Q1_NDCG,
    "ndcg@20": Q1_NDCG,
    "precision@20": 2 / 20,
    "recall@20": 1.0,
    "recall@100": 1.0,
    "recall@1000": 1.0,
    "map": (1 / 1 + 2 / 3) / 2,  # precision at each relevant doc / #relevant
    "f1@20": 2 * 0.1 * 1.0 / (0.1 + 1.0),
}
Q2 = {
    "ndcg@10": Q2_NDCG,
    "ndcg@20": Q2_NDCG,
    "precision@20": 1 / 20,
    "recall@20": 0.5,
    "recall@100": 0.5,
    "recall@1000": 0.5,
    "map": (1 / 1) / 2,
    "f1@20": 2 * 0.05 * 0.5 / (0.05 + 0.5),
}


def test_hand_computed_values_are_distinct() -> None:
    # the two queries disagree on every metric, so a swapped or averaged-away value shows up
    assert all(Q1[m] != Q2[m] for m in BASE_METRICS)
    assert round(Q1_NDCG, 4) == 0.9197 and round(Q2_NDCG, 4) == 0.3801


def test_per_query_matches_hand_computation() -> None:
    rows = per_query(QRELS, RUN)
    assert set(rows) == {"q1", "q2"}
    for qid, expected in (("q1", Q1), ("q2", Q2)):
        for metric in BASE_METRICS:
            assert rows[qid][metric] == pytest.approx(expected[metric], abs=1e-9), (qid, metric)


def test_mean_matches_hand_computation() -> None:
    means = mean_metrics(QRELS, RUN)
    assert list(means) == list(BASE_METRICS)
    for metric in BASE_METRICS:
        assert means[metric] == pytest.approx((Q1[metric] + Q2[metric]) / 2, abs=1e-9), metric


def test_f1_is_averaged_per_query_not_computed_from_mean_p_and_r() -> None:
    # q1: 2 of 2 relevant retrieved (P@20 0.1, R 1); q2: 1 of 4 (P@20 0.05, R 0.25)
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1, "d": 1, "e": 1, "f": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    mean_f1 = (2 * 0.1 * 1.0 / 1.1 + 2 * 0.05 * 0.25 / 0.3) / 2  # 0.13258
    f1_of_means = 2 * 0.075 * 0.625 / (0.075 + 0.625)  # 0.13393
    assert abs(mean_f1 - f1_of_means) > 1e-3
    assert mean_metrics(qrels, run)["f1@20"] == pytest.approx(mean_f1, abs=1e-9)


def test_unretrieved_judged_query_scores_zero_and_counts_in_the_mean() -> None:
    qrels = {**QRELS, "q3": {"d9": 1}}
    rows = per_query(qrels, RUN)
    assert all(v == 0.0 for v in rows["q3"].values())
    assert mean_metrics(qrels, RUN)["map"] == pytest.approx((Q1["map"] + Q2["map"] + 0.0) / 3)


def test_queries_without_relevant_documents_are_not_judged() -> None:
    qrels = {**QRELS, "q4": {"d1": 0, "d2": 0}}
    run = {**RUN, "q4": {"d1": 1.0}}
    assert set(per_query(qrels, run)) == {"q1", "q2"}
    assert mean_metrics(qrels, run)["map"] == pytest.approx((Q1["map"] + Q2["map"]) / 2)


def test_run_order_comes_from_scores_not_insertion() -> None:
    shuffled = {"q1": {"d2": 0.7, "dx": 0.8, "d1": 0.9}, "q2": {"d6": 0.5, "d5": 0.9}}
    assert per_query(QRELS, shuffled) == per_query(QRELS, RUN)


def test_no_judged_queries_gives_zeros() -> None:
    assert mean_metrics({"q": {"d": 0}}, {"q": {"d": 1.0}}) == {m: 0.0 for m in BASE_METRICS}


def test_trec_round_trip(tmp_path: Path) -> None:
    run = {"q10": {"b": 1.5, "a": 1.5, "c": 2.25}, "q2": {"z": -0.125}, "q1": {"d": 3.0}}
    path = write_run(tmp_path / "sub" / "run.trec", run, "tag-x")
    assert read_run(path) == run
    assert path.read_text(encoding="utf-8").splitlines() == [
        # queries by (length, id); ranks by score then docid; six-decimal scores
        "q1 Q0 d 1 3.000000 tag-x",
        "q2 Q0 z 1 -0.125000 tag-x",
        "q10 Q0 c 1 2.250000 tag-x",
        "q10 Q0 a 2 1.500000 tag-x",
        "q10 Q0 b 3 1.500000 tag-x",
    ]
