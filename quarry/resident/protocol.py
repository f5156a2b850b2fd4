"""What crosses the resident searcher's socket: one request per connection, one reply.

The client (quarry.resident.client) writes the request as plain JSON — it must not pay for building
these models — and the server checks it against them before running anything: a request that does
not fit is answered with a fallback (the client then runs the command in-process), never run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from quarry.resident.commands import Command, command_of


class Terminal(BaseModel):
    """How the client's output is shown: whether stdout/stderr are terminals, their encoding, and
    the environment rich reads to pick colours and width (quarry.resident.client.TERMINAL_VARS)."""

    model_config = ConfigDict(extra="forbid")

    stdout_tty: bool = False
    stderr_tty: bool = False
    encoding: str = Field(default="utf-8", max_length=40)
    env: dict[str, str] = Field(default_factory=dict)


class ResidentRequest(BaseModel):
    """A command for the resident process: `args` are the command line's own arguments from the
    command on (`search NAME QUERY --json`, `job list`), run unparsed by `quarry.cli.app`;
    `command` and `collection` say what the client read them as (quarry.resident.commands);
    `settings` are the client's QUARRY_* settings, which must be the server's own for the answer
    to be the same."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(max_length=40)
    collection: str | None = None
    args: list[str] = Field(min_length=1)
    settings: dict[str, str] = Field(default_factory=dict)
    terminal: Terminal = Field(default_factory=Terminal)

    def command_read(self) -> Command | None:
        """The command `args` is, read with the client's own table (quarry.resident.commands),
        when it is one the resident process answers and the one the request names; else None."""
        found = command_of(self.args)
        if found is None or (found.name, found.collection) != (self.command, self.collection):
            return None
        return found


class ResidentReply(BaseModel):
    """What the command printed on stdout and stderr, and its exit status."""

    stdout: str
    stderr: str
    code: int


class Fallback(BaseModel):
    """The server will not run this request; the client runs the command in-process."""

    fallback: str
