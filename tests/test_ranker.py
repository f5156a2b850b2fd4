"""The learned verifier: feature extraction from candidates, the order it gives, and the
fallback to the heuristic rule when no verifier is shipped or it does not fit."""
from __future__ import annotations

import pytest

from nodes.ranker import FEATURES, Verifier, candidate_features, final_order
from nodes.state import ranked_candidates


def cand(docid: str, fused: float, score: float, evidence: list[float], ranks: dict[str, int], **kw) -> dict:
    return {"docid": docid, "fused": fused, "score": score, "p": fused / 0.05, "verified_version": 1,
            "evidence": [{"item_id": f"c{i}", "score": s} for i, s in enumerate(evidence)], "ranks": ranks, **kw}


POOL = {
    "a": cand("a", 0.05, 0.6, [5.0, 3.0], {"s1": 1, "s2": 4}),
    "b": cand("b", 0.03, 0.8, [4.0, 4.0, 1.0], {"s1": 7, "c1": 2}),
    "c": cand("c", 0.04, 0.2, [0.0], {"s2": 1}),
    "x": cand("x", 0.06, 0.9, [5.0], {"s1": 2}, excluded="published 1990, before 2015"),
    "u": {"docid": "u", "fused": 0.01, "score": 0.0, "ranks": {"s1": 30}},  # retrieved, not verified
}
CHANNELS = {"s1": "lexical", "s2": "semantic", "c1": "citations"}


def test_features_of_verified_candidates() -> None:
    feats = candidate_features(list(POOL.values()), CHANNELS, neighbours={"a": {"b", "z"}}, lengths={"a": 99})
    assert set(feats) == {"a", "b", "c"}, "excluded and unverified candidates get no features"
    a = dict(zip(FEATURES, feats["a"]))
    assert a["fused_rel"] == 1.0 and a["S"] == 0.6 and a["ev_max"] == 1.0 and a["ev_min"] == 0.6
    assert a["ev_coverage"] == 1.0 and a["lex_best_inv"] == 0.5 and a["sem_best_inv"] == 0.2 and a["cit_best_inv"] == 0
    assert a["cites_top"] == 1.0, "b is in the top ten, z is not"
    assert a["log_len"] == pytest.approx(4.605, abs=1e-3)
    b = dict(zip(FEATURES, feats["b"]))
    assert b["cit_best_inv"] == pytest.approx(1 / 3) and b["ev_coverage"] == pytest.approx(2 / 3)
    assert b["s_rank_inv"] == 0.5 and b["n_rankings"] == 2.0


def verifier(weights: dict[str, float]) -> Verifier:
    return Verifier("test", FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES),
                    tuple(weights.get(f, 0.0) for f in FEATURES), 0.0)


def test_the_verifier_orders_the_verified_head_and_keeps_the_rest() -> None:
    by_coverage = final_order(POOL, CHANNELS, verifier({"ev_coverage": 1.0, "S": 0.1}))
    assert [c["docid"] for c in by_coverage] == ["a", "b", "c", "u"]
    by_semantic = final_order(POOL, CHANNELS, verifier({"sem_best_inv": 1.0}))
    assert [c["docid"] for c in by_semantic][:1] == ["c"] and by_semantic[-1]["docid"] == "u"
    assert "x" not in [c["docid"] for c in by_semantic], "hard constraints still hold"


def test_without_a_verifier_the_heuristic_rule_stands() -> None:
    assert final_order(POOL, CHANNELS, None) == ranked_candidates(POOL)


def test_a_verifier_trained_on_other_features_is_refused() -> None:
    raw = {"name": "old", "features": ["S", "bm25_title"], "mean": [0, 0], "scale": [1, 1], "weights": [1, 1], "bias": 0}
    with pytest.raises(ValueError, match="other features: bm25_title"):
        Verifier.from_dict(raw)


def test_a_verifier_on_a_subset_of_the_features_scores_full_vectors() -> None:
    raw = {"name": "sub", "features": ["ev_coverage", "S"], "mean": [0.5, 0.0], "scale": [0.5, 1.0],
           "weights": [2.0, 1.0], "bias": 0.25}
    v = Verifier.from_dict(raw)
    vector = [0.0] * len(FEATURES)
    vector[FEATURES.index("ev_coverage")], vector[FEATURES.index("S")] = 1.0, 0.5
    assert v.score(vector) == pytest.approx(0.25 + 2.0 * (1.0 - 0.5) / 0.5 + 0.5)
