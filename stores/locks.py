"""One writer per collection: an exclusive, non-blocking lock on `collections/<name>/.lock`.

Ingest, re-index and dense builds take it; a second writer of the same collection fails at once
saying who holds it, instead of two writers racing. Readers take no lock: they read a complete
version (see `stores.home.CollectionPaths`). The lock is the kernel's (`fcntl.flock`), so it is
released when its holder exits, even by SIGKILL — a crashed ingest never leaves it stuck.

Self-tuning holds it too, for its whole run (it reads one version throughout, and a writer's
commit would prune that version under its searchers), and applies its choice with `reindex`
inside: a holder that says so (`reentrant`) lets writers called by its own thread in.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from stores.errors import QuarryError

LOCK_FILE = ".lock"
_held = threading.local()  # roots whose lock this thread holds as `reentrant`


@contextmanager
def writer_lock(
    root: Path, name: str, *, drop_if_new: bool = False, who: str = "process", reentrant: bool = False
) -> Iterator[None]:
    """Hold the collection's writer lock for the block. With `drop_if_new`, a collection folder
    this call created is removed again when the block fails and left nothing but the lock file
    (a failed first ingest leaves no trace). A writer that locked a lock file removed meanwhile
    (its folder dropped so) notices and locks the new one instead: the lock is always the file at
    the path. `who` names the writer for the message another writer gets (`<who> <pid>`).
    With `reentrant`, writer locks of the same collection taken inside the block by this thread
    enter at once (see the module doc); without it even this thread's second writer is refused."""
    held: set[str] = _held.__dict__.setdefault("roots", set())
    key = os.path.abspath(root)
    if key in held:
        yield
        return
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
                "wait for that ingest, index build or tuning to finish, then run this again",
            ) from None
        if _is_file_at(fd, path):
            break
        os.close(fd)  # locked a lock file another writer removed: lock the one at the path now
    else:
        raise QuarryError("collection_busy", f"collection {name!r} kept changing while it was locked", "run this again")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{who} {os.getpid()}".encode(), 0)
        if reentrant:
            held.add(key)
        yield
    except BaseException:
        if drop_if_new and new:
            with suppress(OSError):
                if os.listdir(root) == [LOCK_FILE]:
                    os.unlink(path)
                    os.rmdir(root)
        raise
    finally:
        held.discard(key)
        os.close(fd)  # closing releases the lock


_RELOCKS = 5  # how often a writer retries when the lock file it locked was removed under it


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
