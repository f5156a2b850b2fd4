"""Outside control of a running job's graph: stop, the budget's "submit now" steer, steering notes.

It lives with the job's values at the nodes floor — plain flags and a context variable, no graph —
so the graphs' routers, the workflow that drives them and the in-process heartbeat
(nodes.job.heartbeat) all read it from below, and no node imports `graphs`.

Routers consult a `Control` so that the same graph runs under Temporal (where the workflow's
signal/update handlers and timers set the flags) and in-process (tests, evaluation). Whoever drives
a graph hands it its control explicitly: `use_control(control)` installs it in this module's
context variable for the code that runs from there on (the graph's tasks copy the context when
they are created), `reset_control(token)` takes it away again, and `current_control()` reads it.
The SearchJob workflow installs its own `control` at the start of its drive, so its signal and
update handlers and the graph's routers share one object, set deterministically from workflow
state — never from the wall clock. The workflow imports this module passed through Temporal's
sandbox (as it does the graphs), so both see the same context variable.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Control:
    stop_requested: bool = False
    submit_now: bool = False
    pause_requested: bool = False
    pending_steering: list[dict[str, Any]] = field(default_factory=list)

    def answer_reason(self) -> str:
        """Why the graph must go to answer now ('' if it may continue)."""
        if self.stop_requested:
            return "stopped"
        if self.submit_now:
            return "budget_steer"
        return ""

    def take_steering(self) -> list[dict[str, Any]]:
        notes, self.pending_steering = self.pending_steering, []
        return notes


_local: contextvars.ContextVar[Control | None] = contextvars.ContextVar("quarry_control", default=None)


def use_control(control: Control) -> contextvars.Token:
    """Install the control of the graph run about to start (returns a token for `reset_control`)."""
    return _local.set(control)


def reset_control(token: contextvars.Token) -> None:
    _local.reset(token)


def current_control() -> Control:
    """The control installed by whoever drives the running graph; a fresh one (nothing requested)
    when none was."""
    return _local.get() or Control()
