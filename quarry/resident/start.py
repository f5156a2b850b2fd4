"""Starting the resident searcher (quarry.resident.server) in the background, recorded like the other
background processes (workflows.processes.background: its pid, start time and command line).

The command line starts it without waiting (`spawn`, after its own in-process answer): it warms up
once that command has ended. A caller that needs it answering — a benchmark, a test — starts it with
`start_ready`, which waits on a pipe the searcher writes one byte to once it listens: no polling.
It imports nothing of Quarry at import time (the client, which starts it, imports its record name).
"""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path

from stores.settings import HOME

RECORD_NAME = "resident"  # its record, QUARRY_HOME/run/resident.pid (workflows.processes.background)


def _command(collection: str | None, after: int | None, ready_fd: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "quarry.resident.server"]
    cmd += ["--after", str(after)] if after else []
    cmd += ["--warm", collection] if collection else []
    cmd += ["--ready-fd", str(ready_fd)] if ready_fd is not None else []
    return cmd


def spawn(home: Path, collection: str | None, after: int | None = None) -> None:
    """Start this home's resident searcher; with `after`, it warms up once that process has ended."""
    from workflows.processes.background import spawn_detached

    os.environ[HOME.name] = str(home)  # the command line's own process: its root sets the same
    # Recorded at once, so `quarry down` right after this command finds it (a copy that then finds
    # another one running gives the record back to that one: quarry.resident.server._leave_to).
    spawn_detached(home, RECORD_NAME, _command(collection, after, None))


def start_ready(home: Path, collection: str | None, wait_s: float) -> bool:
    """Start this home's resident searcher and wait until it listens (at most `wait_s`): True then;
    False when it left first (another one of this home runs already, or it could not start)."""
    from workflows.processes.background import spawn_detached

    read_end, write_end = os.pipe()
    before = os.environ.get(HOME.name)
    os.environ[HOME.name] = str(home)  # for the searcher only: this process's setting is put back
    try:
        proc = spawn_detached(
            home, RECORD_NAME, _command(collection, None, write_end), record=False, pass_fds=(write_end,)
        )
        os.close(write_end)
        write_end = -1
        ready, _, _ = select.select([read_end], [], [], wait_s)
        said = os.read(read_end, 1) if ready else b""
        if not said:
            proc.poll()
        return said == b"1"
    finally:
        if before is None:
            os.environ.pop(HOME.name, None)
        else:
            os.environ[HOME.name] = before
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
