"""Background processes Quarry starts (`quarry run` → server and worker; `quarry down` stops
them): stopping one waits until it has exited, so nothing of it still runs or writes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from workflows.processes.background import alive, pid_of, spawn_detached, stop_detached

# A stand-in for a worker's graceful stop: on SIGTERM it takes a moment, writes, then exits.
GRACEFUL = """
import pathlib, signal, sys, time
def stop(*_):
    time.sleep(0.5)
    pathlib.Path(sys.argv[1]).write_text("flushed")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
pathlib.Path(sys.argv[1] + ".ready").write_text("ready")
while True:
    time.sleep(1)
"""
STUBBORN = """
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1] + ".ready").write_text("ready")
while True:
    time.sleep(1)
"""


def _start(home: Path, script: str, marker: Path) -> int:
    proc = spawn_detached(home, "worker", [sys.executable, "-c", script, str(marker)])
    ready = Path(str(marker) + ".ready")
    while not ready.exists():  # the handler is installed before the file is written
        assert proc.poll() is None, (home / "logs" / "worker.log").read_text()
        time.sleep(0.01)
    return proc.pid


def test_stopping_waits_for_a_graceful_exit(tmp_path: Path) -> None:
    marker = tmp_path / "flushed"
    pid = _start(tmp_path, GRACEFUL, marker)
    assert pid_of(tmp_path, "worker") == pid
    assert stop_detached(tmp_path, "worker")
    assert marker.read_text() == "flushed", "it returned before the process had finished its stop"
    assert not alive(pid) and pid_of(tmp_path, "worker") is None


def test_a_process_that_ignores_the_stop_is_killed_after_the_wait(tmp_path: Path) -> None:
    pid = _start(tmp_path, STUBBORN, tmp_path / "stubborn")
    assert stop_detached(tmp_path, "worker", wait_s=1.0)
    assert not alive(pid)
    assert not stop_detached(tmp_path, "worker"), "nothing is left to stop"
