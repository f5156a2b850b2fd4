"""A Lucene index searched at one BM25 setting: the collection's self-tuned k1/b for one job.

The index takes k1/b per call (one cached searcher per setting, stores.lucene); the tools and the
filtered semantic channel only know the `Searcher` protocol (`ranking(text, k)`), so a job whose
profile chose its own k1/b hands them this view instead of the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodes.job.config import TOOL_LIMITS


@dataclass(frozen=True, slots=True)
class FixedBM25:
    index: Any  # stores.lucene.LuceneIndex (typed loosely: nodes see stores through the runtime)
    k1: float
    b: float

    def ranking(self, text: str, k: int = TOOL_LIMITS.depth) -> tuple[Sequence[str], Sequence[float]]:
        return self.index.ranking(text, k, k1=self.k1, b=self.b)

    def search(self, text: str, k: int = TOOL_LIMITS.depth) -> list[Any]:
        return self.index.search(text, k, k1=self.k1, b=self.b)


__all__ = ["FixedBM25"]
