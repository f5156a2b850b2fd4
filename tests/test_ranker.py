"""The learned verifier: feature extraction from candidates, the order it gives, and the
fallback to the heuristic rule when no verifier is shipped or it does not fit."""

from __future__ import annotations

import pytest

from nodes.job.state import ranked_candidates
from nodes.ranking.ranker import FEATURES, HEURISTIC_ORDER, Verifier, candidate_features, final_order


def cand(docid: str, fused: float, score: float, evidence: list[float], ranks: dict[str, int], **kw) -> dict:
    return {
        "docid": docid,
        "fused": fused,
        "score": score,
        "p": fused / 0.05,
        "verified_version": 1,
        "evidence": [{"item_id": f"c{i}", "score": s} for i, s in enumerate(evidence)],
        "ranks": ranks,
        **kw,
    }


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
    a = dict(zip(FEATURES, feats["a"], strict=True))
    assert a["fused_rel"] == 1.0 and a["S"] == 0.6 and a["ev_max"] == 1.0 and a["ev_min"] == 0.6
    assert a["ev_coverage"] == 1.0 and a["lex_best_inv"] == 0.5 and a["sem_best_inv"] == 0.2 and a["cit_best_inv"] == 0
    assert a["cites_top"] == 1.0, "b is in the top ten, z is not"
    assert a["log_len"] == pytest.approx(4.605, abs=1e-3)
    b = dict(zip(FEATURES, feats["b"], strict=True))
    assert b["cit_best_inv"] == pytest.approx(1 / 3) and b["ev_coverage"] == pytest.approx(2 / 3)
    assert b["s_rank_inv"] == 0.5 and b["n_rankings"] == 2.0


def verifier(weights: dict[str, float]) -> Verifier:
    return Verifier(
        "test",
        FEATURES,
        (0.0,) * len(FEATURES),
        (1.0,) * len(FEATURES),
        tuple(weights.get(f, 0.0) for f in FEATURES),
        0.0,
    )


def test_the_verifier_orders_the_verified_head_and_keeps_the_rest() -> None:
    by_coverage = final_order(POOL, CHANNELS, verifier({"ev_coverage": 1.0, "S": 0.1}))
    assert [c["docid"] for c in by_coverage] == ["a", "b", "c", "u"]
    by_semantic = final_order(POOL, CHANNELS, verifier({"sem_best_inv": 1.0}))
    assert [c["docid"] for c in by_semantic][:1] == ["c"] and by_semantic[-1]["docid"] == "u"
    assert "x" not in [c["docid"] for c in by_semantic], "hard constraints still hold"


def test_without_a_verifier_the_heuristic_rule_stands() -> None:
    """The heuristic rule by hand: the verified a, b, c by Reciprocal Rank Fusion (k=60) of their
    order by S (b .8, a .6, c .2) and by fused retrieval score (a .05, c .04, b .03) — neither
    order alone — then the unverified u by retrieval score; the excluded x nowhere."""
    ordered = final_order(POOL, CHANNELS, None)
    assert [c["docid"] for c in ordered] == ["a", "b", "c", "u"]
    assert [c["rank_score"] for c in ordered] == pytest.approx(
        [1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 63 + 1 / 62, 0.01], abs=1e-6
    )
    assert all(c == dict(POOL[c["docid"]], rank_score=c["rank_score"]) for c in ordered), "candidates unchanged"
    assert ordered == ranked_candidates(POOL)


def test_a_verifier_trained_on_other_features_is_refused() -> None:
    raw = {
        "name": "old",
        "features": ["S", "bm25_title"],
        "mean": [0, 0],
        "scale": [1, 1],
        "weights": [1, 1],
        "bias": 0,
    }
    with pytest.raises(ValueError, match="other features: bm25_title"):
        Verifier.from_dict(raw)


def test_a_verifier_on_a_subset_of_the_features_scores_full_vectors() -> None:
    raw = {
        "name": "sub",
        "features": ["ev_coverage", "S"],
        "mean": [0.5, 0.0],
        "scale": [0.5, 1.0],
        "weights": [2.0, 1.0],
        "bias": 0.25,
    }
    v = Verifier.from_dict(raw)
    vector = [0.0] * len(FEATURES)
    vector[FEATURES.index("ev_coverage")], vector[FEATURES.index("S")] = 1.0, 0.5
    assert v.score(vector) == pytest.approx(0.25 + 2.0 * (1.0 - 0.5) / 0.5 + 0.5)


def test_rank_features_read_the_intent_rankings_feedback_and_alternative_bm25() -> None:
    from nodes.ranking.ranker import ABSENT_RANK, RRF_K, RankContext

    ctx = RankContext(
        lexical=("b", "a", "q"),
        semantic=("c", "a"),
        others=[("q", "c"), ("a", "b", "c")],
        alt_bm25={(1.2, 0.75): {"a": 1.0, "b": 3.0, "c": 2.0}},
    )
    feats = candidate_features(list(POOL.values()), CHANNELS, context=ctx)
    a, b, c = (dict(zip(FEATURES, feats[d], strict=True)) for d in "abc")
    rrf = lambda r: 1.0 / (RRF_K + r)  # noqa: E731
    assert a["lex0_rrf"] == rrf(2) and a["sem0_rrf"] == rrf(2) and a["feedback_rrf"] == rrf(1)
    assert b["lex0_rrf"] == rrf(1) and b["sem0_rrf"] == rrf(ABSENT_RANK), "b is not in the semantic ranking"
    assert c["feedback_rrf"] == rrf(2), "the best rank over the other rankings"
    assert b["s_rrf"] == rrf(1) and a["s_rrf"] == rrf(2) and c["s_rrf"] == rrf(3)
    assert a["evmax_rrf"] == rrf(1) and b["evmax_rrf"] == rrf(2), "a's best requirement scores 5, b's 4"
    assert [
        round(1 / x - RRF_K) for x in (b["bm25_k1.2_b0.75_rrf"], c["bm25_k1.2_b0.75_rrf"], a["bm25_k1.2_b0.75_rrf"])
    ] == [1, 2, 3]
    assert a["bm25_k2_b0.75_rrf"] == rrf(ABSENT_RANK), "a setting with no scores ranks nobody"


def test_without_context_the_rank_features_are_uniform_where_they_need_it() -> None:
    from nodes.ranking.ranker import ABSENT_RANK, RRF_K

    feats = candidate_features(list(POOL.values()), CHANNELS)
    for d in "abc":
        v = dict(zip(FEATURES, feats[d], strict=True))
        assert v["lex0_rrf"] == v["sem0_rrf"] == v["feedback_rrf"] == 1.0 / (RRF_K + ABSENT_RANK)


def _dataset(name: str, n_queries: int, seed: int) -> dict:
    """Synthetic heads where the relevant documents are the ones ranked high by feedback_rrf, not lex0."""
    import random

    rng = random.Random(seed)
    queries, qrels = [], {}
    for q in range(n_queries):
        feats, grades = {}, {}
        for i in range(30):
            relevant = i < 3
            vec = [1 / (60 + rng.randrange(1, 100)) for _ in FEATURES]  # reciprocal ranks, as the real ones
            vec[FEATURES.index("feedback_rrf")] = 1 / (60 + (i + 1 if relevant else 4 + rng.randrange(100)))
            feats[f"d{i}"] = vec
            if relevant:
                grades[f"d{i}"] = 1
        queries.append({"qid": str(q), "run": list(feats), "features": feats})
        qrels[str(q)] = grades
    return {"collection": name, "queries": queries, "qrels": qrels}


def test_coordinate_ascent_learns_the_feature_that_orders_relevant_documents_first() -> None:
    import numpy as np

    from tuning.ranker_scorers import _head_matrices, _mean_ndcg, fit_ascent

    train = [_dataset("one", 20, 1), _dataset("two", 20, 2)]
    v = fit_ascent(train)
    w = dict(zip(v.features, v.weights, strict=True))
    assert w["feedback_rrf"] > w["lex0_rrf"], w
    held = _head_matrices([_dataset("three", 20, 3)], v.features)[0]
    assert _mean_ndcg(held, np.asarray(v.weights)) > _mean_ndcg(held, np.ones(len(v.features))) + 0.1


def test_the_in_sample_bound_fits_the_held_out_collection_itself() -> None:
    """The report's bound re-orders a collection with weights fitted on that collection's own
    judgements: where one feature orders the relevant documents first it reaches a perfect nDCG,
    even though the agent's run put them last."""
    from tuning.train_ranker import in_sample_bound

    data = _dataset("self", 12, 4)
    for row in data["queries"]:
        row["run"] = row["run"][::-1]  # the relevant documents d0–d2 last
    hybrid = {q: {"ndcg@20": 0.5} for q in data["qrels"]}
    bound = in_sample_bound(data, data["qrels"], "ndcg@20", hybrid)
    assert bound["score"] == pytest.approx(1.0) and bound["relative"] == pytest.approx(1.0)


def test_a_verifier_ships_only_if_its_worst_fold_beats_the_heuristic_orders_and_it_loses_clearly_nowhere() -> None:
    from tuning.train_ranker import shipping_decision

    def row(name: str, heuristic: float, own: float, vs_agent: float, p: float) -> dict:
        """One held-out collection: hybrid 1.0, the heuristic order and the scorer relative to it."""
        return {
            "held_out": name,
            "hybrid": 1.0,
            "agent_heuristic": 1.0 + heuristic,
            "ascent_ranks_vs_hybrid": {"relative": own},
            "ascent_ranks_vs_agent": {"relative": vs_agent, "p": p},
        }

    ok, why = shipping_decision([row("x", 0.05, 0.08, 0.03, 0.01), row("y", -0.01, 0.005, 0.015, 0.4)], "ascent_ranks")
    assert ok, why
    # A better mean is not enough: on its worst collection it does worse than the heuristic order.
    ok, why = shipping_decision([row("x", 0.0, 0.10, 0.10, 0.01), row("y", 0.0, -0.01, -0.01, 0.4)], "ascent_ranks")
    assert not ok and "at worst" in why and "does not beat the heuristic order" in why
    ok, why = shipping_decision([row("x", -0.05, 0.05, 0.1, 0.01), row("y", 0.0, 0.0, -0.02, 0.01)], "ascent_ranks")
    assert not ok and "significantly worse than the heuristic order on y" in why
    ok, why = shipping_decision([], "lambdamart")
    assert not ok and "not linear" in why


def test_shrinking_pulls_a_verifier_towards_hybrid_fusion_of_the_head() -> None:
    from tuning.ranker_scorers import HYBRID_ANCHOR, shrink

    own = Verifier("v", ("feedback_rrf", "s_rrf"), (0.0, 0.0), (1.0, 1.0), (3.0, 1.0), 0.0)
    half = shrink(own, 0.5)
    weights = dict(zip(half.features, half.weights, strict=True))
    assert weights == pytest.approx({"feedback_rrf": 0.375, "s_rrf": 0.125, "lex0_rrf": 0.25, "sem0_rrf": 0.25})
    whole = dict(zip(*(lambda v: (v.features, v.weights))(shrink(own, 1.0)), strict=True))
    assert {f for f, w in whole.items() if w} == set(HYBRID_ANCHOR)  # λ = 1: hybrid's order of the head
    assert shrink(own, 0.0).score([0.0] * len(FEATURES)) == 0.0
    with pytest.raises(ValueError, match="unstandardised"):
        shrink(Verifier("z", ("s_rrf",), (0.5,), (2.0,), (1.0,), 0.0), 0.5)


def test_evaluation_never_scores_a_collection_with_a_verifier_trained_on_it(monkeypatch, capsys) -> None:
    import stores.verifier_file as vf
    from evals.agent_system import AgentOptions, held_out_verifier

    monkeypatch.setattr(vf, "load_verifier_file", lambda: {"name": "v", "trained_on": ["cacm", "cranfield"]})
    assert held_out_verifier("cacm", AgentOptions()).config.verifier is False
    assert "trained on cacm" in capsys.readouterr().err
    assert held_out_verifier("unseen", AgentOptions()).config.verifier is True
    # A self-tuned profile's own verifier was fitted on pseudo-queries, never on the qrels: it stays.
    assert held_out_verifier("cacm", AgentOptions(), own_verifier=True).config.verifier is True
    monkeypatch.setattr(vf, "load_verifier_file", lambda: None)
    assert held_out_verifier("cacm", AgentOptions()).config.verifier is True


def test_the_results_table_says_which_order_its_rank_column_is() -> None:
    from quarry.cli.render import score_help

    assert "learned verifier verifier-v3@abc" in score_help({"ranker": "verifier-v3@abc", "policy": "heuristic"})
    assert "reciprocal-rank fusion of the verification score" in score_help({"ranker": HEURISTIC_ORDER})
    assert "by evidence" in score_help({"ranker": "the model's submission", "policy": "react"})


def test_the_trainer_on_a_home_without_the_collections_says_so_without_a_traceback(tmp_path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "tuning.train_ranker", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error (no_collection): collection 'cacm' does not exist" in proc.stderr and "hint: ingest it" in proc.stderr


def test_the_shipped_verifier_reads_no_leaked_ranking_so_jobs_skip_those_scorings() -> None:
    """The rule chooses among scorers whose held-out figures are blind: the shipped one must not
    read the alternative BM25 rankings (their k1 came from tuning on the training collections), and
    a job ordering with it does not pay for scoring its head under them."""
    from nodes.ranking.ranker import uses_alt_bm25
    from stores.verifier_file import load_verifier_file
    from tuning.train_ranker import LEAKED

    raw = load_verifier_file()
    assert raw is not None, "stores/data/verifier.json is missing"
    shipped = Verifier.from_dict(raw)
    assert not set(shipped.features) & LEAKED and not uses_alt_bm25(shipped)
    leaky = Verifier("x", ("bm25_k2_b0.75_rrf", "s_rrf"), (0.0, 0.0), (1.0, 1.0), (1.0, 1.0), 0.0)
    assert uses_alt_bm25(leaky)
