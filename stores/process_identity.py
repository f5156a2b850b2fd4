"""Who a pid is: the start time /proc gives a running process, so that a record naming a pid is
never trusted once that process is gone and another took its number. Used by the scratch area
(whose folders name their owner) and by the background processes' records."""

from __future__ import annotations

import os
from pathlib import Path


def running_since(pid: int) -> str | None:
    """The start time (clock ticks since boot) of the running process `pid`; None when none runs
    under it, it is a zombie, or /proc cannot tell. Unlike a command line (empty while a process
    exits), it holds until the process is gone, and a later process under the same pid has another."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except (OSError, ValueError):
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the name in (...) may hold spaces and parentheses
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # fields[0] is field 3 (state), [19] field 22
        return None
    return fields[19]


def proc_readable() -> bool:
    """Whether this system has /proc to tell processes apart (else a pid is all there is)."""
    return Path("/proc/self/stat").is_file()


def pid_runs(pid: int) -> bool:
    """Whether a process runs under `pid` (one of another user's counts: it is there)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    return True
