"""The semantic channel without a dense index: MiniLM scores only the lexical channel's candidates.

A collection of 100k long documents is ~5M chunks, days of embedding on two cores; a job needs
the semantic view of the documents it might return, not of the whole collection. So, as in a
filtered hybrid search, the semantic ranking of a query is the BM25 top `candidates` for the same
words, re-ordered by best-chunk cosine similarity — the dense index's document score — over a few
chunks of each: the first (title and opening) and those sharing the most query words. The store
(`stores.chunk_vectors`) embeds those chunks on first use and caches them per collection version.

The ranking is shallower than a dense index's (`candidates` documents, never one that BM25 did not
find), and the search tool says so on its first page (`note`), as does the job's list of searches.

Embedding a hundred long documents' chunks takes a minute on two cores, so it runs in batches
(`JobConfig.semantic_batch`) under the node's step control (nodes.job.step_control): a stop, the
budget steer, the job's deadline or a cancellation ends it between batches, the documents with a
vector are ranked and the note says the ranking is partial; every embedded batch stays cached.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Protocol

from nodes.evidence.sentences import stems
from nodes.job.config import TOOL_LIMITS, JobConfig
from nodes.job.step_control import current_step, reason_text
from stores.records import Chunk


class LexicalRanking(Protocol):
    def ranking(self, text: str, k: int = ...) -> tuple[Sequence[str], Sequence[float]]: ...


class ChunkSource(Protocol):
    def chunks_many(self, docids: Iterable[str]) -> dict[str, list[Chunk]]: ...


class ChunkScorer(Protocol):
    def score_chunks(
        self,
        text: str,
        chunks: Mapping[str, Iterable[int]],
        *,
        batch: int = ...,
        should_stop: Callable[[], str] | None = ...,
        progress: Callable[[int, int], None] | None = ...,
    ) -> tuple[dict[str, float], Any]: ...


def what_it_is(candidates: int, collection: str = "NAME") -> str:
    """The one line saying what this channel is (search pages, the command line)."""
    return (
        f"semantic re-scoring of the top {candidates} lexical hits "
        f"(no dense index; build one with quarry index {collection} --dense)"
    )


def filtered_note(candidates: int) -> str:
    return (
        what_it_is(candidates) + f": the ranking is filtered to lexical candidates, MiniLM re-scored the top "
        f"{candidates} BM25 hits, so a document without a query word is not found"
    )


@dataclass(frozen=True)
class SemanticRun:
    """How the last ranking went: candidates, documents re-scored, chunks embedded of those
    missing, and why the embedding stopped early ('' when it did not)."""

    candidates: int
    scored: int
    embedded: int
    missing: int
    stopped: str = ""

    def partial_note(self) -> str:
        """'' for a complete ranking, else what the partial ranking covers and why."""
        if not self.stopped:
            return ""
        return (
            f"partial: embedding stopped after {self.embedded} of {self.missing} chunks because "
            f"{reason_text(self.stopped)}; {self.scored} of {self.candidates} lexical hits were re-scored "
            "and ranked (the embedded chunks are kept for the next search)"
        )


def stem_pattern(wanted: Set[str]) -> re.Pattern[str] | None:
    """One regex finding words that start with a query stem (nodes.evidence.sentences.stem), case-folded:
    a scan of a hundred long documents' chunks takes milliseconds, stemming each word ~0.5 s."""
    if not wanted:
        return None
    return re.compile(
        r"\b(" + "|".join(sorted(map(re.escape, wanted), key=lambda w: (-len(w), w))) + ")", re.IGNORECASE
    )


def pick_chunks(chunks: Sequence[Chunk], wanted: Set[str], limit: int) -> list[int]:
    """Chunk numbers to score: the first chunk, then those sharing the most query stems (earlier
    first on ties), `limit` in all, in document order."""
    if not chunks or limit < 1:
        return []
    pattern = stem_pattern(wanted)
    first, rest = chunks[0], chunks[1:]

    def overlap(chunk: Chunk) -> int:
        return len({m.lower() for m in pattern.findall(chunk.text)}) if pattern else 0

    best = sorted(rest, key=lambda c: (-overlap(c), c.chunk_no))
    return sorted([first.chunk_no, *(c.chunk_no for c in best[: limit - 1])])


class FilteredSemantic:
    """A semantic `ranking(text, k)` over the lexical channel's top `candidates` (a tools.Searcher)."""

    def __init__(
        self,
        lexical: LexicalRanking,
        corpus: ChunkSource,
        vectors: ChunkScorer,
        *,
        candidates: int,
        chunks_per_doc: int,
        batch: int | None = None,
    ) -> None:
        self.lexical, self.corpus, self.vectors = lexical, corpus, vectors
        self.candidates, self.chunks_per_doc = int(candidates), int(chunks_per_doc)
        self.batch = int(batch or JobConfig().semantic_batch)
        self.last: SemanticRun | None = None  # the latest ranking's run (one session, one thread)

    @property
    def note(self) -> str:
        """Shown with every page of this channel's rankings (and, after a stopped embedding, why
        the ranking is partial)."""
        partial = self.last.partial_note() if self.last else ""
        return "; ".join(filter(None, [filtered_note(self.candidates), partial]))

    def ranking(self, text: str, k: int = TOOL_LIMITS.depth) -> tuple[tuple[str, ...], tuple[float, ...]]:
        self.last = None
        docids, _ = self.lexical.ranking(text, k=self.candidates)
        if not docids:
            return (), ()
        chunks = self.corpus.chunks_many(docids)
        wanted = stems(text)
        chosen = {d: pick_chunks(chunks[d], wanted, self.chunks_per_doc) for d in docids if d in chunks}
        step = current_step()
        scores, got = self.vectors.score_chunks(
            text,
            chosen,
            batch=self.batch,
            should_stop=step.why,
            progress=lambda done, total: step.report("embedding", done, total),
        )
        ranked = sorted(((d, s) for d, s in scores.items() if d in chosen), key=lambda p: (-p[1], p[0]))[: int(k)]
        self.last = SemanticRun(
            candidates=len(chosen),
            scored=len(ranked),
            embedded=int(getattr(got, "done", 0)),
            missing=int(getattr(got, "missing", 0)),
            stopped=str(getattr(got, "stopped", "")),
        )
        return tuple(d for d, _ in ranked), tuple(s for _, s in ranked)
