"""What `job progress` and `job watch` show besides the workflow's own progress: the running
node's long step (read from the job store, where the activity writes it) and a worker that is
still warming up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodes.llm.rate_limits import RATE_LIMIT_STAGE
from nodes.policy.registry import ONE_ROUND_NODE, ONE_ROUND_STEPS
from quarry.app.records import store
from quarry.app.terminal import terminal_safe
from stores.errors import QuarryError
from stores.home import quarry_home
from stores.job_events import snapshot
from workflows.processes.warmup import warming_for

STEP_LINE_EVERY_S = 5.0  # `job watch` repeats a running step's progress at most this often


def running_step(job_id: str, progress: dict[str, Any]) -> dict[str, Any] | None:
    """The running node's long step (node, stage, done, total) or None. The workflow's progress
    query cannot see inside an activity, so the step is read from the job store, where the
    activity writes it; a step of a node the job does not report running is over. (`running`
    names the nodes running now, a one-step round's standing for its steps, ONE_ROUND_STEPS; a
    worker older than it reports only `node`.)"""
    try:
        step = store().step(job_id)
    except QuarryError:
        return None
    running = set(progress.get("running") or [progress.get("node")])
    if ONE_ROUND_NODE in running or progress.get("node") == ONE_ROUND_NODE:
        running |= set(ONE_ROUND_STEPS)
    return step if step and step.get("node") in running else None


def with_round_so_far(job_id: str, progress: dict[str, Any]) -> dict[str, Any]:
    """The progress with what the running one-step round has done so far. The workflow knows a
    round's state only when the round is over; the round checkpoints each of its steps to the job
    store, so the candidates, top 5, searches and tool calls come from there while it runs."""
    if progress.get("node") != ONE_ROUND_NODE:
        return progress
    try:
        state = store().get(job_id)["state"] or {}
    except QuarryError:
        return progress
    if state.get("round") != progress.get("round") or state.get("node") not in ONE_ROUND_STEPS:
        return progress  # the round has checkpointed no step yet
    seen = snapshot(state, str(progress.get("status", "running")))
    return progress | {
        "candidates": seen["candidates"],
        "top": seen["top"][:5],
        "searches": seen["searches"],
        "tool_calls": int((state.get("stats") or {}).get("tool_calls", 0)),
    }


def step_text(step: dict[str, Any]) -> str:
    """A long step as one phrase ("semantic step: 240/1,200 chunks embedded (20%)"): the text
    `job progress` and `job watch` both show."""
    done, total = int(step.get("done") or 0), int(step.get("total") or 0)
    if step.get("stage") == RATE_LIMIT_STAGE:
        return f"waiting out the model's rate limit (retry {done} of at most {total})"
    if step.get("stage") != "embedding":
        return str(step.get("text") or "")
    share = f" ({done / total:.0%})" if total else ""
    return f"semantic step: {done:,}/{total:,} chunks embedded{share}"


def step_detail(job_id: str, progress: dict[str, Any]) -> str:
    """`step_text` of the job's running step, '' when none runs."""
    step = running_step(job_id, progress)
    return step_text(step) if step else ""


class WithStepDetail:
    """A job's workflow handle for the command line's `watch` that also prints the running step
    (`step_detail`) as "  now: …" — when it starts, every STEP_LINE_EVERY_S and when it ends —
    so a minute of embedding reads as work in `job watch` as it does in `job progress`.
    A snapshot that moves the job to a new round or node prints its header first (watch prints
    it after this query returns), so the step line waits for the next snapshot then."""

    def __init__(
        self, handle: Any, job_id: str, emit: Callable[[str], None], clock: Callable[[], float] | None = None
    ) -> None:
        self._handle, self._job_id, self._emit = handle, job_id, emit
        self._clock = clock or time.monotonic
        self._where: tuple | None = None
        self._shown, self._stage, self._shown_at = "", "", float("-inf")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    async def query(self, name: str, *args: Any, **kwargs: Any) -> Any:
        import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

        p = await self._handle.query(name, *args, **kwargs)
        if name == "progress" and isinstance(p, dict):
            p = await asyncio.to_thread(with_round_so_far, self._job_id, p)
            where = (p.get("round"), p.get("node"), p.get("steps"))
            moved, self._where = where != self._where, where
            step = await asyncio.to_thread(running_step, self._job_id, p)
            detail = step_text(step) if step else ""
            if step and detail and not moved and detail != self._shown:
                ended = int(step.get("done") or 0) >= int(step.get("total") or 0)
                if step.get("stage") != self._stage or ended or self._clock() - self._shown_at >= STEP_LINE_EVERY_S:
                    self._emit(terminal_safe(f"  now: {detail}"))
                    self._shown, self._stage, self._shown_at = detail, str(step.get("stage")), self._clock()
            if not step:
                self._stage = ""
        return p


@dataclass(frozen=True)
class WorkerWarmingUp:
    """`job progress` while this home's worker is still warming up (opening indexes, loading
    models: 14–25 s): the job waits for it, which is not a failure, so this is shown and the
    command exits 0 (no worker at all stays an error)."""

    job_id: str
    status: str  # the job store's status ("running" until the job ends)
    round: int | None
    collection: str | None
    warming_s: float | None  # how long the worker has been warming up, when it says

    @classmethod
    def of(cls, job_id: str, row: dict[str, Any] | None) -> WorkerWarmingUp:
        row = row or {}
        return cls(
            job_id,
            str(row.get("status") or "unknown to this home's job store"),
            row.get("round") if isinstance(row.get("round"), int) else None,
            row.get("collection"),
            warming_for(quarry_home()),
        )

    def line(self) -> str:
        where = " · ".join(
            filter(
                None,
                [self.job_id, self.status, self.collection, f"round {self.round}" if self.round is not None else ""],
            )
        )
        so_far = f", {self.warming_s:.0f} s so far" if self.warming_s is not None else ""
        return (
            f"{where}\nthe worker is warming up (opening indexes and loading models{so_far}); "
            f"the job goes on when it is ready — follow it: quarry job watch {self.job_id}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "status": self.status,
            "round": self.round,
            "collection": self.collection,
            "worker": "warming_up",
            "warming_seconds": round(self.warming_s, 1) if self.warming_s is not None else None,
        }
