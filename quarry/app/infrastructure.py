"""Infrastructure bootstrap for `quarry run`: this home's embedded Temporal dev server and
background worker, started when missing and the worker restarted when the model settings or
Quarry's code changed since it started (digests only: never a value, never a file's content)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from quarry.app.temporal import current_address
from quarry.app.terminal import console, safe, terminal_safe
from stores import settings
from stores.atomic import write_atomic
from stores.errors import QuarryError
from workflows.processes.background import pid_of, spawn_detached, stop_detached
from workflows.processes.dev_server import reachable, server_record, start_server
from workflows.shared import task_queue


def say_note(line: str) -> None:
    console.print(terminal_safe(f"note: {line}"), markup=False, highlight=False)


def is_loopback(address: str) -> bool:
    return address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "::1", "[::1]")


def configured_ui_port() -> int:
    """The embedded server's Web UI port when no --ui-port was given: QUARRY_UI_PORT (a user's
    setting, only read here), else the default."""
    return settings.ui_port()


def worker_alive(home: Path) -> bool:
    """Whether the worker this home started still runs — that very process, not whatever now has
    its pid (a stale record is removed and said, and `quarry run` then starts a worker)."""
    return pid_of(home, "worker", say=say_note) is not None


# The environment a worker's model clients read. A worker started before the user exported a
# key (or pointed OPENAI_BASE_URL elsewhere) would call the wrong endpoint, so `quarry run`
# restarts the background worker when these differ. Only a digest is kept, never a value.
MODEL_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_URL",
    "OLLAMA_HOST",
)


def model_env_digest() -> str:
    raw = "\0".join(f"{k}={os.environ.get(k, '')}" for k in MODEL_ENV)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


# The packages a worker runs. A background worker started before Quarry was upgraded (or its
# code edited) would go on running the old code for every later job, so `quarry run` restarts it
# when their files changed. Sizes and modification times only: no file is read.
CODE_PACKAGES = ("stores", "nodes", "graphs", "workflows", "observability", "quarry")


def code_digest() -> str:
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((root / package).glob("**/*.py")):
            st = path.stat()
            h.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def spawn_worker(home: Path, address: str | None = None) -> None:
    """A background worker of this home; `address` is the command's --temporal-address (the
    worker gets it as its own option; without one it resolves the server as every command does)."""
    from observability.exporter_settings import record_worker_settings  # lazy: observability costs ~40 ms

    spawn_detached(
        home,
        "worker",
        [sys.executable, "-m", "quarry", "worker", *(["--temporal-address", address] if address else [])],
    )
    write_atomic(home / "run" / "worker.models", model_env_digest(), mode=0o600)
    write_atomic(home / "run" / "worker.code", code_digest(), mode=0o600)
    record_worker_settings(home)  # the worker writes it too; here so the next command never reads an old one


def ensure_infrastructure(home: Path, address: str | None = None, ui_port: int | None = None) -> None:
    """Start the embedded dev server and a worker when none is there (embedded defaults).
    `address` is the command's --temporal-address, `ui_port` its --ui-port (None: not given)."""
    explicit, address = address, current_address(address)
    ui_port = ui_port or configured_ui_port()
    if not reachable(address):
        if not is_loopback(address):
            raise QuarryError(
                "no_server",
                f"no Temporal server at {address}",
                "check the address, or unset QUARRY_TEMPORAL_ADDRESS to use the embedded server",
            )
        port = int(address.rsplit(":", 1)[1])
        console.print(
            f"starting the embedded Temporal dev server on {safe(address)} (Web UI :{ui_port}) …", highlight=False
        )
        start_server(home, port, ui_port)
    elif (record := server_record(home)) is None or record.address != address:
        console.print(
            f"[yellow]note[/]: the Temporal server at {safe(address)} was not started by this home "
            f"({safe(home)}); its jobs run on this home's task queue {safe(task_queue(home))}, so they stay apart",
            highlight=False,
        )
    if worker_alive(home):
        digest = home / "run" / "worker.models"
        if digest.is_file() and digest.read_text().strip() != model_env_digest():
            console.print(
                "restarting the background worker: the model settings in this shell "
                "(OPENAI_*, ANTHROPIC_*, OLLAMA_HOST) changed since it started …"
            )
            stop_detached(home, "worker", say=say_note)
    if worker_alive(home):
        code = home / "run" / "worker.code"  # absent: a worker spawned by a Quarry older than this record
        if not code.is_file() or code.read_text().strip() != code_digest():
            console.print(
                "restarting the background worker: Quarry's code changed since it started "
                "(an upgrade or an edit); running jobs go on with the new one …"
            )
            stop_detached(home, "worker", say=say_note)
    if worker_alive(home):
        from observability.exporter_settings import worker_settings_note  # lazy: observability costs ~40 ms

        if note := worker_settings_note(home):  # its spans go where its own settings say, not this shell's
            console.print(f"[yellow]warning[/]: {safe(note)}", highlight=False)
    if not worker_alive(home):
        console.print(
            "starting a Quarry worker in the background (logs: "
            f"{safe(home / 'logs' / 'worker.log')}; stop both with `quarry down`) …",
            highlight=False,
        )
        spawn_worker(home, explicit)
