"""Terminal output shared by the commands: rich console, progress bars, error exit."""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from stores.errors import QuarryError
from stores.readers import ProgressFn

console = Console(stderr=True, soft_wrap=True, emoji=False)  # never hard-wrap paths in error messages
out = Console(soft_wrap=True, emoji=False)


# Exit 2 is a usage or input error; 1 is a request that cannot apply to the job as it is now.
EXIT_CODES = {"job_finished": 1, "not_finished": 1}


def fail(err: QuarryError) -> NoReturn:
    console.print(f"[bold red]error[/] [dim]({escape(err.code)})[/]: {escape(err.message)}", highlight=False)
    if err.hint:
        console.print(f"[yellow]hint[/]: {escape(err.hint)}", highlight=False)
    raise typer.Exit(EXIT_CODES.get(err.code, 2))


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    """Document text for a terminal: control characters (escape sequences, NUL, bells) shown as
    visible escapes instead of being obeyed by the terminal."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "\ufffd", text)


def print_json(obj: Any) -> None:
    """One JSON object on one line (the last line of output), for scripts."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[ProgressFn]:
    """A ProgressFn drawing one bar per stage on stderr (silent when output is not a TTY)."""
    progress = Progress(SpinnerColumn(), TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=False, disable=not enabled)
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(stage, total=total)
        progress.update(tasks[stage], completed=done, total=total)

    with progress:
        yield update
