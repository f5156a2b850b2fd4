"""The job store lets go of its database files when it is closed or dropped.

Why it matters: POSIX record locks belong to a process, and closing any descriptor of a file
drops all of that process's locks on it. A connection left open in a long process (a test run, a
notebook) therefore loses its SQLite locks the moment anything else in that process reads the
file, and it may then read the write-ahead log through a stale index: rows other processes
committed are missing. CPython's sqlite3 connection is kept alive by a reference cycle, so without
an explicit close it lingers until a cyclic collection.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

from stores.jobs import JobStore


def open_descriptors(path: Path) -> int:
    """How many of this process's file descriptors point at `path` or its -wal/-shm files."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(str(path))
    return count


def test_a_dropped_store_closes_its_connections_without_the_garbage_collector(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    gc.disable()  # the collector must not be what closes them
    try:
        store = JobStore(path)
        store.create("job-1", "c", "intent", workflow_id="job-1", trace_id=None)
        assert open_descriptors(path) > 0
        del store
        assert open_descriptors(path) == 0
    finally:
        gc.enable()


def test_close_closes_every_threads_connection_and_the_store_reopens_on_use(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    with JobStore(path) as store:
        store.create("job-1", "c", "intent", workflow_id="job-1", trace_id=None)
        worker = threading.Thread(target=lambda: store.checkpoint("job-1", {"round": 2}))
        worker.start()
        worker.join()
        assert open_descriptors(path) >= 2, "the main thread's and the worker thread's connections"
    assert open_descriptors(path) == 0
    assert store.get("job-1")["round"] == 2, "a closed store opens a new connection when used again"
    store.close()
    assert open_descriptors(path) == 0
