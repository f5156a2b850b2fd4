"""Between-batch control of a long step inside a node: stop early, keep what was done, say how far.

A node body runs in a thread (nodes.job.heartbeat) while the job's stop, its budget steer and the
activity's cancellation reach only the event loop (the workflow's progress query, Temporal's
cancellation). The wrapper on the loop learns of them and calls `stop(reason)`; a long loop in the
thread (embedding batches: stores.chunk_vectors via nodes.rounds.semantic_filter) asks `why()` between
batches and ends early when it answers, keeping what it computed. A stop can only land between
batches, so the loop keeps each one short (stores.chunk_vectors bounds a batch by text and by the
measured pace, not by a count of chunks that may each be long). `report()` passes progress out
(the job store and heartbeat details for `job progress`, a bar for the command line).

The current step is a context variable: `asyncio.to_thread` copies it into the node's thread, and
code outside any wrapper (the command line, a test) gets a step that never stops by itself.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

ProgressSink = Callable[[str, int, int], None]

# Why a step stopped, as a person reads it (tool notes, search labels).
REASONS = {
    "stopped": "the job was asked to stop",
    "budget_steer": "the job is submitting its answer (budget steer)",
    "steered": "the job was steered (the next round takes the steering)",
    "deadline": "the job's time budget ran out",
    "budget_exhausted": "the job's time budget ran out",
    "cancelled": "the step was cancelled",
}


# Reasons that end the job's work, not just redirect it: a steer ("budget_steer", "steered") still
# wants the model's next answer, these do not.
ENDING = ("stopped", "cancelled", "budget_exhausted", "deadline")


def reason_text(reason: str) -> str:
    return REASONS.get(reason, reason)


@dataclass
class StepControl:
    """One node call's stop flag, deadline and progress sink (thread-safe: one writer per field)."""

    deadline: float | None = None  # wall-clock seconds (`clock()`) after which the step stops
    on_progress: ProgressSink | None = None  # (stage, done, total)
    clock: Callable[[], float] = time.time
    active: bool = False  # a long loop has started (the wrapper polls the job only then)
    progress_text: str = ""
    _reason: str = ""
    _event: threading.Event = field(default_factory=threading.Event)
    _given: set[str] = field(default_factory=set)  # every reason given, the first one aside

    def stop(self, reason: str) -> None:
        """Ask the running loop to end at its next batch; the first reason given is kept."""
        self._given.add(reason)
        if not self._reason:
            self._reason = reason
        self._event.set()

    def ended(self) -> str:
        """'' unless the job's work is over — stopped, cancelled, out of time (`ENDING`) — even when
        a steer came first; for waits that a steer must not cut short (a model's rate limit)."""
        if self.deadline is not None and self.clock() >= self.deadline:
            self._given.add("deadline")
        return next((r for r in ENDING if r in self._given), "")

    def why(self) -> str:
        """'' while the step may go on, else why it must stop ('stopped', 'deadline', …)."""
        if self._event.is_set():
            return self._reason
        if self.deadline is not None and self.clock() >= self.deadline:
            self.stop("deadline")
            return self._reason
        return ""

    def wait(self, timeout_s: float) -> bool:
        """Block until a stop is asked for (True) or `timeout_s` passed (False); for stand-ins in tests."""
        return self._event.wait(timeout_s)

    def report(self, stage: str, done: int, total: int) -> None:
        """Progress of the long loop ("embedding", 320, 1200); marks the step active."""
        self.active = True
        self.progress_text = f"{stage} {done:,}/{total:,} chunks"
        if self.on_progress is not None:
            self.on_progress(stage, done, total)


_current: contextvars.ContextVar[StepControl | None] = contextvars.ContextVar("quarry_step", default=None)


def current_step() -> StepControl:
    """The running node call's step control (a fresh, never-stopping one outside any)."""
    return _current.get() or StepControl()


@contextmanager
def using_step(step: StepControl) -> Iterator[StepControl]:
    """Make `step` current in this context (and in threads started from it with `asyncio.to_thread`)."""
    token = _current.set(step)
    try:
        yield step
    finally:
        _current.reset(token)
