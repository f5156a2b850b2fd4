"""The agent-facing tools: `search`, `read_search_results`, `read_document`, `expand_citations`.

Agents see a corpus only through these calls (the Pi-Serini interface): a search retrieves a
deep ranking (`TOOL_LIMITS.depth` deep), caches it under a `search_id` and shows a few previews;
more of the same ranking is paged without searching again; documents are read by numbered lines.
Every tool takes `reason` first and answers misuse with a `ToolError` that says how to repair
the call, never an exception. `expand_citations` walks the collection's citation graph from
one document (references, citing papers, co-citation, coupling, personalised PageRank).
Every limit (depth, previews, page sizes, cache size) is read from `nodes.job.config.TOOL_LIMITS`,
which the argument schemas shown to a model (nodes.tools.agent_tools) state too.
The query check the command line shares is `nodes.tools.query_check`; the cache of rankings
behind the search_ids is `nodes.tools.ranking_cache`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodes.job.config import CITATION_DIRECTIONS, TOOL_LIMITS
from nodes.ranking.citation_expansion import ppr
from nodes.tools.excerpts import excerpt
from nodes.tools.query_check import MAX_QUERY_CHARS, QueryProblem, check_query
from nodes.tools.ranking_cache import CachedRanking, RankingCache
from nodes.tools.results import CitationHit, CitationPage, DocumentPage, HitView, SearchPage, ToolError
from stores.citations import CitationGraph
from stores.lucene import MAX_QUERY_TERMS, distinct_terms
from stores.records import DocRecord

# The limits under their older names (declared in nodes.job.config.ToolLimits, not here).
LIMITS = TOOL_LIMITS
DEFAULT_DEPTH = LIMITS.depth
PREVIEW_COUNT = LIMITS.preview
PAGE_LIMIT_MAX = LIMITS.page_limit_max
READ_LIMIT_MAX = LIMITS.read_limit_max
CACHE_SIZE = LIMITS.cache_size
CITATION_LIMIT_MAX = LIMITS.citation_limit_max

ToolResult = SearchPage | DocumentPage | CitationPage | ToolError


class Searcher(Protocol):
    def ranking(self, text: str, k: int = ...) -> tuple[Sequence[str], Sequence[float]]: ...


class Corpus(Protocol):
    def get_many(self, docids: Sequence[str]) -> dict[str, DocRecord]: ...
    def lines(self, docid: str) -> list[str] | None: ...
    def docs_by_author(self, last_names: list[str]) -> dict[str, list[str]]: ...


@dataclass
class Trajectory:
    """Which documents the agent has surfaced, previewed and opened (cited is set at answer)."""

    surfaced: set[str] = field(default_factory=set)
    previewed: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)


def _as_int(value: Any, minimum: int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= minimum else None
    if isinstance(value, float) and value.is_integer():
        return int(value) if value >= minimum else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value) if int(value) >= minimum else None
    return None


class ToolSession:
    """One agent's (one job's) tools over one collection, with its own ranking cache."""

    def __init__(
        self,
        searcher: Searcher,
        corpus: Corpus,
        *,
        depth: int = DEFAULT_DEPTH,
        cache_size: int = CACHE_SIZE,
        id_prefix: str = "s",
        new_search_id: Callable[[], str] | None = None,
        cache: RankingCache | None = None,
        citations: CitationGraph | None = None,
        semantic: Searcher | None = None,
    ) -> None:
        self.searcher = searcher
        self.semantic = semantic
        self.corpus = corpus
        self.citations = citations
        self.depth = depth
        self.cache = cache if cache is not None else RankingCache(cache_size)
        self.trajectory = Trajectory()
        counter = itertools.count(1)
        self._new_id = new_search_id or (lambda: f"{id_prefix}{next(counter)}")

    # -- tools -------------------------------------------------------------------------------

    def search(self, reason: str = "", query: Any = None, channel: Any = "lexical") -> ToolResult:
        """Search the collection (`lexical`: BM25, or `semantic`: MiniLM over chunks); cache the
        deep ranking; preview its first `LIMITS.preview` ranks."""
        try:
            check_query(query, channel if channel in ("lexical", "semantic") else None)
        except QueryProblem as problem:
            return ToolError(tool="search", code=problem.code, message=problem.message, hint=problem.tool_hint())
        if channel not in ("lexical", "semantic"):
            return ToolError(
                tool="search",
                code="bad_channel",
                message=f"unknown channel {channel!r}",
                hint='use channel="lexical" (BM25, default) or channel="semantic" (embeddings)',
            )
        note = ""
        if len(query) > MAX_QUERY_CHARS:
            query, note = query[:MAX_QUERY_CHARS], f"query cut to its first {MAX_QUERY_CHARS} characters"
        terms = distinct_terms(query) if channel == "lexical" else 1
        searcher = self.searcher if channel == "lexical" else self.semantic
        if searcher is None:
            return ToolError(
                tool="search",
                code="no_dense_index",
                message="this collection has no semantic index",
                hint='use channel="lexical", or build it: quarry index NAME --dense',
            )
        if terms > MAX_QUERY_TERMS:
            note = "; ".join(
                filter(
                    None,
                    [note, f"the query has {terms} distinct words; only the first {MAX_QUERY_TERMS} were searched"],
                )
            )
        docids, scores = searcher.ranking(query, k=self.depth)
        # A searcher that ranks only part of the collection says so (nodes.rounds.semantic_filter).
        note = "; ".join(filter(None, [note, getattr(searcher, "note", "")]))
        search_id = self._new_id()
        ranking = CachedRanking(query, tuple(docids), tuple(scores))
        self.cache.put(search_id, ranking)
        self.trajectory.surfaced.update(ranking.docids)
        if not docids:
            note = note or "no document contains a searchable word of this query"
        return self._page(search_id, ranking, 1, PREVIEW_COUNT, note)

    def read_search_results(
        self, reason: str = "", search_id: Any = None, offset: Any = LIMITS.page_offset, limit: Any = LIMITS.page_limit
    ) -> ToolResult:
        """Page through a cached ranking (1-based ranks) without searching again."""
        tool = "read_search_results"
        ranking = self.cache.get(search_id) if isinstance(search_id, str) else None
        if ranking is None:
            known = ", ".join(self.cache.ids()[-5:]) or "none yet"
            return ToolError(
                tool=tool,
                code="unknown_search_id",
                message=f"no cached search {search_id!r}",
                hint=f"use a search_id returned by search (recent: {known}), or call search again",
            )
        start = _as_int(offset, 1)
        count = _as_int(limit, 1)
        if start is None:
            return ToolError(
                tool=tool,
                code="bad_offset",
                message=f"offset must be a rank ≥ 1, got {offset!r}",
                hint=f'e.g. read_search_results(search_id="{search_id}", offset={LIMITS.page_offset}, '
                f"limit={LIMITS.page_limit})",
            )
        if count is None:
            return ToolError(
                tool=tool,
                code="bad_limit",
                message=f"limit must be a whole number ≥ 1, got {limit!r}",
                hint=f"use limit between 1 and {PAGE_LIMIT_MAX}",
            )
        total = len(ranking.docids)
        if start > total:
            return ToolError(
                tool=tool,
                code="offset_past_end",
                message=f"offset {start} is past the end of {search_id} ({total} results)",
                hint=f"use an offset between 1 and {total}"
                if total
                else "this search found nothing; search again with other words",
            )
        note = f"limit capped at {PAGE_LIMIT_MAX}" if count > PAGE_LIMIT_MAX else ""
        return self._page(search_id, ranking, start, min(count, PAGE_LIMIT_MAX), note)

    def read_document(
        self, reason: str = "", docid: Any = None, offset: Any = 1, limit: Any = LIMITS.read_limit
    ) -> ToolResult:
        """Numbered lines of one document, `limit` lines from line `offset`."""
        tool = "read_document"
        lines = self.corpus.lines(docid) if isinstance(docid, str) and docid else None
        if lines is None:
            return ToolError(
                tool=tool,
                code="unknown_docid",
                message=f"no document with docid {docid!r}",
                hint="use a docid exactly as shown in search results (docid=…)",
            )
        start = _as_int(offset, 1)
        count = _as_int(limit, 1)
        if start is None:
            return ToolError(
                tool=tool,
                code="bad_offset",
                message=f"offset must be a line number ≥ 1, got {offset!r}",
                hint=f'e.g. read_document(docid="{docid}", offset=1, limit={LIMITS.read_limit})',
            )
        if count is None:
            return ToolError(
                tool=tool,
                code="bad_limit",
                message=f"limit must be a whole number ≥ 1, got {limit!r}",
                hint=f"use limit between 1 and {READ_LIMIT_MAX}",
            )
        if start > len(lines):
            return ToolError(
                tool=tool,
                code="offset_past_end",
                message=f"offset {start} is past the end of {docid} ({len(lines)} lines)",
                hint=f"use an offset between 1 and {len(lines)}",
            )
        note = f"limit capped at {READ_LIMIT_MAX}" if count > READ_LIMIT_MAX else ""
        shown = lines[start - 1 : start - 1 + min(count, READ_LIMIT_MAX)]
        self.trajectory.opened.add(docid)
        return DocumentPage(docid=docid, title=lines[0], offset=start, total_lines=len(lines), lines=shown, note=note)

    def expand_citations(
        self, reason: str = "", docid: Any = None, direction: Any = "both", limit: Any = LIMITS.citation_limit
    ) -> ToolResult:
        """Documents linked to `docid` by citation, best first; `limit` at most `LIMITS.citation_limit_max`."""
        tool = "expand_citations"
        if self.citations is None or len(self.citations) == 0:
            return ToolError(
                tool=tool,
                code="no_citations",
                message="this collection has no citation links",
                hint="use search(query=…) and read_search_results(search_id=…) to find related documents",
            )
        seed = self.corpus.get_many([docid]).get(docid) if isinstance(docid, str) and docid else None
        if seed is None:
            return ToolError(
                tool=tool,
                code="unknown_docid",
                message=f"no document with docid {docid!r}",
                hint="use a docid exactly as shown in search results (docid=…)",
            )
        how = direction.strip().lower().replace("-", "_") if isinstance(direction, str) else None
        if how not in CITATION_DIRECTIONS:
            return ToolError(
                tool=tool,
                code="bad_direction",
                message=f"unknown direction {direction!r}",
                hint=f"use one of {', '.join(CITATION_DIRECTIONS)}, "
                f'e.g. expand_citations(docid="{docid}", direction="both")',
            )
        count = _as_int(limit, 1)
        if count is None:
            return ToolError(
                tool=tool,
                code="bad_limit",
                message=f"limit must be a whole number ≥ 1, got {limit!r}",
                hint=f"use limit between 1 and {CITATION_LIMIT_MAX}",
            )
        notes = [f"limit capped at {CITATION_LIMIT_MAX}"] if count > CITATION_LIMIT_MAX else []
        if not self.citations.has(docid):
            notes.append(f"{docid} has no citation links in this collection")
        related = _related(self.citations, docid, how)
        shown = related[: min(count, CITATION_LIMIT_MAX)]
        records = self.corpus.get_many([d for d, _, _ in shown]) if shown else {}
        hits = _citation_hits(shown, records, seed.title)
        ids = [h.docid for h in hits]
        self.trajectory.surfaced.update(ids)
        self.trajectory.previewed.update(ids)
        return CitationPage(
            docid=docid, title=seed.title, direction=how, total=len(related), hits=hits, note="; ".join(notes)
        )

    # -- helpers -----------------------------------------------------------------------------

    def _page(self, search_id: str, ranking: CachedRanking, start: int, count: int, note: str) -> SearchPage:
        ids = ranking.docids[start - 1 : start - 1 + count]
        records = self.corpus.get_many(ids) if ids else {}
        views = []
        for rank, docid in enumerate(ids, start=start):
            rec = records.get(docid)
            views.append(
                HitView(
                    rank=rank,
                    docid=docid,
                    score=round(ranking.scores[rank - 1], 4),
                    title=rec.title if rec else "",
                    excerpt=preview_text(rec, ranking.query) if rec else "",
                )
            )
        self.trajectory.previewed.update(ids)
        return SearchPage(
            search_id=search_id, query=ranking.query, total=len(ranking.docids), offset=start, hits=views, note=note
        )


def _related(graph: CitationGraph, docid: str, direction: str) -> list[tuple[str, float, str]]:
    """(docid, score, relation) of every document related to `docid` in `direction`, best first."""
    if direction == "both":
        relations: dict[str, list[str]] = {}
        for did, _ in graph.references(docid):
            relations.setdefault(did, []).append("reference")
        for did, _ in graph.cited_by(docid):
            relations.setdefault(did, []).append("citing")
        return [(did, 1.0, ", ".join(relations[did])) for did in sorted(relations)]
    scored = {
        "references": graph.references,
        "cited_by": graph.cited_by,
        "co_cited": graph.co_cited,
        "coupled": graph.coupled,
    }.get(direction)
    pairs = scored(docid) if scored else ppr(graph, [docid])
    label = {"references": "reference", "cited_by": "citing", "co_cited": "co-cited"}.get(direction, direction)
    return [(did, score, label) for did, score in pairs]


def preview_text(rec: DocRecord, query: str) -> str:
    """The excerpt shown for a hit: from the body (plus keywords), else from the title."""
    body = " ".join(p for p in (rec.text, ("keywords: " + ", ".join(rec.keywords)) if rec.keywords else "") if p)
    return excerpt(body or rec.title, query)


def _citation_hits(shown: list[Any], records: dict[str, DocRecord], seed_title: str) -> list[CitationHit]:
    """The linked documents shown, ranked, each with its title and an excerpt."""
    hits = []
    for rank, (did, score, relation) in enumerate(shown, start=1):
        rec = records.get(did)
        hits.append(
            CitationHit(
                rank=rank,
                docid=did,
                score=round(score, 6),
                relation=relation,
                title=rec.title if rec else "",
                excerpt=preview_text(rec, seed_title) if rec else "",
            )
        )
    return hits
