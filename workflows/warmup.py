"""The worker's warm-up status, so no command mistakes a warming worker for a missing one.

A worker opens its indexes and models before it polls (14–25 s on a laptop): a job submitted
meanwhile waits, and a query to it (`quarry job progress`) times out. Without this, the CLI then
said "no worker answered … start one: quarry worker", inviting a second worker. So the worker
writes QUARRY_HOME/run/warming-<pid>.json (its identity, as the process records of
`workflows.background_processes` keep it, and when it began) before warming up and removes it once it
polls; a command that gets no answer reads it, trusting it only while that very process runs.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from stores.atomic import write_atomic


def _path(home: Path, pid: int) -> Path:
    return Path(home) / "run" / f"warming-{pid}.json"


def mark_warming(home: Path) -> Path:
    """Record that this process is warming up (atomic: a reader sees all of it or nothing)."""
    from workflows.background_processes import identity

    run = Path(home) / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    pid = os.getpid()
    data: dict = {"pid": pid, "since": time.time()}
    if (ident := identity(pid)) is not None:
        data |= {"start_time": ident.start_time, "cmdline": list(ident.cmdline)}
    path = _path(home, pid)
    write_atomic(path, json.dumps(data), mode=0o600)
    return path


def clear_warming(home: Path) -> None:
    """This process is polling (or stopping): it is warming up no more."""
    _path(home, os.getpid()).unlink(missing_ok=True)


def warming_for(home: Path) -> float | None:
    """Seconds the longest-warming live worker of this home has been warming up, or None when no
    live worker is (a status left by a process that is gone, or whose pid now runs another
    process, is removed)."""
    from workflows.background_processes import record_alive

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
