"""Scratch space for the user's text: `QUARRY_HOME/tmp/`, never the system's temporary folder.

A parsed folder of documents (`stores.file_formats.document_files` spools their text), a self-tuning run's
cloze queries, a simulation's copy of a collection: anything made from the user's documents is as
private as the collection itself, so it lives inside the (0700) home, not in a world-listable
`/tmp` where a killed process would leave it for anyone and forever.

Each scratch folder's name says who owns it: `<prefix><pid>-<start>-<random>`, `start` being the
process's start time since boot (field 22 of /proc/<pid>/stat), so a pid the kernel handed to
another process since is not taken for the owner. A scratch folder is removed by its owner when it
is done (or when the object holding it is dropped); one left by a process that was killed is
removed by `sweep`, which every new scratch folder runs first: a folder whose owner no longer runs
(no process under its pid, or one started at another time) goes. Without /proc (not Linux) the pid
is all there is, and a folder older than `SCRATCH_MAX_AGE_S` goes even while its pid runs.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stores.home import ensure_home
from stores.process_identity import pid_runs, proc_readable, running_since

SCRATCH_DIR = "tmp"
SCRATCH_MAX_AGE_S = 7 * 24 * 3600  # without /proc: a pid can be reused, so age ends a folder's claim
_NO_START = "x"  # the start time where /proc cannot tell it
_OWNER = re.compile(r"(?P<pid>\d+)-(?P<start>\d+|x)-[^-]+$")


def scratch_root(home: Path) -> Path:
    """`home/tmp`, created private (0700) with a private home."""
    root = ensure_home(Path(home)) / SCRATCH_DIR
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def _owner_alive(name: str, now: float, mtime: float) -> bool:
    """Whether the process a scratch folder's name records still runs (see the module doc)."""
    found = _OWNER.search(name)
    if found is None:
        return False  # not a name this module makes: nothing owns it
    pid, start = int(found["pid"]), found["start"]
    if proc_readable():
        return start != _NO_START and running_since(pid) == start
    return pid_runs(pid) and now - mtime < SCRATCH_MAX_AGE_S


def sweep(home: Path, *, now: float | None = None) -> list[str]:
    """Remove the scratch folders (and stray files) of processes that no longer run; return their
    names. Folders of running processes, this one's included, are left alone."""
    root = Path(home) / SCRATCH_DIR
    if not root.is_dir():
        return []
    now = time.time() if now is None else now
    gone = []
    for entry in root.iterdir():
        try:
            mtime = entry.lstat().st_mtime
        except OSError:
            continue  # removed meanwhile by another sweep
        if _owner_alive(entry.name, now, mtime):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        gone.append(entry.name)
    return gone


def _prefix(prefix: str) -> str:
    start = running_since(os.getpid()) or _NO_START
    return f"{prefix}{os.getpid()}-{start}-"


def held_scratch(home: Path, prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A new scratch folder under `home/tmp` (stale ones swept first) for an object to hold: it is
    removed by its `cleanup()`, or when it is dropped. Its `name` is the folder's path."""
    root = scratch_root(home)
    sweep(home)
    return tempfile.TemporaryDirectory(prefix=_prefix(prefix), dir=root)


@contextmanager
def scratch_dir(home: Path, prefix: str) -> Iterator[Path]:
    """A new scratch folder under `home/tmp` (stale ones swept first), removed when the block ends."""
    held = held_scratch(home, prefix)
    try:
        yield Path(held.name)
    finally:
        held.cleanup()


__all__ = ["SCRATCH_DIR", "held_scratch", "scratch_dir", "scratch_root", "sweep"]
