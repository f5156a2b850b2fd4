"""The job's four retrieval tools, traced: `JobTools` wraps a `ToolSession` so every call is an
OpenTelemetry span (`execute_tool {name}`) and is counted, and `StoredRankingCache` keeps the
session's rankings in the job store so a retried or resumed node sees the same search_ids.

Its own module because tracing and persisting tool calls is one concern, separate from how the
runtime finds a job's stores, models and policies (`nodes.job.runtime`, which builds these per job).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from nodes.job.config import TOOL_LIMITS, JobConfig
from nodes.ranking.citation_expansion import expand
from nodes.tools.agent_tools import ExpandCitationsArgs, ReadDocumentArgs, ReadSearchResultsArgs, SearchArgs
from nodes.tools.corpus import ToolResult, ToolSession
from nodes.tools.ranking_cache import CachedRanking, RankingCache
from nodes.tools.results import CitationPage, SearchPage, ToolError
from observability.tool_spans import record_tool_result, tool_span
from stores.jobs import JobStore


class StoredRankingCache(RankingCache):
    """Rankings kept in the job store, so they survive activity retries and worker restarts."""

    def __init__(self, jobs: JobStore, job_id: str) -> None:
        super().__init__()
        self.jobs, self.job_id = jobs, job_id

    def put(self, search_id: str, ranking: CachedRanking) -> None:
        self.jobs.save_ranking(self.job_id, search_id, ranking.query, list(ranking.docids), list(ranking.scores))

    def get(self, search_id: str) -> CachedRanking | None:
        row = self.jobs.load_ranking(self.job_id, search_id)
        return CachedRanking(row[0], tuple(row[1]), tuple(row[2])) if row else None

    def ids(self) -> list[str]:
        return self.jobs.ranking_ids(self.job_id)


class JobTools:
    """The four tools for one job, each call traced as `execute_tool {name}` and counted."""

    def __init__(self, session: ToolSession, job_id: str, jobs: JobStore | None = None) -> None:
        self.session, self.job_id, self.jobs = session, job_id, jobs
        self.calls = 0

    def _traced(self, name: str, fn, **kwargs: Any) -> ToolResult:
        self.calls += 1
        attrs = {
            k: v for k, v in kwargs.items() if k in ("search_id", "docid", "direction", "offset", "limit", "channel")
        }
        for key in ("query", "reason"):
            if key in kwargs:
                attrs[key] = str(kwargs[key])[:500]
        kind = "RETRIEVER" if name in ("search", "read_search_results", "expand_citations") else None
        with tool_span(name, job_id=self.job_id, arguments=kwargs, kind=kind, **attrs) as span:
            result = fn(**kwargs)
            hits = [(h.docid, h.score) for h in result.hits] if isinstance(result, (SearchPage, CitationPage)) else None
            record_tool_result(span, result.render() if hasattr(result, "render") else str(result), hits)
            if isinstance(result, SearchPage):
                span.set_attribute("quarry.search_id", result.search_id)
                span.set_attribute("quarry.hits", result.total)
            elif isinstance(result, CitationPage):
                span.set_attribute("quarry.hits", result.total)
            elif isinstance(result, ToolError):
                span.set_attribute("quarry.error", result.code)
            return result

    def read_documents(self, reason: str, docids: list[str]) -> None:
        """Open many documents at once (verification reading its candidates): one span for the
        batch with an event per document, not a span each, so a long job's trace stays legible;
        each still counts as an opened document and a read."""
        with tool_span(
            "read_documents",
            job_id=self.job_id,
            arguments={"reason": reason, "docids": docids},
            reason=reason[:500],
            documents=len(docids),
        ) as span:
            for docid in docids:
                self.calls += 1
                page = self.session.read_document(reason, docid)
                span.add_event(
                    "read_document",
                    {
                        "quarry.docid": docid,
                        "quarry.lines": getattr(page, "total_lines", 0),
                        "quarry.error": getattr(page, "code", ""),
                    },
                )
            record_tool_result(span, f"{len(docids)} documents opened")

    def store_call(self, operation: str, store: str, **attrs: Any):
        """A span for a store call made on the job's behalf outside the four tools (e.g. Lucene
        scoring in verification): `execute_tool {operation}` with `gen_ai.tool.type=datastore`."""
        return tool_span(operation, job_id=self.job_id, tool_type="datastore", store=store, **attrs)

    def search(self, reason: str, query: str, channel: str = "lexical") -> ToolResult:
        return self._traced("search", self.session.search, reason=reason, query=query, channel=channel)

    def read_search_results(
        self, reason: str, search_id: str, offset: int = TOOL_LIMITS.page_offset, limit: int = TOOL_LIMITS.page_limit
    ) -> ToolResult:
        return self._traced(
            "read_search_results",
            self.session.read_search_results,
            reason=reason,
            search_id=search_id,
            offset=offset,
            limit=limit,
        )

    def read_document(
        self, reason: str, docid: str, offset: int = 1, limit: int = TOOL_LIMITS.read_limit
    ) -> ToolResult:
        return self._traced(
            "read_document", self.session.read_document, reason=reason, docid=docid, offset=offset, limit=limit
        )

    def expand_citations(
        self, reason: str, docid: str, direction: str = "both", limit: int = TOOL_LIMITS.citation_limit
    ) -> ToolResult:
        result = self._traced(
            "expand_citations",
            self.session.expand_citations,
            reason=reason,
            docid=docid,
            direction=direction,
            limit=limit,
        )
        if isinstance(result, CitationPage):
            self._surfaced([h.docid for h in result.hits])
        return result

    def call(self, args: BaseModel) -> ToolResult:
        """Run a retrieval tool from its validated arguments (a model's tool call)."""
        match args:
            case SearchArgs():
                return self.search(args.reason, args.query, args.channel)
            case ReadSearchResultsArgs():
                return self.read_search_results(args.reason, args.search_id, args.offset, args.limit)
            case ReadDocumentArgs():
                return self.read_document(args.reason, args.docid, args.offset, args.limit)
            case ExpandCitationsArgs():
                return self.expand_citations(args.reason, args.docid, args.direction, args.limit)
        raise TypeError(f"not a retrieval tool's arguments: {type(args).__name__}")

    def _surfaced(self, docids: list[str]) -> None:
        """Documents from channels without a cached ranking still count as surfaced."""
        self.session.trajectory.surfaced.update(docids)
        if self.jobs is not None and docids:
            self.jobs.add_surfaced(self.job_id, docids)

    def expand_seeds(
        self, reason: str, seeds: list[str], limit: int = JobConfig.citation_pool
    ) -> list[tuple[str, float]]:
        """Citation expansion from several seeds at once (personalised PageRank plus direct links),
        traced like the `expand_citations` tool it generalises."""
        self.calls += 1
        with tool_span(
            "expand_citations",
            job_id=self.job_id,
            docid=",".join(seeds)[:500],
            direction="expand",
            kind="RETRIEVER",
            arguments={"reason": reason, "seeds": seeds, "limit": limit},
        ) as span:
            graph = self.session.citations
            hits = expand(graph, list(seeds), limit) if graph is not None and len(graph) else []
            self._surfaced([d for d, _ in hits])
            span.set_attribute("quarry.hits", len(hits))
            record_tool_result(span, f"{len(hits)} linked documents", hits)
            return hits

    def find_by_metadata(self, reason: str, authors: list[str]) -> list[str]:
        """Documents whose authors include one of these last names (store metadata, not text)."""
        self.calls += 1
        with tool_span(
            "search",
            job_id=self.job_id,
            channel="metadata",
            query=" or ".join(authors)[:500],
            kind="RETRIEVER",
            arguments={"reason": reason, "authors": authors},
        ) as span:
            found = self.session.corpus.docs_by_author(authors)
            docids = list(dict.fromkeys(d for name in authors for d in found.get(name.lower(), [])))
            self._surfaced(docids)
            span.set_attribute("quarry.hits", len(docids))
            record_tool_result(span, f"{len(docids)} documents by {', '.join(authors)}", [(d, 1.0) for d in docids])
            return docids

    def ranking(self, search_id: str) -> CachedRanking | None:
        return self.session.cache.get(search_id)
