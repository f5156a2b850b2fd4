"""The semantic channel without a dense index: MiniLM scores only the lexical channel's candidates.

A collection of 100k long documents is ~5M chunks, days of embedding on two cores; a job needs
the semantic view of the documents it might return, not of the whole collection. So, as in a
filtered hybrid search, the semantic ranking of a query is the BM25 top `candidates` for the same
words, re-ordered by best-chunk cosine similarity — the dense index's document score — over a few
chunks of each: the first (title and opening) and those sharing the most query words. The store
(`stores.chunk_vectors`) embeds those chunks on first use and caches them per collection version.

The ranking is shallower than a dense index's (`candidates` documents, never one that BM25 did not
find), and the search tool says so on its first page (`note`), as does the job's list of searches.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from nodes.scoring import stems
from stores.records import Chunk


class LexicalRanking(Protocol):
    def ranking(self, text: str, k: int = ...) -> tuple[Sequence[str], Sequence[float]]: ...


class ChunkSource(Protocol):
    def chunks_many(self, docids: Iterable[str]) -> dict[str, list[Chunk]]: ...


class ChunkScorer(Protocol):
    def best_chunk_scores(self, text: str, chunks: Mapping[str, Iterable[int]]) -> dict[str, float]: ...


def filtered_note(candidates: int) -> str:
    return (f"semantic ranking filtered to lexical candidates: MiniLM re-scored the top {candidates} BM25 hits "
            "(no dense index; build one with quarry index NAME --dense)")


def stem_pattern(wanted: set[str]) -> re.Pattern[str] | None:
    """One regex finding words that start with a query stem (nodes.scoring.stem), case-folded:
    a scan of a hundred long documents' chunks takes milliseconds, stemming each word ~0.5 s."""
    if not wanted:
        return None
    return re.compile(r"\b(" + "|".join(sorted(map(re.escape, wanted), key=lambda w: (-len(w), w))) + ")",
                      re.IGNORECASE)


def pick_chunks(chunks: Sequence[Chunk], wanted: set[str], limit: int) -> list[int]:
    """Chunk numbers to score: the first chunk, then those sharing the most query stems (earlier
    first on ties), `limit` in all, in document order."""
    if not chunks or limit < 1:
        return []
    pattern = stem_pattern(wanted)
    first, rest = chunks[0], chunks[1:]

    def overlap(chunk: Chunk) -> int:
        return len({m.lower() for m in pattern.findall(chunk.text)}) if pattern else 0

    best = sorted(rest, key=lambda c: (-overlap(c), c.chunk_no))
    return sorted([first.chunk_no, *(c.chunk_no for c in best[:limit - 1])])


class FilteredSemantic:
    """A semantic `ranking(text, k)` over the lexical channel's top `candidates` (a tools.Searcher)."""

    def __init__(self, lexical: LexicalRanking, corpus: ChunkSource, vectors: ChunkScorer, *,
                 candidates: int, chunks_per_doc: int) -> None:
        self.lexical, self.corpus, self.vectors = lexical, corpus, vectors
        self.candidates, self.chunks_per_doc = int(candidates), int(chunks_per_doc)

    @property
    def note(self) -> str:
        """Shown with every page of this channel's rankings."""
        return filtered_note(self.candidates)

    def ranking(self, text: str, k: int = 1000) -> tuple[tuple[str, ...], tuple[float, ...]]:
        docids, _ = self.lexical.ranking(text, k=self.candidates)
        if not docids:
            return (), ()
        chunks = self.corpus.chunks_many(docids)
        wanted = stems(text)
        chosen = {d: pick_chunks(chunks[d], wanted, self.chunks_per_doc) for d in docids if d in chunks}
        scores = self.vectors.best_chunk_scores(text, chosen)
        ranked = sorted(((d, s) for d, s in scores.items() if d in chosen), key=lambda p: (-p[1], p[0]))[:int(k)]
        return tuple(d for d, _ in ranked), tuple(s for _, s in ranked)
