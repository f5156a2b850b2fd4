"""The worker's warm-up status, so no command mistakes a warming worker for a missing one.

A worker opens its indexes and models before it polls (14–25 s on a laptop): a job submitted
meanwhile waits, and a query to it (`quarry job progress`) times out. Without this, the CLI then
said "no worker answered … start one: quarry worker", inviting a second worker. So the worker
writes QUARRY_HOME/run/warming-<pid>.json (its identity, as the process records of
`workflows.processes.background` keep it, and when it began) before warming up and removes it once it
polls, when it records itself as polling instead; a command that gets no answer reads them
(`worker_state`), trusting each only while that very process runs: a worker warming up, one still
starting, and one polling that does not answer (unresponsive: paused, stopped, overloaded) are each
said as what they are — none of them is "no worker", and none means the job has finished.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from stores.atomic import write_atomic


def _path(home: Path, pid: int, kind: str = "warming") -> Path:
    return Path(home) / "run" / f"{kind}-{pid}.json"


def _mark(home: Path, kind: str) -> Path:
    """Record this process's status `kind` with its identity (atomic: a reader sees all or nothing)."""
    from workflows.processes.background import identity

    run = Path(home) / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    pid = os.getpid()
    data: dict = {"pid": pid, "since": time.time()}
    if (ident := identity(pid)) is not None:
        data |= {"start_time": ident.start_time, "cmdline": list(ident.cmdline)}
    path = _path(home, pid, kind)
    write_atomic(path, json.dumps(data), mode=0o600)
    return path


def mark_warming(home: Path) -> Path:
    """Record that this process is warming up."""
    return _mark(home, "warming")


def clear_warming(home: Path) -> None:
    """This process is polling (or stopping): it is warming up no more. It is recorded as past its
    warm-up (`run/polling-<pid>.json`), so a worker that then does not answer is told apart from
    one still starting (`worker_state`)."""
    _mark(home, "polling")
    _path(home, os.getpid()).unlink(missing_ok=True)


def warming_for(home: Path) -> float | None:
    """Seconds the longest-warming live worker of this home has been warming up, or None when no
    live worker is (a status left by a process that is gone, or whose pid now runs another
    process, is removed)."""
    from workflows.processes.background import record_alive

    longest: float | None = None
    run = Path(home) / "run"
    for path in run.glob("warming-*.json") if run.is_dir() else ():
        if record_alive(Path(home), path) is None:
            path.unlink(missing_ok=True)
            continue
        try:
            since = float(json.loads(path.read_text())["since"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        so_far = max(0.0, time.time() - since)
        longest = so_far if longest is None else max(longest, so_far)
    return longest


def warming_message(home: Path) -> str | None:
    """What to say instead of "no worker answered" while this home's worker warms up."""
    so_far = warming_for(home)
    if so_far is None:
        return None
    return f"the worker is warming up ({so_far:.0f} s so far); the job starts when it is ready"


@dataclass(frozen=True)
class WorkerState:
    """What this home's worker processes are doing, for a job whose worker did not answer.

    `warming_s`: the longest warm-up under way (None: none); `polling`: the pids of live workers
    past their warm-up — one that does not answer is unresponsive, not missing; `stopped`: those of
    them the kernel holds stopped (SIGSTOP, a debugger, Ctrl+Z); `starting`: a worker this home
    started in the background that has not begun its warm-up yet (still loading Quarry)."""

    warming_s: float | None = None
    polling: tuple[int, ...] = ()
    stopped: tuple[int, ...] = ()
    starting: int | None = None


def _process_stopped(pid: int) -> bool:
    """Whether the kernel holds the process stopped (state T or t in /proc/PID/stat)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")


def _live(home: Path, kind: str) -> list[int]:
    """The pids of live processes with a `kind` status file (files of gone processes are removed)."""
    from workflows.processes.background import record_alive

    run = Path(home) / "run"
    pids = []
    for path in sorted(run.glob(f"{kind}-*.json")) if run.is_dir() else ():
        pid = record_alive(Path(home), path)
        if pid is None:
            path.unlink(missing_ok=True)
        else:
            pids.append(pid)
    return pids


def worker_state(home: Path) -> WorkerState:
    """This home's workers as their status files and the kernel describe them (see WorkerState)."""
    from workflows.processes.background import pid_of

    warming = warming_for(home)
    warming_pids = set(_live(home, "warming"))
    polling = tuple(p for p in _live(home, "polling") if p not in warming_pids)
    background = pid_of(Path(home), "worker")
    starting = (
        background if background is not None and background not in warming_pids and background not in polling else None
    )
    return WorkerState(warming, polling, tuple(p for p in polling if _process_stopped(p)), starting)
