"""Write a file so that a reader (or a crash) sees the old content or the new, never a part.

Every file Quarry rewrites on a live path goes through `write_atomic`: the content is written to
a temporary file in the same folder, flushed to disk, and renamed over the target (a rename
within one file system is atomic on POSIX), then the folder is flushed so the rename itself
survives a power cut. A kill at any point leaves the previous file whole (at worst a stray
`.NAME.*.tmp` beside it); a full disk fails before the rename and leaves the target untouched.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

_umask_lock = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the kernel tells it (Linux
    /proc/self/status), because `os.umask(0)` would briefly give every other thread's new files
    mode 0666 (job store, traces); elsewhere set and restore under a lock."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one atomic step.

    `mode` sets the new file's permission bits (default: what a plain write would give)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename is still atomic
        pass
    finally:
        os.close(fd)
