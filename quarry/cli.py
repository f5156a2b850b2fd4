"""`quarry` command line: ingest, index, search, read, eval (jobs live in cli_jobs.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from quarry.console import console, fail, out, print_json, progress_bar
from stores.errors import QuarryError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Quarry: durable agentic search over a corpus you own.")


@app.callback()
def main(home: Annotated[Optional[Path], typer.Option("--home", envvar="QUARRY_HOME",
                                                      help="Data folder (indexes, jobs, traces).")] = None) -> None:
    if home is not None:
        os.environ["QUARRY_HOME"] = str(home.expanduser().resolve())


def _collection(name: str):
    from stores.collection import Collection
    return Collection(name)


@app.command()
def ingest(path: Annotated[Path, typer.Argument(help="BEIR folder, .jsonl file, or folder of .txt/.md files")],
           name: Annotated[str, typer.Option("--name", help="Collection name")],
           no_index: Annotated[bool, typer.Option("--no-index", help="Skip building the BM25 index")] = False,
           force: Annotated[bool, typer.Option("--force", help="Rebuild even if nothing changed")] = False) -> None:
    """Validate and store a corpus, then build its BM25 index (all or nothing)."""
    from stores.collection import ingest as run_ingest
    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_ingest(path, name, build_lucene=not no_index, force=force, progress=progress)
    except QuarryError as err:
        fail(err)
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {warning}", highlight=False)
    if report.unchanged:
        out.print(f"collection [bold]{name}[/] unchanged ({report.documents} documents); nothing to do")
    else:
        out.print(f"collection [bold]{name}[/]: {report.documents} documents, {report.citations} citations, "
                  f"{report.queries} queries, qrels splits: {', '.join(report.splits) or 'none'}"
                  + ("; BM25 index built" if report.indexed else ""))


@app.command()
def index(name: str,
          k1: Annotated[Optional[float], typer.Option(min=0.0, help="BM25 k1 stored with the index")] = None,
          b: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="BM25 b stored with the index")] = None) -> None:
    """Build (or re-parameterise) the BM25 index of an ingested collection."""
    from stores.collection import reindex
    try:
        with progress_bar(console.is_terminal) as progress:
            meta = reindex(name, k1=k1, b=b, progress=progress)
    except QuarryError as err:
        fail(err)
    out.print(f"index [bold]{name}[/]: {meta.documents} documents, BM25 k1={meta.k1} b={meta.b}")


def _tools(name: str, k1: float | None = None, b: float | None = None):
    from nodes.tools import ToolSession
    col = _collection(name)
    lucene = col.lucene

    class _Searcher:
        def search(self, text: str, k: int = 1000):
            return lucene.search(text, k, k1=k1, b=b)

    return ToolSession(_Searcher(), col.corpus)


@app.command()
def search(name: str, query: str,
           offset: Annotated[int, typer.Option(min=1, help="First rank to show")] = 1,
           limit: Annotated[int, typer.Option(min=1, help="How many ranks to show (max 50)")] = 5,
           k1: Optional[float] = None, b: Optional[float] = None,
           json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False) -> None:
    """Search a collection (deep ranking, previews with excerpts)."""
    from nodes.tool_results import ToolError
    try:
        tools = _tools(name, k1, b)
        page = tools.search("command line", query)
        if not isinstance(page, ToolError) and (offset, limit) != (1, 5) and page.total:
            page = tools.read_search_results("command line", page.search_id, offset, limit)
    except QuarryError as err:
        fail(err)
    if isinstance(page, ToolError):
        fail(QuarryError(page.code, page.message, page.hint))
    if json_out:
        print_json({"search_id": page.search_id, "total": page.total,
                    "hits": [h.model_dump() for h in page.hits]})
    else:
        out.print(page.render(), highlight=False, markup=False)


@app.command()
def read(name: str, docid: str,
         offset: Annotated[int, typer.Option(min=1, help="First line")] = 1,
         limit: Annotated[int, typer.Option(min=1, help="Number of lines")] = 200) -> None:
    """Read a document by numbered lines."""
    from nodes.tool_results import ToolError
    try:
        page = _tools(name).read_document("command line", docid, offset, limit)
    except QuarryError as err:
        fail(err)
    if isinstance(page, ToolError):
        fail(QuarryError(page.code, page.message, page.hint))
    out.print(page.render(), highlight=False, markup=False)


@app.command("eval")
def eval_cmd(name: str,
             system: Annotated[str, typer.Option(help="bm25 or agent (durable jobs on a local dev server)")] = "bm25",
             split: Annotated[Optional[str], typer.Option(help="qrels split (default: test, else the only one)")] = None,
             queries: Annotated[Optional[int], typer.Option(min=1, help="Only the first N judged queries")] = None,
             k1: Optional[float] = None, b: Optional[float] = None,
             run_file: Annotated[Optional[Path], typer.Option("--run", help="Where to write the TREC run")] = None,
             json_out: Annotated[bool, typer.Option("--json", help="Metrics as JSON on the last line")] = False) -> None:
    """Evaluate a system on the collection's judged queries (pytrec_eval)."""
    from evals.runner import evaluate
    try:
        col = _collection(name)
        with progress_bar(console.is_terminal) as progress:
            result = evaluate(col, system, split=split, k1=k1, b=b, limit_queries=queries, run_file=run_file,
                              on_query=lambda n, total: progress("queries", n, total))
    except QuarryError as err:
        fail(err)
    summary = result.summary()
    if json_out:
        print_json(summary)
        return
    table = Table(title=f"{name} · {system} · {result.split} · {result.queries} queries")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    out.print(table)


@app.command("collections")
def collections_cmd() -> None:
    """List ingested collections."""
    from stores.home import list_collections
    for name in list_collections():
        out.print(name)


from quarry import cli_jobs as _cli_jobs  # noqa: E402  (registers the job commands)

_cli_jobs.register(app)
