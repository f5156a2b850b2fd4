"""The command line's one error exit: a QuarryError printed as one message and its hint, then the
command's exit status. The consoles and escaping it prints through are quarry.app.terminal."""

from __future__ import annotations

from typing import NoReturn

import typer

from quarry.app.terminal import console, safe
from stores.errors import QuarryError

# Exit 2 is a usage or input error; 1 is a request that cannot apply to the job as it is now.
EXIT_CODES = {"job_finished": 1, "not_finished": 1}


def fail(err: QuarryError) -> NoReturn:
    """Print a QuarryError as one message and its hint, then exit: its message can carry a user's
    path, docid or intent, so it goes through `safe` like any other untrusted text."""
    console.print(f"[bold red]error[/] [dim]({safe(err.code)})[/]: {safe(err.message)}", highlight=False)
    if err.hint:
        console.print(f"[yellow]hint[/]: {safe(err.hint)}", highlight=False)
    raise typer.Exit(EXIT_CODES.get(err.code, 2))
