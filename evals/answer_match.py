"""Grading answers without a model: the Exact Answer against the reference answers, SQuAD-style.

A job's Exact Answer is compared with the reference answer and its aliases (answers.jsonl's
"answer" and "aliases") after SQuAD's normalisation — lower case, punctuation, the articles a/an/the
and extra whitespace removed: **exact match** (equal to one form) and **token F1** (the best over the
forms). **Answer-text recall** asks whether the answer as a whole — explanation and Exact Answer —
holds a form at all, so an answer that quotes the right sentence without reading the value off it
still counts there. **Calibration**: the expected calibration error of the job's stated confidence
(the probability that its Exact Answer is right) against exact match, over the answers that state
one; an answer without an Exact Answer states no confidence and is left out of it.

SQuAD's normalisation is written here (a dozen lines, as in the SQuAD v1.1 evaluation script)
rather than taken from a package: the `evaluate` library would pull in datasets and a hub download.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BINS = 10
# The eval table's columns from `match_metrics`, and what each means (evals.report prints these).
MATCH_COLUMNS = {
    "exact_match": "share of answers whose Exact Answer equals the reference or an alias (SQuAD normalisation)",
    "answer_f1": "mean token F1 of the Exact Answer against the reference forms (best form)",
    "answer_recall": "share of answers whose text (explanation or Exact Answer) holds a reference form",
    "exact_answered": "share of answers with an Exact Answer at all",
    "confidence_ece": "expected calibration error of the stated confidence against exact match (10 bins)",
    "with_confidence": "answers that state a confidence",
    "answers_graded": "answers graded against answers.jsonl without a model",
}
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, forms: Iterable[str]) -> bool:
    """Whether the normalised prediction equals one normalised form (an empty prediction never does)."""
    pred = normalize_answer(prediction)
    return bool(pred) and any(pred == normalize_answer(f) for f in forms)


def token_f1(prediction: str, forms: Iterable[str]) -> float:
    """The best token F1 of the prediction against the forms (0 for an empty prediction)."""
    pred = normalize_answer(prediction).split()
    best = 0.0
    for form in forms:
        gold = normalize_answer(form).split()
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            precision, recall = common / len(pred), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def text_recall(text: str, forms: Iterable[str]) -> bool:
    """Whether the normalised text holds one normalised form as whole words."""
    padded = f" {normalize_answer(text)} "
    return any(f" {n} " in padded for n in map(normalize_answer, forms) if n)


@dataclass(frozen=True)
class MatchGrade:
    """One answer graded against its reference forms; `confidence` is 0–1, None when not stated."""

    qid: str
    exact_answer: str
    exact: bool
    f1: float
    recall: bool
    confidence: float | None


def grade_answer(qid: str, answer: Mapping[str, Any] | str | None, forms: Sequence[str]) -> MatchGrade:
    """Grade a job's answer (its result's `answer`: explanation, exact_answer, confidence in %)."""
    if not isinstance(answer, Mapping):
        answer = {"explanation": answer or ""}
    exact = str(answer.get("exact_answer") or "").strip()
    confidence = answer.get("confidence")
    return MatchGrade(
        qid=qid,
        exact_answer=exact,
        exact=exact_match(exact, forms),
        f1=round(token_f1(exact, forms), 4),
        recall=text_recall(f"{answer.get('explanation') or ''}\n{exact}", forms),
        confidence=None if confidence is None or not exact else float(confidence) / 100.0,
    )


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> list[tuple[float, float, int]]:
    """Per non-empty bin of equal width: (mean confidence, accuracy, count)."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(c, ok) for c, ok in pairs if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if members:
            out.append(
                (sum(c for c, _ in members) / len(members), sum(ok for _, ok in members) / len(members), len(members))
            )
    return out


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> float:
    """ECE: |accuracy − mean confidence| per equal-width bin, weighted by the bin's share (0 = calibrated)."""
    if not pairs:
        return 0.0
    return round(sum(n / len(pairs) * abs(acc - conf) for conf, acc, n in reliability(pairs, bins)), 4)


def confidence_pairs(grades: Iterable[MatchGrade]) -> list[tuple[float, bool]]:
    """(stated confidence, exact match) of the answers that state a confidence."""
    return [(g.confidence, g.exact) for g in grades if g.confidence is not None]


def match_metrics(grades: Sequence[MatchGrade]) -> dict[str, float | int]:
    """Exact match, token F1 and answer-text recall over all graded answers; the share with an Exact
    Answer; the ECE of the stated confidences and how many stated one."""
    if not grades:
        return {}
    n = len(grades)
    pairs = confidence_pairs(grades)
    return {
        "exact_match": round(sum(g.exact for g in grades) / n, 4),
        "answer_f1": round(sum(g.f1 for g in grades) / n, 4),
        "answer_recall": round(sum(g.recall for g in grades) / n, 4),
        "exact_answered": round(sum(bool(g.exact_answer) for g in grades) / n, 4),
        "confidence_ece": expected_calibration_error(pairs),
        "with_confidence": len(pairs),
        "answers_graded": n,
    }
