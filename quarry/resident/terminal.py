"""A command's output captured in the resident searcher as the client's terminal would show it.

The command line prints through two rich consoles (`quarry.app.terminal.out` and `.console`) and through
sys.stdout/sys.stderr. Rich decides at a console's creation whether it writes to a terminal, with
which colours and how wide — from the file it writes to and the environment. So for each command the
two consoles are given, for its duration, the state of consoles created the way quarry.app.terminal
creates them but writing to buffers that report the client's terminals (`_Buffer.isatty`) and
reading the client's terminal environment: an error line is coloured exactly when it would have
been, and a pipe gets plain text, as in-process. The consoles typer makes for a help or usage
screen read the process environment when they are made, so for the command's duration that holds
the client's terminal variables (quarry.resident.client.TERMINAL_VARS) instead of this process's.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from quarry.resident.client import TERMINAL_VARS
from quarry.resident.protocol import Terminal


class _Buffer(io.StringIO):
    """Captured text that says whether the client's stream is a terminal, and its encoding."""

    def __init__(self, tty: bool, encoding: str) -> None:
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


@contextmanager
def captured(terminal: Terminal) -> Iterator[tuple[_Buffer, _Buffer]]:
    """(stdout, stderr) buffers that a command's output goes to while inside."""
    from rich.console import Console

    from quarry.app import terminal as shown

    out = _Buffer(terminal.stdout_tty, terminal.encoding)
    err = _Buffer(terminal.stderr_tty, terminal.encoding)
    env = dict(terminal.env)
    swaps = [
        (shown.out, Console(soft_wrap=True, emoji=False, file=out, _environ=env)),
        (shown.console, Console(stderr=True, soft_wrap=True, emoji=False, file=err, _environ=env)),
    ]
    saved = [dict(target.__dict__) for target, _ in swaps]
    try:
        for target, fresh in swaps:
            target.__dict__.update(fresh.__dict__)
        with redirect_stdout(out), redirect_stderr(err), _environment(env):
            yield out, err
    finally:
        for (target, _), state in zip(swaps, saved, strict=True):
            target.__dict__.clear()
            target.__dict__.update(state)


@contextmanager
def _environment(terminal_env: Mapping[str, str]) -> Iterator[None]:
    """os.environ with the client's terminal variables (and none of this process's) while inside."""
    saved = {name: os.environ.get(name) for name in TERMINAL_VARS}
    try:
        for name in TERMINAL_VARS:
            if name in terminal_env:
                os.environ[name] = terminal_env[name]
            else:
                os.environ.pop(name, None)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
