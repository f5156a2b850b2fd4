"""The one renderer of "chunks embedded" progress for every command that embeds: a bar on a
terminal, plain lines with rate and time left in a log or a pipe, nothing under --json."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from quarry.app.terminal import console, terminal_safe
from workflows.dense_progress import duration_text

if TYPE_CHECKING:  # types only: rich's progress bars load with the first bar, not with every command
    from rich.console import Console
    from rich.progress import ProgressColumn

    from stores.file_formats.corpus_reader import ProgressFn

PLAIN_PROGRESS_EVERY_S = 10.0  # plain progress lines (stderr not a terminal: logs, pipes) at least this often…
PLAIN_PROGRESS_EVERY_PCT = 10  # …and at every this many percent


class PlainProgress:
    """A ProgressFn writing plain lines (for a log or a pipe, where a bar would be noise): the
    start, every PLAIN_PROGRESS_EVERY_PCT percent or PLAIN_PROGRESS_EVERY_S seconds, whichever
    comes first, and the end; each with the count, the share, the rate and the time left."""

    def __init__(
        self,
        emit: Callable[[str], None],
        *,
        unit: str = "chunks",
        note: str = "",
        every_pct: int = PLAIN_PROGRESS_EVERY_PCT,
        every_s: float = PLAIN_PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit, self.unit, self.note = emit, unit, note
        self.every_pct, self.every_s, self.clock = every_pct, every_s, clock
        self._stage: str | None = None
        self._started = self._said_at = 0.0
        self._first = self._said_pct = 0
        self._ended = False

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = self.clock()
        if stage != self._stage:
            self._stage, self._started, self._first, self._said_at, self._said_pct = stage, now, done, 0.0, -1
            self._ended = False
        end = total is not None and done >= total
        pct = done * 100 // total if total else 0
        first = self._said_pct < 0
        crossed = self.every_pct > 0 and pct // self.every_pct > self._said_pct // self.every_pct
        if (end and self._ended) or not (first or end or crossed or now - self._said_at >= self.every_s):
            return
        self._said_at, self._said_pct, self._ended = now, pct, end
        self.emit(self.line(stage, done, total, now))

    def line(self, stage: str, done: int, total: int | None, now: float) -> str:
        count = (
            f"{stage} {done:,}/{total:,} {self.unit} ({done * 100 // total}%)"
            if total
            else f"{stage} {done:,} {self.unit}"
        )
        took = now - self._started
        rate = (done - self._first) / took if took > 0 else 0.0
        parts = [count]
        if rate > 0:
            parts.append(f"{rate:,.1f} {self.unit}/s")
            if total and done < total:
                parts.append(f"about {duration_text((total - done) / rate)} left")
        elif total and done >= total and took > 0:
            parts.append(f"in {duration_text(took)}")
        return " · ".join(parts) + (f" {self.note}" if self.note else "")


def rate_column(unit: str) -> ProgressColumn:
    """A column showing '42.0 chunks/s' (blank until rich has a speed); built with the first bar."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{task.speed:,.1f} {unit}/s" if task.speed else "", style="progress.data.speed")

    return RateColumn()


@contextmanager
def embedding_progress(
    *,
    quiet: bool = False,
    note: str = "",
    unit: str = "chunks",
    terminal: bool | None = None,
    to: Console | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[ProgressFn]:
    """The one renderer of "chunks embedded" progress, for every command that embeds (`index
    --dense`, a semantic search without a dense index): on a terminal a bar on stderr with
    done/total, rate and time left; otherwise plain lines (`PlainProgress`); nothing with `quiet`
    (--json: stdout carries only the result and stderr stays clean). Stores report through the
    ProgressFn; they never print."""
    to = to or console
    if quiet:
        yield lambda stage, done, total: None
        return
    if not (to.is_terminal if terminal is None else terminal):
        yield PlainProgress(
            lambda line: to.print(terminal_safe(line), markup=False, highlight=False), unit=unit, note=note, clock=clock
        )
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        rate_column(unit),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=to,
        transient=False,
        get_time=clock,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield update
