"""BM25 tuning: the grid search on a tiny judged collection, the tie rule, the stored setting,
the length-based default, and `quarry tune` on the command line."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.runner import evaluate
from nodes.ranking.bm25_defaults import default_bm25_params
from quarry.cli import app
from stores.collection import Collection, ingest
from stores.errors import QuarryError
from stores.lucene import META_FILE, IndexMeta
from tests.fakes import filler, write_beir, write_jsonl
from tuning.grid import GridCell, apply_default_params, grid_search, load_tuned, pick_best, tuned_params

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
K1S, BS = (0.9, 3.0), (0.2, 1.0)  # the stored 0.9/0.4 is not in the grid: the stored setting must change


def length_sensitive_docs() -> list[dict]:
    """Short relevant records (the query word once) and long off-topic pages that repeat it:
    length normalisation decides who wins."""
    docs = []
    for word in ("zebra", "ocelot"):
        docs += [{"_id": f"{word}-short{i}", "title": f"Note {i}", "text": f"{word} {filler(i, 4)}"} for i in range(4)]
        docs += [
            {"_id": f"{word}-long{i}", "title": f"Page {i}", "text": f"{word} {filler(i, 150)} {word} {word}"}
            for i in range(4)
        ]
    return docs + [{"_id": f"other{i}", "title": f"Other {i}", "text": filler(i + 9, 30)} for i in range(6)]


def qrels_for(words: tuple[str, ...]) -> dict[str, list[tuple[str, str, int]]]:
    return {"test": [(f"q-{w}", f"{w}-short{i}", 1) for w in words for i in range(4)]}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    home = tmp_path_factory.mktemp("tune-home")
    src = write_beir(
        tmp_path_factory.mktemp("tune-src") / "beir",
        length_sensitive_docs(),
        queries={"q-zebra": "zebra", "q-ocelot": "ocelot"},
        qrels=qrels_for(("zebra", "ocelot")),
    )
    ingest(src, "tunable", home=home)
    return Collection("tunable", home=home)


def index_files(folder: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime, sha256) of every index file except the metadata."""
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != META_FILE
    }


# -- the choice rule (pure) -------------------------------------------------------------------------


def cell(k1: float, b: float, ndcg: float, map_: float) -> GridCell:
    return GridCell(k1, b, {"ndcg@20": ndcg, "map": map_})


@pytest.mark.parametrize(
    "cells, expected",
    [
        ([cell(0.9, 0.4, 0.40, 0.30), cell(2.0, 0.4, 0.50, 0.10)], (2.0, 0.4)),  # nDCG@20 first
        ([cell(0.9, 0.4, 0.50, 0.30), cell(2.0, 0.4, 0.50, 0.35)], (2.0, 0.4)),  # tie → MAP
        (
            [cell(3.0, 0.4, 0.50, 0.30), cell(1.2, 0.9, 0.50, 0.30), cell(2.0, 0.1, 0.50, 0.30)],
            (1.2, 0.9),
        ),  # → smaller k1
        ([cell(1.2, 0.9, 0.50, 0.30), cell(1.2, 0.3, 0.50, 0.30)], (1.2, 0.3)),  # → then smaller b
    ],
)
def test_pick_best(cells: list[GridCell], expected: tuple[float, float]) -> None:
    best = pick_best(cells)
    assert (best.k1, best.b) == expected


def test_pick_best_rejects_an_empty_grid() -> None:
    with pytest.raises(QuarryError) as err:
        pick_best([])
    assert err.value.code == "empty_grid"


# -- the length-based default -----------------------------------------------------------------------


def test_default_params_are_monotone_in_length() -> None:
    lengths = [1, 10, 30, 50, 55, 80, 120, 200, 300, 500, 800, 1500, 3000, 5000, 8000, 100_000]
    params = [default_bm25_params(n) for n in lengths]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in pairwise(params))
    assert params[0] == (2.0, 0.4) and params[-1] == (20.0, 1.0)  # short records / long documents (DESIGN)
    assert params[0][0] < default_bm25_params(500)[0] < params[-1][0]  # smooth in between, not a step
    assert all(0.0 <= b <= 1.0 and k1 > 0 for k1, b in params)


# -- the grid search on a real index ----------------------------------------------------------------


def test_grid_search_picks_stores_and_plots(judged: Collection) -> None:
    before = index_files(judged.paths.lucene_dir)
    assert (judged.lucene.meta.k1, judged.lucene.meta.b) == (0.9, 0.4)
    with pytest.raises(QuarryError) as err:
        tuned_params(judged)
    assert err.value.code == "not_tuned" and "quarry tune tunable" in err.value.hint
    seen: list[tuple[int, int]] = []

    result = grid_search(judged, "test", K1S, BS, progress=lambda stage, n, total: seen.append((n, total)))

    assert len(result.cells) == 4 and {(c.k1, c.b) for c in result.cells} == {(k, b) for k in K1S for b in BS}
    assert result.best == pick_best(result.cells)
    assert all(result.best.metrics["ndcg@20"] >= c.metrics["ndcg@20"] for c in result.cells)
    assert result.best.b == 1.0  # length normalisation puts the short relevant records first
    assert (result.baseline.k1, result.baseline.b) == (0.9, 0.4) and result.queries == 2
    assert seen[-1] == (5, 5)  # four grid cells plus the stored setting

    meta = IndexMeta.load(judged.paths.lucene_dir)
    assert (meta.k1, meta.b) == (result.best.k1, result.best.b)
    assert index_files(judged.paths.lucene_dir) == before  # only the metadata was rewritten
    assert tuned_params(judged) == (result.best.k1, result.best.b)
    assert load_tuned(judged)["source"] == "grid"

    assert result.heatmap == judged.paths.runs_dir / "bm25-grid-test.png"
    assert result.heatmap.read_bytes()[:8] == PNG_MAGIC
    grid = json.loads(result.grid_file.read_text())
    assert len(grid["cells"]) == 4 and grid["best"]["k1"] == result.best.k1

    # The tuned system never reuses the stored (fitted) setting: it cross-validates.
    tuned = evaluate(judged, "bm25-tuned")
    assert "cross-validation" in tuned.extras["tuning"]
    assert sum(f["test_queries"] for f in tuned.extras["fold_params"]) == tuned.queries
    # Plain bm25 is Anserini's defaults, whatever the index stores.
    assert (evaluate(judged, "bm25").extras["k1"], evaluate(judged, "bm25").extras["b"]) == (0.9, 0.4)


def test_bm25_tuned_refuses_explicit_parameters(judged: Collection) -> None:
    with pytest.raises(QuarryError) as err:
        evaluate(judged, "bm25-tuned", k1=1.0)
    assert err.value.code == "bad_option"


def test_dense_without_an_index_is_a_clear_error(judged: Collection) -> None:
    with pytest.raises(QuarryError) as err:
        evaluate(judged, "dense")
    assert err.value.hint


# -- no judgements: the default, on the command line -----------------------------------------------


def test_tune_without_qrels_stores_the_length_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "home"))  # the CLI's --home exports it; undo after
    src = write_jsonl(
        tmp_path / "long.jsonl", [{"_id": f"d{i}", "title": f"Doc {i}", "text": filler(i, 600)} for i in range(5)]
    )
    ingest(src, "unjudged", home=tmp_path / "home")
    shown = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "tune", "unjudged", "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout.strip().splitlines()[-1])["applied"] is False
    col = Collection("unjudged", home=tmp_path / "home")
    assert (IndexMeta.load(col.paths.lucene_dir).k1, IndexMeta.load(col.paths.lucene_dir).b) == (0.9, 0.4), (
        "without --apply nothing is stored"
    )
    result = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "tune", "unjudged", "--json", "--apply"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    expected = default_bm25_params(data["avg_doc_tokens"])
    assert data["source"] == "default" and (data["best"]["k1"], data["best"]["b"]) == expected and data["applied"]
    assert 600 <= data["avg_doc_tokens"] <= 604  # filler words + the two title words
    col = Collection("unjudged", home=tmp_path / "home")
    assert (IndexMeta.load(col.paths.lucene_dir).k1, IndexMeta.load(col.paths.lucene_dir).b) == expected
    text = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "tune", "unjudged"])
    assert "no relevance judgements" in text.stdout and "default" in text.stdout
    assert apply_default_params(col).k1 == expected[0]  # idempotent


# -- cross-validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("n, k", [(52, 5), (7, 5), (3, 5), (10, 2)])
def test_folds_partition_the_queries(n: int, k: int) -> None:
    from evals.cv import make_folds

    qids = [f"q{i}" for i in range(n)]
    folds = make_folds(qids, k)
    tests = [set(f.test) for f in folds]
    assert sorted(q for t in tests for q in t) == sorted(qids), "every query is tested exactly once"
    for fold in folds:
        assert not set(fold.train) & set(fold.test), "no query in both train and test"
        assert set(fold.train) | set(fold.test) == set(qids)
    assert max(map(len, tests)) - min(map(len, tests)) <= 1
    assert make_folds(list(reversed(qids)), k) == folds, "deterministic, whatever the input order"


def test_each_fold_uses_the_setting_best_on_the_other_folds() -> None:
    """A ranker where (k1, b) = (1, 0) is perfect for even queries and (2, 0) for odd ones: every
    query must be scored with the setting its own fold's training queries preferred."""
    from evals.cv import cross_validate

    qids = [f"q{i}" for i in range(10)]
    qrels = {q: {f"rel-{q}": 1} for q in qids}
    texts = {q: q for q in qids}
    good = {q: (1.0 if int(q[1:]) % 2 == 0 else 2.0) for q in qids}
    calls: list[tuple[str, float]] = []

    def rank(text: str, k1: float, b: float) -> dict[str, float]:
        calls.append((text, k1))
        return {f"rel-{text}": 1.0} if k1 == good[text] else {"junk": 1.0}

    run, folds = cross_validate(qids, texts, qrels, rank, k=5, grid=((1.0, 2.0), (0.0,)))
    for fold in folds:
        evens = sum(1 for q in fold.train if good[q] == 1.0)
        expected = 1.0 if evens >= len(fold.train) - evens else 2.0  # ties go to the smaller k1
        assert fold.k1 == expected
        for q in fold.test:
            assert run[q] == ({f"rel-{q}": 1.0} if good[q] == expected else {"junk": 1.0})
