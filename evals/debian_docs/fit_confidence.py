"""Fit the extractive answer's confidence on judged answers of the development half.

    python -m evals.debian_docs.evaluate /tmp/dd --split dev --out dev.json
    python -m evals.debian_docs.fit_confidence dev.json            # writes nodes/evidence/answer_confidence.json

Every dev question whose answer has an Exact Answer gives one example: the features the answer
carried (`answer.confidence_features`, nodes.evidence.answer_confidence.FEATURES) and whether the
Exact Answer matched the reference (SQuAD-style exact match, evals.answer_match). A logistic
regression (scikit-learn, L2, C=1: a few dozen examples, nine features — strong shrinkage keeps
the probabilities near the base rate where the features say little) is fitted on all of them;
its calibration error is estimated by 5-fold cross-validation on the same examples, so the figure
written beside the parameters is not the fit's own training error. The test half is never read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from evals.answer_match import expected_calibration_error
from nodes.evidence.answer_confidence import FEATURES, PARAMETERS, vector
from stores.atomic import write_atomic

FOLDS = 5
REGULARISATION = 1.0  # scikit-learn's C


def examples(report: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(features, right) of the answers with an Exact Answer in an evaluate.py report."""
    rows = [r for r in report["per_question"].values() if r.get("exact_answer") and r.get("features")]
    x = np.array([vector(r["features"]) for r in rows], dtype=float).reshape(len(rows), len(FEATURES))
    return x, np.array([bool(r["exact"]) for r in rows])


def cross_validated_ece(x: np.ndarray, y: np.ndarray) -> float | None:
    """ECE of out-of-fold probabilities (None when a class has fewer examples than folds)."""
    folds = min(FOLDS, int(y.sum()), int((~y).sum()))
    if folds < 2:
        return None
    probs = np.zeros(len(y))
    for train, held in StratifiedKFold(folds, shuffle=True, random_state=0).split(x, y):
        model = LogisticRegression(C=REGULARISATION).fit(x[train], y[train])
        probs[held] = model.predict_proba(x[held])[:, 1]
    return expected_calibration_error([(float(p), bool(t)) for p, t in zip(probs, y, strict=True)])


def fit(report: dict[str, Any]) -> dict[str, Any]:
    """The parameters answer_confidence reads, with how they were obtained."""
    if report.get("split") != "dev":
        raise SystemExit("fit on the dev split only: the test half reports the rules chosen on dev")
    x, y = examples(report)
    if len(set(y.tolist())) < 2:
        raise SystemExit(
            f"{len(y)} answers with an Exact Answer, all {'right' if y.all() else 'wrong'}: nothing to fit"
        )
    model = LogisticRegression(C=REGULARISATION).fit(x, y)
    return {
        "features": list(FEATURES),
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "bias": round(float(model.intercept_[0]), 6),
        "fitted_on": {"split": "dev", "answers": len(y), "right": int(y.sum())},
        "cross_validated_ece": cross_validated_ece(x, y),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="evaluate.py --split dev --out FILE")
    parser.add_argument("--out", type=Path, default=PARAMETERS)
    args = parser.parse_args(argv)
    params = fit(json.loads(args.report.read_text(encoding="utf-8")))
    write_atomic(args.out, json.dumps(params, indent=1) + "\n")
    print(json.dumps(params, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
