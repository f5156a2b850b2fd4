"""Outside control of a running graph: stop, the budget's "submit now" steer, steering notes.

Routers consult a `Control` so that the same graph runs under Temporal (where the workflow's
signal/update handlers and timers set the flags) and in-process (tests, evaluation).
Under Temporal the control object is the running workflow instance's `control` attribute,
read deterministically from workflow state — never from the wall clock.
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


def use_local_control(control: Control) -> contextvars.Token:
    """Install a control for in-process runs (returns a token for `reset_local_control`)."""
    return _local.set(control)


def reset_local_control(token: contextvars.Token) -> None:
    _local.reset(token)


def current_control() -> Control:
    from temporalio import workflow

    if workflow.in_workflow():
        control = getattr(workflow.instance(), "control", None)
        if control is not None and hasattr(control, "answer_reason"):  # duck-typed: sandbox re-imports classes
            return control
    return _local.get() or Control()
