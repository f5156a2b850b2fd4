"""The confidence of an extractive Exact Answer, and how any answer's confidence is stated.

The confidence is the probability that the Exact Answer is right: a logistic model over features of
the sentence it was read from (`FEATURES`), fitted on judged answers of the development half of
`evals/debian_docs/questions-*.jsonl` by `evals/debian_docs/fit_confidence.py`, whose parameters
and calibration error are kept in `answer_confidence.json` beside this module. No Exact Answer, no
confidence (None, "not estimated"). `stated_confidence` lives here too, free of heavy imports,
because the command line renders it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

PARAMETERS = Path(__file__).with_name("answer_confidence.json")
# Each in [0, 1]: the share of the question's words the sentence (with its heading and title)
# holds; the value was read in a recognised shape; the question names a product (and the
# document is that product's); the question names an identifier the sentence or heading holds;
# another document's sentence states the same value; 1/(document rank + 1); the kind of answer.
FEATURES = (
    "coverage",
    "shaped",
    "product_named",
    "identifier_matched",
    "agreement",
    "rank_prior",
    "kind_yes_no",
    "kind_comparison",
    "kind_name_option",
)


@lru_cache(maxsize=1)
def parameters() -> Mapping[str, Any]:
    """The fitted model: {"features", "weights", "bias", …}. An unreadable file reads as the
    prior bias alone (every answer at the same probability) rather than failing an answer."""
    try:
        return dict(json.loads(PARAMETERS.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {"features": list(FEATURES), "weights": [0.0] * len(FEATURES), "bias": 0.0}


def probability(features: Mapping[str, float], params: Mapping[str, Any] | None = None) -> float:
    """P(Exact Answer right) = sigmoid(bias + Σ weight·feature), in [0, 1]."""
    p = params if params is not None else parameters()
    z = float(p.get("bias", 0.0)) + sum(
        float(w) * float(features.get(name, 0.0)) for name, w in zip(p["features"], p["weights"], strict=True)
    )
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def confidence_percent(exact: str, features: Mapping[str, float] | None) -> int | None:
    """The confidence as answers carry it (whole percent), None exactly when there is no Exact Answer."""
    if not exact or features is None:
        return None
    return round(100 * probability(features))


def vector(features: Mapping[str, float], names: Sequence[str] = FEATURES) -> list[float]:
    """The features in the model's order (for fitting)."""
    return [float(features.get(n, 0.0)) for n in names]


def stated_confidence(answer: Mapping[str, Any]) -> str:
    """ "80%", or, for an answer that has none (no Exact Answer, or a model that stated none),
    "not estimated (extractive answer)" — never a made-up "0%" or "None%"."""
    confidence = answer.get("confidence", 0)
    if confidence is None:
        return f"not estimated ({answer.get('method') or 'no model'} answer)"
    return f"{confidence}%"
