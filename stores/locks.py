"""One writer per collection: an exclusive, non-blocking lock on `collections/<name>/.lock`.

Ingest, re-index and dense builds take it; a second writer of the same collection fails at once
saying who holds it, instead of two writers racing. Readers take no lock: they read a complete
version (see `stores.home.CollectionPaths`). The lock is the kernel's (`fcntl.flock`), so it is
released when its holder exits, even by SIGKILL — a crashed ingest never leaves it stuck.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stores.errors import QuarryError

LOCK_FILE = ".lock"


@contextmanager
def writer_lock(root: Path, name: str) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise QuarryError(
                "collection_busy",
                f"collection {name!r} is being written by {holder}",
                "wait for that ingest or index build to finish, then run this again",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
