"""Grading answers without a model (evals.answer_match) and reference answers' aliases in answers.jsonl."""

from __future__ import annotations

import pytest

from evals.answer_match import (
    exact_match,
    expected_calibration_error,
    grade_answer,
    match_metrics,
    normalize_answer,
    reliability,
    text_recall,
    token_f1,
)


@pytest.mark.parametrize(
    ("prediction", "forms", "em", "f1"),
    [
        ("5min", ["5min", "5 minutes"], True, 1.0),
        ("The default is 5 minutes.", ["5 minutes"], False, 0.6667),
        ("5 Minutes", ["5min", "five minutes", "5 minutes"], True, 1.0),
        ("PRAGMA busy_timeout", ["busy_timeout", "PRAGMA busy_timeout"], True, 1.0),
        ("", ["yes"], False, 0.0),
        ("no", ["yes"], False, 0.0),
        ("an index", ["index"], True, 1.0),
    ],
)
def test_exact_match_and_f1_use_squad_normalisation(prediction, forms, em, f1) -> None:
    assert exact_match(prediction, forms) is em
    assert token_f1(prediction, forms) == pytest.approx(f1, abs=1e-4)


def test_normalisation_drops_case_punctuation_articles_and_spaces() -> None:
    assert normalize_answer("  The  `PRAGMA`, a Timeout! ") == "pragma timeout"


def test_text_recall_needs_whole_words() -> None:
    assert text_recall("The default is 60 seconds [doc].", ["60 seconds"])
    assert not text_recall("The default is 600 seconds.", ["60 seconds"])
    assert not text_recall("anything", [""])


def test_confidence_is_counted_only_with_an_exact_answer() -> None:
    with_value = grade_answer("q1", {"explanation": "x", "exact_answer": "8", "confidence": 80}, ["8"])
    without = grade_answer("q2", {"explanation": "The default is 8.", "exact_answer": "", "confidence": 40}, ["8"])
    assert with_value.exact and with_value.confidence == 0.8
    assert not without.exact and without.recall and without.confidence is None
    metrics = match_metrics([with_value, without])
    assert metrics["exact_match"] == 0.5 and metrics["answer_recall"] == 1.0
    assert metrics["with_confidence"] == 1 and metrics["confidence_ece"] == pytest.approx(0.2)


def test_expected_calibration_error_by_bins() -> None:
    pairs = [(0.95, True), (0.95, False), (1.0, True), (0.15, False)]
    bins = reliability(pairs)
    assert [n for _, _, n in bins] == [1, 3]
    want = 0.25 * 0.15 + 0.75 * abs(2 / 3 - (0.95 + 0.95 + 1.0) / 3)
    assert expected_calibration_error(pairs) == pytest.approx(want, abs=1e-4)
    assert expected_calibration_error([]) == 0.0


def test_aliases_are_read_stored_and_checked(tmp_path, quarry_home) -> None:
    from stores.collection import Collection, ingest
    from stores.errors import IngestError
    from tests.fakes import search_docs, write_beir

    folder = write_beir(tmp_path / "beir", search_docs(), queries={"q1": "a question", "q2": "another"})
    (folder / "answers.jsonl").write_text(
        '{"_id": "q1", "answer": "5min", "aliases": ["5 minutes", "five minutes"]}\n{"_id": "q2", "answer": "yes"}\n'
    )
    ingest(folder, "aliased", home=quarry_home)
    corpus = Collection("aliased", home=quarry_home).corpus
    assert corpus.answers() == {"q1": "5min", "q2": "yes"}
    assert corpus.answer_aliases() == {"q1": ["5 minutes", "five minutes"]}
    (folder / "answers.jsonl").write_text('{"_id": "q1", "answer": "5min", "aliases": "5 minutes"}\n')
    with pytest.raises(IngestError) as err:
        ingest(folder, "aliased2", home=quarry_home)
    assert '"aliases" must be a list of non-empty strings' in str(err.value)
