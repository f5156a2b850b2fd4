"""The Debian documentation set's before/after comparison pairs rows by id and refuses mixed splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.debian_docs.compare import main
from evals.debian_docs.evaluate import load


def report(tmp_path: Path, name: str, split: str, right: int) -> Path:
    questions = load("questions", split)[:4]
    per_question = {
        q["_id"]: {
            "exact": n < right,
            "f1": 1.0 if n < right else 0.0,
            "exact_answer": "x" if n < right else "",
            "cited": [f"{q['product']}/page"],
        }
        for n, q in enumerate(questions)
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"split": split, "per_question": per_question, "per_intent": {}}))
    return path


def test_the_comparison_pairs_questions_and_reports_both_means(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(report(tmp_path, "before", "dev", 1)), str(report(tmp_path, "after", "dev", 3))]) == 0
    out = capsys.readouterr().out
    assert "Exact Answer exact match: n=4 before 0.250 after 0.750 diff +0.500" in out
    assert "answers citing only the question's product: n=4 before 1.000 after 1.000" in out
    assert "list nDCG@20: fewer than two rows in common" in out


def test_reports_of_different_splits_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(report(tmp_path, "before", "dev", 1)), str(report(tmp_path, "after", "test", 1))]) == 2
    assert "different splits" in capsys.readouterr().err
