"""Terminal output shared by the commands: rich console, progress bars, error exit."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from stores.error_catalogue import exit_status
from stores.errors import QuarryError, printable

if TYPE_CHECKING:  # the readers and rich's progress bars load with the first bar, not with every command
    from rich.progress import ProgressColumn

    from stores.readers import ProgressFn

console = Console(stderr=True, soft_wrap=True, emoji=False)  # never hard-wrap paths in error messages
out = Console(soft_wrap=True, emoji=False)


def fail(err: QuarryError) -> NoReturn:
    """Print a QuarryError as one message and its hint, then exit: its message can carry a user's
    path, docid or intent, so it goes through `safe` like any other untrusted text."""
    console.print(f"[bold red]error[/] [dim]({safe(err.code)})[/]: {safe(err.message)}", highlight=False)
    if err.hint:
        console.print(f"[yellow]hint[/]: {safe(err.hint)}", highlight=False)
    raise typer.Exit(exit_status(err.code))  # 2, or 1 for a job not in a state for it


def terminal_safe(text: object) -> str:
    """Untrusted text for a line printed with markup off: every character a terminal would obey
    (stores.errors.UNPRINTABLE) shown as a visible escape such as `\\x1b` instead."""
    return printable(text)


def safe(text: object) -> str:
    """The one escaping path for user and corpus text (intents, docids, titles, quotes, paths,
    error messages) in a rich line printed with markup on: control characters made visible and
    rich markup escaped, so `[/z]` is shown as written instead of raising a MarkupError and an
    escape sequence is shown instead of obeyed."""
    return escape(terminal_safe(text))


# Characters `json.dumps(ensure_ascii=False)` leaves raw although a terminal obeys them (it already
# writes C0 controls as \u00XX): DEL, C1, bidi controls, line/paragraph separators, surrogates.
_JSON_RAW = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def json_line(obj: Any) -> str:
    """`obj` as one line of exact JSON; non-ASCII text stays readable, but the characters in
    `_JSON_RAW` are written as \\uXXXX escapes (they can only occur inside JSON strings, where the
    escape decodes to the same character)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(obj, ensure_ascii=False))


def print_json(obj: Any) -> None:
    """One JSON object on one line (the last line of output), for scripts."""
    sys.stdout.write(json_line(obj) + "\n")
    sys.stdout.flush()


def done_of_total() -> ProgressColumn:
    """A progress column showing `done/total` as a count, or as sizes for a stage followed in bytes
    (stores.readers.BYTE_STAGES: "1.2 GB/2.4 GB", not "1200000000/2400000000"). Built on first use
    so that a command drawing no bar never imports rich's progress machinery."""
    from rich.filesize import decimal
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class DoneOfTotal(ProgressColumn):
        def render(self, task: Task) -> Text:
            done, total = int(task.completed), None if task.total is None else int(task.total)
            if task.fields.get("bytes"):
                return Text(
                    f"{decimal(done)}/{decimal(total) if total is not None else '?'}", style="progress.download"
                )
            return Text(f"{done}/{total if total is not None else '?'}", style="progress.download")

    return DoneOfTotal()


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[ProgressFn]:
    """A ProgressFn drawing one bar per stage on stderr (silent when output is not a TTY)."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from stores.readers import BYTE_STAGES

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description:<10}"),
        BarColumn(),
        done_of_total(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not enabled,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(stage, total=total, bytes=stage in BYTE_STAGES)
        progress.update(tasks[stage], completed=done, total=total)

    with progress:
        yield update
