"""`quarry` command line: the root command and its one error rule; every command is declared in
the module of its concern, on that module's own `commands` Typer, and composed here.

Composed lazily (`_LazyGroup`): a command's module is imported, and its signatures read by typer,
when that command runs or a help screen lists it — so `quarry job list` never imports the modules
of search, ingest, eval, serve or MCP. Each group lists its modules' commands in the order of
`ROOT_MODULES` / `JOB_MODULES`, as `add_typer` would have.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit, TyperException
from typer.main import get_command_from_info

from quarry.cli.console import fail
from stores import settings
from stores.errors import QuarryError, disk_full
from stores.home import quarry_home
from workflows.processes.exit import run_script

# The modules whose `commands` make up each group, in the order its help lists them.
ROOT_MODULES = (
    "quarry.cli.collections",  # ingest, add, remove, index, collections
    "quarry.cli.search",  # search, read
    "quarry.cli.eval",  # eval, tune
    "quarry.cli.run",  # server, worker, down, run
    "quarry.cli.trace",  # trace
    "quarry.cli.mcp",  # mcp
    "quarry.cli.serve",  # serve
)
JOB_MODULES = (
    "quarry.cli.job_inspect",  # list, show, progress, watch, result, export
    "quarry.cli.job_control",  # cancel, terminate, stop, steer, rerun, mark
)


class _LazyGroup(TyperGroup):
    """A group whose commands come from `modules`, each imported on first need: looking a command
    up imports the modules in order until one declares it; listing them (help, a typo's
    suggestions) imports them all. The commands get the root's typer settings, as `add_typer`
    gives them."""

    modules: tuple[str, ...] = ()

    def _load(self, until: str | None = None) -> Any:
        loaded: dict[str, list[str]] = self.__dict__.setdefault("_loaded", {})
        for module in self.modules:
            if module not in loaded:
                built = [
                    get_command_from_info(
                        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
                    )
                    for info in importlib.import_module(module).commands.registered_commands
                ]
                self.commands.update({c.name: c for c in built if c.name})
                loaded[module] = [c.name for c in built if c.name]
            if until is not None and until in loaded[module]:
                return self.commands[until]
        return None

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return super().get_command(ctx, cmd_name) or self._load(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        self._load()
        lazy = [name for names in self.__dict__["_loaded"].values() for name in names]
        return lazy + [name for name in super().list_commands(ctx) if name not in lazy]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and super().get_command(ctx, args[0]) is None:
            self._load(args[0])  # an unknown name's suggestions are drawn from every command
        return super().resolve_command(ctx, args)


class _JobGroup(_LazyGroup):
    """`quarry job`: the commands that read a job, then those that act on it."""

    modules = JOB_MODULES


class _OneMessage(_LazyGroup):
    """The `quarry` command group: a QuarryError that a command did not catch, or a full disk
    anywhere (a raw sqlite3.OperationalError or OSError 28 from a store write), ends the command
    with one message, its hint and exit 2 — the same for every command, and inside CliRunner too
    (which never reaches `main`'s run_script)."""

    modules = ROOT_MODULES

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
        Path | None, typer.Option("--home", envvar=settings.HOME.name, help="Data folder (indexes, jobs, traces).")
    ] = None,
) -> None:
    if home is not None:
        # The one environment variable the command line sets: QUARRY_HOME is the user's setting
        # (--home is its flag), read by every store, and inherited by the worker and the server
        # it spawns (`workflows.processes.background` recognises a worker of this home by it).
        os.environ[settings.HOME.name] = str(home.expanduser().resolve())


# The commands: ROOT_MODULES' (listed first), then `job` with JOB_MODULES'.
job = typer.Typer(cls=_JobGroup, no_args_is_help=True, help="Inspect and steer jobs.")
app.add_typer(job, name="job")


def main() -> None:
    """The `quarry` executable: run the command, then `leave` with its status (which skips the
    interpreter teardown that can crash once a Temporal client has run)."""
    run_script(lambda: app(prog_name="quarry"))
