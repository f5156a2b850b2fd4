"""`quarry job list | show | progress | watch | result | export`: the commands that read a job —
its record in the job store, Temporal's view of it while it runs, its live rounds, its result and
that result exported. None of them changes the job; they live apart from the commands that act on
it (quarry.cli.job_control) so each module stays one concern."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from quarry.app import temporal
from quarry.app.dense_build import is_dense_build
from quarry.app.jobs import JOBS_LISTED, exported, job_rows, progress_of, result_so_far
from quarry.app.progress import WithStepDetail, WorkerWarmingUp
from quarry.app.records import exit_for, final, known_job, store, trace_file
from quarry.app.terminal import console, out, print_json, safe, terminal_safe
from quarry.cli.console import fail
from quarry.cli.options import AddressOpt, temporal_run
from quarry.cli.render import render_ended, render_progress, render_result, usage_line
from quarry.cli.screens import intent_table, job_list_tsv
from quarry.cli.watch import watch
from stores.atomic import write_atomic
from stores.errors import QuarryError, disk_full
from stores.job_status import CUT_SHORT
from stores.jobs import FINAL
from workflows.dense_progress import progress_line as dense_progress_line

commands = typer.Typer()
FullOpt = Annotated[bool, typer.Option("--full", help="Every passage, whole, and the weak matches")]


@commands.command("list")
def job_list(
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many jobs, newest first")] = JOBS_LISTED,
    status: Annotated[
        str | None,
        typer.Option(
            help="Only jobs with this status (completed, running, "
            "failed, stopped, budget_exhausted, cancelled, terminated)"
        ),
    ] = None,
    collection: Annotated[str | None, typer.Option(help="Only jobs on this collection")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per job")] = False,
    address: AddressOpt = None,
) -> None:
    """This home's jobs, newest first: the job store's record, with Temporal's view of those still
    running (a job whose worker or server died shows as Temporal sees it). Below them, when the
    server answers, the home's durable dense index builds (`quarry job watch ID` follows one);
    `--json` keeps to the jobs (one object per job, as scripts read it)."""
    rows, temporal_view = job_rows(limit, status, collection, address)
    if json_out:
        for r in rows:
            print_json(r)
        return
    builds = [
        b
        for b in temporal.dense_builds(limit, address) or []
        if (status is None or b["status"] == status) and (collection is None or b["collection"] == collection)
    ]

    def created(j: dict[str, Any]) -> str:
        return dt.datetime.fromtimestamp(j["created_at"]).strftime("%Y-%m-%d %H:%M:%S")

    shown = [r | {"status": f"{r['status']} ({r['error_code']})"} if r.get("error_code") else r for r in rows]
    if out.is_terminal:  # the intent takes the width left and ends with … where it is cut
        out.print(intent_table(shown, created, out.width))
    else:  # piped: whole intents, tab-separated
        sys.stdout.write("".join(line + "\n" for line in job_list_tsv(shown, created)))  # rich would expand tabs
    if builds:
        out.print("dense index builds (follow one: quarry job watch ID):", highlight=False)
        for b in builds:
            started = (
                dt.datetime.fromtimestamp(b["started_at"]).strftime("%Y-%m-%d %H:%M:%S") if b["started_at"] else ""
            )
            out.print(safe(f"  {b['build_id']}  {b['status']}  {b['collection']}  {started}"), highlight=False)
    if temporal_view is None:
        out.print(
            f"(statuses from the job store: no Temporal server answers at {safe(temporal.current_address(address))})",
            highlight=False,
        )


@commands.command("show")
def job_show(job_id: str, json_out: Annotated[bool, typer.Option("--json")] = False, full: FullOpt = False) -> None:
    """A job's stored record: status, plan, latest checkpoint or result, Web UI and trace file."""
    try:
        row = store().get(job_id)
    except QuarryError as err:
        fail(err)
    if json_out:
        print_json({k: v for k, v in row.items() if k != "state"} | {"web_ui": temporal.web_ui(job_id)})
        return
    if row.get("result"):
        render_result(
            row["result"], web_ui=temporal.web_ui(job_id), trace_file=trace_file(row.get("trace_id")), full=full
        )
        return
    state = row.get("state") or {}
    out.print(
        safe(f"{job_id} · {row['status']} · {row['collection']} · round {row['round']}\nintent: {row['intent']}"),
        highlight=False,
    )
    for item in state.get("plan", {}).get("checklist", []):
        out.print(safe(f"  [{item['kind']}] {item['text']}"), highlight=False)
    if line := usage_line(state.get("usage")):
        out.print(f"usage (at the last checkpoint): {safe(line)}", highlight=False)
    if ui := temporal.web_ui(job_id):
        out.print(f"Web UI: {safe(ui)}", highlight=False)
    out.print(f"trace:  {safe(trace_file(row.get('trace_id')))}", highlight=False)


@commands.command("progress")
def job_progress(
    job_id: str, address: AddressOpt = None, json_out: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Ask a running job where it is (round, node, top 5, budget); a dense index build its batches."""
    if is_dense_build(job_id):
        p = dense_build_progress(job_id, address)
        print_json(p) if json_out else out.print(terminal_safe(dense_progress_line(p)), markup=False, highlight=False)
        return
    row = known_job(job_id)
    if row and row["status"] in FINAL and row.get("result"):
        out.print(
            safe(f"{job_id} has finished ({row['status']}); its result: quarry job result {job_id}"), highlight=False
        )
        return

    try:
        p = progress_of(job_id, address)
    except QuarryError as err:
        if err.code != "worker_warming_up":
            fail(err)
        waiting = WorkerWarmingUp.of(job_id, row)  # informational: the job waits, nothing failed
        print_json(waiting.as_json()) if json_out else out.print(
            terminal_safe(waiting.line()), markup=False, highlight=False
        )
        return
    print_json(p) if json_out else render_progress(p)


@commands.command("watch")
def job_watch(job_id: str, address: AddressOpt = None) -> None:
    """Follow a job live, round by round, until it ends (re-attach at any time); a durable dense
    index build (`dense-…`, from `quarry index NAME --dense`) batch by batch."""
    if is_dense_build(job_id):
        watch_dense_build(job_id, address)
        return
    row = known_job(job_id)
    if row and row["status"] in FINAL and row.get("result"):
        render_result(
            row["result"], web_ui=temporal.web_ui(job_id, address), trace_file=trace_file(row.get("trace_id"))
        )
        return

    def emit(line: str) -> None:
        out.print(line, markup=False, highlight=False)

    async def main():
        client = await temporal.client(address)
        return await final(
            watch(WithStepDetail(client.get_workflow_handle(job_id), job_id, emit), emit), job_id, address
        )

    result = temporal_run(main(), job_id, address)
    render_result(result, web_ui=temporal.web_ui(job_id, address), trace_file=trace_file((row or {}).get("trace_id")))
    exit_for(result)


def watch_dense_build(build_id: str, address: str | None) -> None:
    """`job watch` of a durable dense index build: a line per change of its progress, then its outcome."""
    from quarry.app.dense_build import watch_build

    def emit(line: str) -> None:
        out.print(terminal_safe(line), markup=False, highlight=False)

    async def main() -> dict[str, Any]:
        return await watch_build(await temporal.client(address), build_id, emit)

    try:
        result = temporal.attempt(main(), build_id, address)
    except QuarryError as err:
        fail(err)
    meta = result["meta"]
    out.print(
        safe(
            f"dense index of {result['collection']} built: {meta['chunks']:,} chunks of {meta['documents']:,} documents "
            f"in {meta['built_seconds']:.1f} s ({result['embedded_batches']} batches embedded, "
            f"{result['reused_batches']} reused)"
        ),
        highlight=False,
    )


@commands.command("result")
def job_result(
    job_id: str,
    wait: Annotated[bool, typer.Option("--wait")] = False,
    json_out: Annotated[bool, typer.Option("--json")] = False,
    full: FullOpt = False,
    address: AddressOpt = None,
) -> None:
    """A job's final result (from the job store, or wait for it)."""
    try:
        row, result = result_so_far(job_id, address, look=not wait)
    except QuarryError as err:
        fail(err)
    if result is None and wait and row["status"] not in FINAL:

        async def main():
            client = await temporal.client(address)
            return await final(client.get_workflow_handle(job_id).result(), job_id, address)

        result = temporal_run(main(), job_id, address)
        row = known_job(job_id) or row
        if (
            not row.get("result")
            and row["status"] in FINAL
            and not result.get("ranked")
            and result.get("status") in CUT_SHORT
        ):
            result = None  # it ended while we waited, without building a result: said below
    if result is None and row["status"] in FINAL:  # terminated (or failed) before it built a result
        render_ended(row, json_out)
        raise typer.Exit(1)
    if result is None:
        fail(
            QuarryError(
                "not_finished",
                f"job {job_id} is {row['status']} (round {row['round']})",
                f"wait for it: quarry job result {job_id} --wait",
            )
        )
    result = result | {"web_ui": temporal.web_ui(job_id, address), "trace_file": trace_file(row.get("trace_id"))}
    print_json(result) if json_out else render_result(
        result, web_ui=result["web_ui"], trace_file=result["trace_file"], full=full
    )
    exit_for(result)


@commands.command("export")
def job_export(
    job_id: str,
    fmt: Annotated[str, typer.Option("--format", help="bibtex, ris, csl-json, csv or markdown")] = "bibtex",
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="File to write (default: stdout); name a CSL-JSON file *.json, the "
            "extension pandoc reads it by (refs.bib, refs.ris, refs.json)",
        ),
    ] = None,
) -> None:
    """A finished job's ranked documents as BibTeX, RIS, CSL-JSON or CSV, or the job as a Markdown report."""
    try:
        row = store().get(job_id)
        result = row.get("result")
        if not result:
            raise QuarryError(
                "not_finished",
                f"job {job_id} is {row['status']}; there is no result to export yet",
                f"wait for it: quarry job result {job_id} --wait",
            )
        text = exported(result, fmt)
        if output is not None:
            write_atomic(output, text)  # a full disk or a kill leaves the previous file, never half of one
    except QuarryError as err:
        fail(err)
    except OSError as err:
        fail(
            disk_full(err)
            or QuarryError("cannot_write", f"cannot write {output}: {err.strerror}", "choose another --output path")
        )
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        console.print(f"wrote {len(result.get('ranked', []))} documents as {fmt} to {safe(output)}", highlight=False)
        from quarry.exports.job_export import suffix_hint

        if (hint := suffix_hint(fmt, output)) is not None:
            console.print(terminal_safe(hint), markup=False, highlight=False)


def dense_build_progress(build_id: str, address: str | None) -> dict[str, Any]:
    """A dense index build's answer to its `progress` query (its outcome's stage once it ended),
    with Temporal's status of it (`quarry.app.dense_start.build_status`)."""
    from quarry.app.dense_start import build_status

    try:
        return build_status(build_id, address)
    except QuarryError as err:
        fail(err)
