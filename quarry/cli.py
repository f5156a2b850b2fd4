"""`quarry` command line: the root command and its one error rule; every command is declared in
the module of its concern, on that module's own `commands` Typer, and composed here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit, TyperException

from quarry import (
    cli_collections,
    cli_eval,
    cli_job_control,
    cli_job_inspect,
    cli_mcp,
    cli_run,
    cli_search,
    cli_serve,
    cli_trace,
)
from quarry.console import fail
from stores.errors import QuarryError, disk_full
from stores.home import quarry_home
from workflows.process_exit import run_script


class _OneMessage(TyperGroup):
    """The `quarry` command group: a QuarryError that a command did not catch, or a full disk
    anywhere (a raw sqlite3.OperationalError or OSError 28 from a store write), ends the command
    with one message, its hint and exit 2 — the same for every command, and inside CliRunner too
    (which never reaches `main`'s run_script)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (Exit, Abort, TyperException):
            raise  # typer's own exits and usage errors: a fail() inside an `except` already printed its message
        except QuarryError as err:
            fail(err)
        except Exception as exc:  # only a full disk is translated; anything else re-raises
            if (full := disk_full(exc, home=quarry_home())) is not None:
                fail(full)
            raise


app = typer.Typer(
    cls=_OneMessage,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Quarry: durable agentic search over a corpus you own.",
)


@app.callback()
def root(
    home: Annotated[
        Path | None, typer.Option("--home", envvar="QUARRY_HOME", help="Data folder (indexes, jobs, traces).")
    ] = None,
) -> None:
    if home is not None:
        # The one environment variable the command line sets: QUARRY_HOME is the user's setting
        # (--home is its flag), read by every store, and inherited by the worker and the server
        # it spawns (`workflows.background_processes` recognises a worker of this home by it).
        os.environ["QUARRY_HOME"] = str(home.expanduser().resolve())


# The commands, in the order `quarry --help` lists them.
app.add_typer(cli_collections.commands)  # ingest, add, remove, index, collections
app.add_typer(cli_search.commands)  # search, read
app.add_typer(cli_eval.commands)  # eval, tune
app.add_typer(cli_run.commands)  # server, worker, down, run
app.add_typer(cli_trace.commands)  # trace
app.add_typer(cli_mcp.commands)  # mcp
app.add_typer(cli_serve.commands)  # serve
job = typer.Typer(no_args_is_help=True, help="Inspect and steer jobs.")
job.add_typer(cli_job_inspect.commands)  # list, show, progress, watch, result, export
job.add_typer(cli_job_control.commands)  # cancel, terminate, stop, steer, rerun
app.add_typer(job, name="job")


def main() -> None:
    """The `quarry` executable: run the command, then `leave` with its status (which skips the
    interpreter teardown that can crash once a Temporal client has run)."""
    run_script(lambda: app(prog_name="quarry"))
