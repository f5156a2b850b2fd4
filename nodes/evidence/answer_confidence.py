"""How an answer's confidence is stated, the same at every front door (terminal, exports, the
answer grader). Its own module, free of heavy imports, because the command line renders it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def stated_confidence(answer: Mapping[str, Any]) -> str:
    """ "80%", or, for an answer that has none (the extractive answer written without a model),
    "not estimated (extractive answer)" — never a made-up "0%" or "None%"."""
    confidence = answer.get("confidence", 0)
    if confidence is None:
        return f"not estimated ({answer.get('method') or 'no model'} answer)"
    return f"{confidence}%"
