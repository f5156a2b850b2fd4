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
from contextlib import contextmanager, suppress
from pathlib import Path

from stores.errors import QuarryError

LOCK_FILE = ".lock"


@contextmanager
def writer_lock(root: Path, name: str, *, drop_if_new: bool = False) -> Iterator[None]:
    """Hold the collection's writer lock for the block. With `drop_if_new`, a collection folder
    this call created is removed again when the block fails and left nothing but the lock file
    (a failed first ingest leaves no trace). A writer that locked a lock file removed meanwhile
    (its folder dropped so) notices and locks the new one instead: the lock is always the file at
    the path."""
    new = not root.exists()
    for _ in range(_RELOCKS):
        root.mkdir(parents=True, exist_ok=True)
        path = root / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise QuarryError(
                "collection_busy",
                f"collection {name!r} is being written by {holder}",
                "wait for that ingest or index build to finish, then run this again",
            ) from None
        if _is_file_at(fd, path):
            break
        os.close(fd)  # locked a lock file another writer removed: lock the one at the path now
    else:
        raise QuarryError("collection_busy", f"collection {name!r} kept changing while it was locked", "run this again")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()}".encode(), 0)
        yield
    except BaseException:
        if drop_if_new and new:
            with suppress(OSError):
                if os.listdir(root) == [LOCK_FILE]:
                    os.unlink(path)
                    os.rmdir(root)
        raise
    finally:
        os.close(fd)  # closing releases the lock


_RELOCKS = 5  # how often a writer retries when the lock file it locked was removed under it


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
