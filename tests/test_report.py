"""Evaluation reports: recall at depth on hand-computed runs, Reciprocal Rank Fusion, the
hybrid system, agent trajectory tiers, and `quarry eval --system a,b --report DIR`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.agent_system import trajectory_tiers
from evals.report import agent_differences, recall_at_depths, write_report
from evals.runner import EvalResult, evaluate, parse_systems
from nodes.ranking.fusion import reciprocal_rank_fusion, rrf_score
from nodes.rounds import retrieval
from quarry.cli import app
from stores.collection import Collection, ingest
from stores.errors import QuarryError
from stores.lucene import Hit
from tests.fakes import filler, write_beir
from tuning.grid import grid_search
from tuning.metrics import per_query

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# -- recall at depth (hand-computed) -----------------------------------------------------------------


def ranked(*docids: str) -> dict[str, float]:
    return {d: float(1000 - i) for i, d in enumerate(docids)}


def test_recall_at_depths_hand_computed() -> None:
    qrels = {
        "q1": {"a": 1, "b": 1, "c": 1, "d": 1},  # found at ranks 1, 15 and 60; d never
        "q2": {"x": 2, "y": 0},  # its one relevant doc at rank 5
        "q3": {"z": 0},  # nothing relevant: not counted
        "q4": {"w": 1},
    }  # absent from the run: recall 0 at every depth
    pad = [f"n{i}" for i in range(100)]
    run = {"q1": ranked("a", *pad[:13], "b", *pad[13:57], "c"), "q2": ranked(*pad[:4], "x"), "q3": ranked("z")}
    got = recall_at_depths(qrels, run, (1, 10, 20, 50, 100))
    # q1: 1/4 at depths 1 and 10, 2/4 at 20 and 50, 3/4 at 100; q2: 0 at depth 1, then 1
    expected = {1: (0.25 + 0 + 0) / 3, 10: (0.25 + 1) / 3, 20: (0.5 + 1) / 3, 50: (0.5 + 1) / 3, 100: (0.75 + 1) / 3}
    assert got == pytest.approx(expected)


# -- fusion --------------------------------------------------------------------------------------------


def test_reciprocal_rank_fusion_hand_computed() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert [d for d, _ in fused] == ["b", "a", "d", "c"]
    assert dict(fused) == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})
    weighted = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], weights=[2, 1])
    assert [d for d, _ in weighted] == ["b", "a", "c", "d"]  # 2/61 > 2/63 > 1/62
    assert reciprocal_rank_fusion([["y"], ["x"]]) == [("x", 1 / 61), ("y", 1 / 61)]  # tie → docid
    assert reciprocal_rank_fusion([["a", "a", "b"]]) == [("a", 1 / 61), ("b", 1 / 63)]  # repeat counts once
    assert reciprocal_rank_fusion([]) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], weights=[1, 2])


def test_one_rrf_rule_for_the_agent_and_the_evaluation() -> None:
    assert retrieval.rrf_score is rrf_score  # the retrieval node pools with the same function
    ranks, weights = {"s1": 3, "s2": 10}, {"s1": 2.0}
    assert rrf_score(ranks, weights) == pytest.approx(2 / 63 + 1 / 70)
    fused = dict(reciprocal_rank_fusion([["x", "y", "d"], [f"n{i}" for i in range(9)] + ["d"]], weights=[2, 1]))
    assert fused["d"] == pytest.approx(rrf_score({"0": 3, "1": 10}, {"0": 2.0}))


# -- agent extras ------------------------------------------------------------------------------------


def test_trajectory_tiers() -> None:
    qrels = {"q1": {"a": 1, "b": 1, "c": 1, "d": 1, "x": 0}, "q2": {"e": 0}}
    traj = {
        "q1": {"surfaced": ["a", "b", "c", "x"], "previewed": ["a", "b", "x"], "opened": ["a"], "cited": ["a", "x"]},
        "q2": {"surfaced": ["e"], "previewed": [], "opened": [], "cited": []},
    }
    assert trajectory_tiers(qrels, traj) == {"q1": {"surfaced": 0.75, "previewed": 0.5, "opened": 0.25, "cited": 0.25}}


def test_parse_systems() -> None:
    assert parse_systems(None) == ["bm25"]
    assert parse_systems(["bm25,dense", "hybrid", "bm25", " agent "]) == ["bm25", "dense", "hybrid", "agent"]
    with pytest.raises(QuarryError) as err:
        parse_systems("bm25,bm99")
    assert err.value.code == "bad_system"


# -- a real collection: hybrid with a stand-in dense index, the report ---------------------------------


class WordOverlapDense:
    """Stand-in for stores.dense.DenseIndex: scores documents by shared words with the query."""

    def __init__(self, col: Collection) -> None:
        self.docs = {r.docid: set(r.index_contents().lower().split()) for r in col.corpus.iter_records()}

    def search(self, text: str, k: int = 1000) -> list[Hit]:
        words = set(text.lower().split())
        scored = sorted(
            ((d, len(words & w) / len(w)) for d, w in self.docs.items() if words & w), key=lambda p: (-p[1], p[0])
        )[:k]
        return [Hit(d, s, i) for i, (d, s) in enumerate(scored, start=1)]


class WithDense(Collection):
    dense = property(lambda self: WordOverlapDense(self))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("report-home")
    docs = [
        {"_id": f"z{i}", "title": f"Zebra note {i}", "text": f"zebra {filler(i, 3 + 40 * (i % 2))}"} for i in range(6)
    ]
    docs += [{"_id": f"o{i}", "title": f"Ocelot note {i}", "text": f"ocelot stripes {filler(i, 10)}"} for i in range(6)]
    src = write_beir(
        tmp_path_factory.mktemp("report-src") / "beir",
        docs,
        queries={"q1": "zebra stripes", "q2": "ocelot"},
        qrels={"test": [("q1", "z0", 1), ("q1", "z2", 1), ("q1", "o5", 1), ("q2", "o1", 1)]},
    )
    ingest(src, "rep", home=home)
    return home


def test_hybrid_is_rrf_of_bm25_and_dense(home: Path) -> None:
    col = WithDense("rep", home=home)
    hybrid = evaluate(col, "hybrid")
    bm25 = [h.docid for h in col.lucene.search("zebra stripes", 1000)]
    dense = [h.docid for h in col.dense.search("zebra stripes", 1000)]
    assert hybrid.run["q1"] == pytest.approx(dict(reciprocal_rank_fusion([bm25, dense])))
    assert evaluate(col, "dense").run["q1"] == pytest.approx(
        {h.docid: h.score for h in col.dense.search("zebra stripes")}
    )


def test_report_has_table_and_plots(home: Path, tmp_path: Path) -> None:
    col = WithDense("rep", home=home)
    grid_search(col, "test", (0.9, 2.0), (0.4, 1.0), store=False)
    results = [evaluate(col, "bm25"), evaluate(col, "hybrid")]
    # an "agent" whose run is the hybrid run reversed
    reversed_run = {q: {d: float(i) for i, d in enumerate(sorted(r, key=r.get))} for q, r in results[1].run.items()}
    qrels = col.corpus.qrels("test")
    agent = EvalResult(
        "rep",
        "agent",
        "test",
        2,
        results[0].metrics,
        per_query(qrels, reversed_run),
        tmp_path / "agent.trec",
        {"tier_surfaced": 1.0, "tool_calls_per_query": 4.0},
        reversed_run,
    )
    best, diffs = agent_differences([*results, agent])
    assert best in ("bm25", "hybrid") and set(diffs) == {"q1", "q2"}

    path = write_report(tmp_path / "out", col, [*results, agent])
    text = path.read_text()
    assert "| system | ndcg@10 | ndcg@20 |" in text and "tier_surfaced" in text
    for system in ("bm25", "hybrid", "agent"):
        assert f"| {system} |" in text
    for png in ("recall-depth.png", "bm25-grid-test.png", "agent-vs-baseline.png"):
        assert f"]({png})" in text
        assert (tmp_path / "out" / png).read_bytes()[:8] == PNG_MAGIC


def test_cli_eval_several_systems_with_report(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_HOME", str(home))  # the CLI's --home exports it; undo after
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(home),
            "eval",
            "rep",
            "--system",
            "bm25",
            "--system",
            "bm25",
            "--report",
            str(tmp_path / "rep"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    single = json.loads(result.stdout.strip().splitlines()[-1])
    assert single["system"] == "bm25" and "ndcg@20" in single and single["report"].endswith("report.md")

    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(home),
            "eval",
            "rep",
            "--system",
            "bm25,bm25-tuned",
            "--report",
            str(tmp_path / "rep2"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(data["systems"]) == {"bm25", "bm25-tuned"}
    assert "cross-validation" in data["systems"]["bm25-tuned"]["tuning"]
    report = (tmp_path / "rep2" / "report.md").read_text()
    assert "| bm25-tuned |" in report and "## How bm25-tuned was tuned" in report
    assert "## Reproduce" in report and Collection("rep", home=home).corpus.fingerprint in report
    assert "quarry eval rep --system bm25,bm25-tuned" in report and "## Columns" in report

    text = CliRunner().invoke(app, ["--home", str(home), "eval", "rep", "--system", "bm25,bm25-tuned"])
    assert text.exit_code == 0 and "bm25-tuned" in text.stdout
    bad = CliRunner().invoke(
        app, ["--home", str(home), "eval", "rep", "--system", "bm25,hybrid", "--run", str(tmp_path / "x.trec")]
    )
    assert bad.exit_code == 2 and "(bad_option)" in bad.stderr


def test_paired_significance_and_confidence_interval() -> None:
    from tuning.significance import compare

    base = {f"q{i}": {"ndcg@20": 0.2 + 0.01 * i} for i in range(30)}
    better = {q: {"ndcg@20": v["ndcg@20"] + 0.1 + (0.02 if i % 2 else -0.02)} for i, (q, v) in enumerate(base.items())}
    c = compare("agent", better, "hybrid", base, "ndcg@20")
    assert c.diff == pytest.approx(0.1) and c.p_value < 0.001 and c.significant
    assert c.ci_low < 0.1 < c.ci_high and c.ci_high - c.ci_low < 0.02
    same = compare("twin", base, "hybrid", base, "ndcg@20")
    assert same.diff == 0.0 and same.p_value == 1.0 and not same.significant
    noisy = {q: {"ndcg@20": v["ndcg@20"] + (0.05 if i % 2 else -0.05)} for i, (q, v) in enumerate(base.items())}
    assert compare("coin", noisy, "hybrid", base, "ndcg@20").p_value > 0.5
    assert compare("one", {"q0": {"ndcg@20": 1.0}}, "hybrid", base, "ndcg@20") is None
