"""Opening a collection by name and checking the BM25 parameters a request gives, as every front
door does."""

from __future__ import annotations

import math
from typing import Any

from stores.errors import QuarryError


def open_collection(name: str) -> Any:
    from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up

    return Collection(name)


def check_bm25(k1: float | None, b: float | None) -> None:
    """BM25 parameters as numbers Lucene can use: typer lets NaN (no `min=` on search and eval) and
    Infinity through, and either makes every score NaN or infinite (and `index` would store it)."""
    if k1 is not None and not (math.isfinite(k1) and 0 <= k1 <= 1000):
        raise QuarryError(
            "bad_option", f"--k1 {k1} is not usable", "give a k1 from 0 to 1000 (0.9 is Anserini's default)"
        )
    if b is not None and not (math.isfinite(b) and 0 <= b <= 1):
        raise QuarryError("bad_option", f"--b {b} is not usable", "give a b from 0 to 1 (0.4 is Anserini's default)")
