"""Commands on collections: `ingest`, `add`, `remove`, `index` (BM25, and --dense vectors) and
`collections`, with the reports they print."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.app.collections import check_bm25, open_collection
from quarry.app.dense_build import runs_durable
from quarry.app.terminal import console, out, print_json, progress_bar, safe
from quarry.cli.console import fail
from quarry.cli.embedding_progress import embedding_progress
from quarry.cli.options import AddressOpt
from stores import settings
from stores.dense_sizes import DURABLE_MIN_CHUNKS
from stores.errors import QuarryError
from stores.home import list_collections

if TYPE_CHECKING:  # a type only: profiles are pydantic models, loaded by the command that lists them
    from stores.profiles import ProfileStatus

commands = typer.Typer()


JsonOpt = Annotated[bool, typer.Option("--json", help="The outcome as one JSON object on the last line")]


SelfTuneOpt = Annotated[
    bool,
    typer.Option(
        "--self-tune",
        envvar=settings.SELF_TUNE.name,
        help="Afterwards, tune the collection on its own documents and apply it (quarry tune NAME --self --apply); "
        "QUARRY_SELF_TUNE=1 makes it the setting for every ingest and add",
    ),
]


def _self_tune_after(name: str, report: Any, enabled: bool) -> dict[str, Any]:
    """`--self-tune`: the collection tuned on pseudo-queries and the profile applied, after a
    change (an unchanged collection keeps its profile); what is printed, as JSON."""
    if not enabled or report.unchanged:
        return {}
    from tuning.self_tuning import self_tune  # lazy: pseudo-queries and the tuner load on demand

    try:
        with progress_bar(console.is_terminal) as progress:
            profile = self_tune(open_collection(name), apply=True, progress=progress).profile
    except QuarryError as err:
        fail(err)
    return {"self_profile": profile.model_dump(include={"k1", "b", "semantic_weight", "queries", "seconds"})}


def _report_json(report, extra: dict[str, Any] | None = None) -> None:
    """An ingest/add/remove report as JSON: every count, the skipped and unsupported files, the
    warnings and the summary line (warnings and skipped files stay on stderr as well)."""
    print_json(asdict(report) | {"summary": report.summary()} | (extra or {}))


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
            f" and {len(report.unsupported) - _SHOWN} more" if len(report.unsupported) > _SHOWN else ""
        )
        console.print(
            f"[yellow]not read[/]: {len(report.unsupported)} file(s) of unsupported types: {safe(names)}",
            highlight=False,
        )
    dense = f"; {report.embedded} chunk(s) embedded into the dense index" if report.embedded is not None else ""
    out.print(f"{safe(report.summary())}{dense}", highlight=False)


def _print_warnings(report) -> None:
    """The report's warnings on stderr; they name documents and files, so each goes through `safe`."""
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {safe(warning)}", highlight=False)


@commands.command()
def ingest(
    path: Annotated[
        Path,
        typer.Argument(
            help="BEIR folder, .jsonl file, or a document file or folder "
            "(.pdf .html .docx .md .rst .tex .txt, man pages, any of them .gz; recursive)"
        ),
    ],
    name: Annotated[str, typer.Option("--name", help="Collection name")],
    no_index: Annotated[bool, typer.Option("--no-index", help="Skip building the BM25 index")] = False,
    force: Annotated[bool, typer.Option("--force", help="Rebuild everything even if nothing changed")] = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Reject the whole input if any file is bad (default: skip it and report it)"),
    ] = False,
    json_out: JsonOpt = False,
    self_tune: SelfTuneOpt = False,
) -> None:
    """Validate and store a corpus, then build its BM25 index; into an existing collection only
    what changed is applied."""
    from stores.collection import ingest as run_ingest  # lazy: the collection store costs ~100 ms

    if self_tune and no_index:
        fail(QuarryError("bad_option", "--self-tune needs the BM25 index", "drop --no-index or --self-tune"))
    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_ingest(path, name, build_lucene=not no_index, force=force, strict=strict, progress=progress)
    except QuarryError as err:
        fail(err)
    tuned = _self_tune_after(name, report, self_tune)
    if json_out:
        _print_warnings(report)
        _report_json(report, tuned)
        return
    if report.unchanged:
        _print_warnings(report)
        out.print(f"collection [bold]{safe(name)}[/] unchanged ({report.documents} documents); nothing to do")
        return
    _print_changes(report)
    out.print(
        f"collection [bold]{safe(name)}[/]: {report.documents} documents, {report.citations} citations, "
        f"{report.queries} queries"
        + (f" ({report.answers} with reference answers)" if report.answers else "")
        + f", qrels splits: {safe(', '.join(report.splits)) or 'none'}"
        + ("; BM25 index built" if report.indexed else "")
    )
    _print_tuned(name, tuned)


def _print_tuned(name: str, tuned: dict[str, Any]) -> None:
    if tuned:
        p = tuned["self_profile"]
        sem = "" if p["semantic_weight"] is None else f", semantic ×{p['semantic_weight']:g}"
        out.print(
            f"self-tuned [bold]{safe(name)}[/] on {p['queries']} pseudo-queries in {p['seconds']:.0f} s and applied: "
            f"k1 {p['k1']:g} b {p['b']:g}{sem}"
        )


@commands.command()
def add(
    name: str,
    paths: Annotated[list[Path], typer.Argument(help="Document files or folders (or .jsonl files) to add or update")],
    strict: Annotated[bool, typer.Option("--strict", help="Change nothing if any file is bad")] = False,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="Folder that ids are relative to, as a folder ingest of it would give them "
            "(default: the folder the collection was ingested from, for files inside it; "
            "otherwise each folder given, or a single file's name)",
        ),
    ] = None,
    json_out: JsonOpt = False,
    self_tune: SelfTuneOpt = False,
) -> None:
    """Add or update documents in a collection; only their chunks are indexed and embedded.
    A file whose id is already another file's document is refused, naming both."""
    from stores.collection_edits import add as run_add  # lazy: the collection store costs ~100 ms

    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_add(name, list(paths), root=root, strict=strict, progress=progress)
    except QuarryError as err:
        fail(err)
    tuned = _self_tune_after(name, report, self_tune)
    _show_change(
        report,
        json_out,
        f"collection [bold]{safe(name)}[/]: {report.documents} documents"
        + ("" if report.unchanged else "; BM25 index updated" if report.indexed else ""),
        tuned,
    )
    if not json_out:
        _print_tuned(name, tuned)


@commands.command()
def remove(
    name: str,
    docids: Annotated[list[str], typer.Argument(help="Ids of the documents to remove")],
    json_out: JsonOpt = False,
) -> None:
    """Remove documents from a collection (corpus, BM25 and dense indexes, citations)."""
    from stores.collection_edits import remove as run_remove  # lazy: the collection store costs ~100 ms

    try:
        with progress_bar(console.is_terminal) as progress:
            report = run_remove(name, list(docids), progress=progress)
    except QuarryError as err:
        fail(err)
    _show_change(report, json_out, f"collection [bold]{safe(name)}[/]: {report.documents} documents")


def _show_change(report: Any, json_out: bool, summary: str, extra: dict[str, Any] | None = None) -> None:
    """What `add` and `remove` print: the report as JSON, or its changes and a summary line."""
    if json_out:
        _print_warnings(report)
        _report_json(report, extra)
        return
    _print_changes(report)
    out.print(summary)


@commands.command()
def index(
    name: str,
    k1: Annotated[float | None, typer.Option(min=0.0, help="BM25 k1 stored with the index")] = None,
    b: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="BM25 b stored with the index")] = None,
    dense: Annotated[
        bool,
        typer.Option(
            "--dense", help="Also build the dense (MiniLM + Chroma) chunk index; reused while the corpus is unchanged"
        ),
    ] = False,
    durable: Annotated[
        bool | None,
        typer.Option(
            "--durable/--in-process",
            help="With --dense: build as durable work on Temporal, in batches over every worker of this home, "
            "resumable and visible in `quarry job watch` (default: from "
            f"{DURABLE_MIN_CHUNKS:,} chunks on), or in this process",
        ),
    ] = None,
    address: AddressOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Build (or re-parameterise) the BM25 index of an ingested collection; --dense adds vectors."""
    from stores.collection import reindex  # lazy: the collection store costs ~100 ms

    try:
        check_bm25(k1, b)
        with progress_bar(console.is_terminal and not json_out) as progress:  # --json: nothing but the JSON
            meta = reindex(name, k1=k1, b=b, progress=progress)
    except QuarryError as err:
        fail(err)
    obj = {"collection": name, "bm25": asdict(meta)}
    if not json_out:
        out.print(f"index [bold]{safe(name)}[/]: {meta.documents} documents, BM25 k1={meta.k1} b={meta.b}")
    if dense:
        from stores.dense import DenseIndex  # lazy: the dense index costs ~0.5 s of start-up

        try:
            col = open_collection(name)
            if runs_durable(int(col.corpus.stats()["chunks"]), durable):
                dmeta, reused = durable_dense_index(col, json_out=json_out, address=address)
            else:
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
            out.print(
                f"dense index [bold]{safe(name)}[/]: {dmeta.chunks} chunks of {dmeta.documents} documents, "
                f"{safe(dmeta.model)}, built in {dmeta.built_seconds:.1f} s"
            )
    if json_out:
        print_json(obj)


def durable_dense_index(col: Any, *, json_out: bool, address: str | None) -> tuple[Any, bool]:
    """`index --dense` as durable work (`workflows.dense_index`): start the build, or attach to the
    one running for this version (`quarry.app.dense_start`, as the HTTP API and `quarry mcp` do), and
    follow it to the end; (meta, reused) as `DenseIndex.ensure` returns. Ctrl+C stops following,
    not the build."""
    from quarry.app import temporal
    from quarry.app.dense_build import follow
    from quarry.app.dense_start import start_dense_build
    from stores.dense import DenseMeta

    started = start_dense_build(col.name, address)
    if started.reused:
        return started.meta, True
    build_id = started.build_id
    console.print(
        f"dense index of [bold]{safe(col.name)}[/] building as durable work {safe(build_id)} "
        f"(Ctrl+C stops following, not the build; follow: quarry job watch {safe(build_id)}; "
        f"cancel: quarry job cancel {safe(build_id)}"
        + (f"; Web UI: {safe(started.web_ui)}" if started.web_ui else "")
        + ")",
        highlight=False,
    )

    async def main() -> dict[str, Any]:
        handle = (await temporal.client(address)).get_workflow_handle(build_id)
        with embedding_progress(quiet=json_out, note="(MiniLM, durable dense index)") as progress:
            return await follow(handle, progress)

    try:
        result = temporal.attempt(main(), address=address)
    except KeyboardInterrupt:
        console.print(f"stopped following; the build goes on: quarry job watch {safe(build_id)}", highlight=False)
        raise typer.Exit(130) from None
    return DenseMeta(**result["meta"]), False


@commands.command("collections")
def collections_cmd(json_out: JsonOpt = False) -> None:
    """List ingested collections, with each one's self-tuned profile (`quarry tune NAME --self`)."""
    from stores.profiles import profile_path, profile_status

    names = list(list_collections())
    statuses: dict[str, ProfileStatus] = {}
    errors: dict[str, QuarryError] = {}
    for name in names:
        try:
            col = open_collection(name)
            if profile_path(col.paths).is_file():  # hashing the documents only when there is a profile
                status = profile_status(col.paths, name, col.corpus.hashes())
                if status is not None:
                    statuses[name] = status
        except QuarryError as err:
            errors[name] = err
    if json_out:
        profiles: dict[str, Any] = {
            n: st.profile.model_dump(include={"k1", "b", "semantic_weight", "applied"})
            | {"changed_share": round(st.changed_share, 3), "stale": st.stale}
            for n, st in statuses.items()
        }
        profiles |= {n: {"error": e.message, "hint": e.hint} for n, e in errors.items()}
        print_json({"collections": names, "profiles": profiles})
        return
    for name in names:
        if name in errors:
            out.print(f"{safe(name)}  [red]{safe(errors[name].message)}[/] ({safe(errors[name].hint)})")
        elif name in statuses:
            st = statuses[name]
            hint = f"  [yellow]run: quarry tune {safe(name)} --self[/]" if st.stale else ""
            out.print(f"{safe(name)}  self-tuned {safe(st.describe())}{hint}")
        else:
            out.print(safe(name), highlight=False)
