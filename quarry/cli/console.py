"""The command line's one error exit: a QuarryError printed as one message and its hint, then the
command's exit status. The consoles and escaping it prints through are quarry.app.terminal."""

from __future__ import annotations

from typing import NoReturn

import typer

from quarry.app.terminal import console, safe
from stores.error_catalogue import exit_status
from stores.errors import QuarryError


def fail(err: QuarryError) -> NoReturn:
    """Print a QuarryError as one message and its hint, then exit: its message can carry a user's
    path, docid or intent, so it goes through `safe` like any other untrusted text."""
    console.print(f"[bold red]error[/] [dim]({safe(err.code)})[/]: {safe(err.message)}", highlight=False)
    if err.hint:
        console.print(f"[yellow]hint[/]: {safe(err.hint)}", highlight=False)
    raise typer.Exit(exit_status(err.code))  # 2, or 1 for a job not in a state for it
