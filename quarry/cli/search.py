"""`search` and `read`: the agent's own tools (nodes.tools.corpus) on a collection, from the command
line — a deep ranking with previews (BM25, or MiniLM semantic re-scoring) and a document by
numbered lines."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from nodes.job.config import TOOL_LIMITS
from nodes.job.step_control import StepControl, using_step
from quarry.app.search import (
    check_channel,
    checked_query,
    read_page,
    record_metadata,
    search_page,
    tools_for,
    what_it_is,
)
from quarry.app.terminal import out, print_json, terminal_safe
from quarry.cli.collections import check_bm25
from quarry.cli.console import fail
from quarry.cli.embedding_progress import embedding_progress
from quarry.cli.screens import page_lines
from stores.errors import QuarryError

if TYPE_CHECKING:  # types only: the tools' pydantic pages and records load with the command that runs
    pass

commands = typer.Typer()


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
