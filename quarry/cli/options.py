"""Options and habits the command line's commands share: the --temporal-address option, and a
Temporal conversation whose failure ends the command with its one message."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Annotated, Any

import typer

from quarry.app import temporal
from quarry.cli.console import fail
from stores import settings
from stores.errors import QuarryError

AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--temporal-address",
        envvar=settings.TEMPORAL_ADDRESS.name,
        help="Temporal frontend host:port (default: the server this home started, if it runs, else 127.0.0.1:7233)",
    ),
]


def temporal_run(coro: Coroutine[Any, Any, Any], job_id: str | None = None, address: str | None = None) -> Any:
    """`attempt`, its failure printed as the command's one message (exit 2)."""
    try:
        return temporal.attempt(coro, job_id, address)
    except QuarryError as err:
        fail(err)
