"""The background processes a home starts and `quarry down` stops: its records, checks and stops.

`quarry server`/`quarry run` start this home's Temporal dev server and its worker detached (in
sessions of their own, under umask 077, logs in QUARRY_HOME/logs), so they outlive the command
that started them. Each leaves a record, QUARRY_HOME/run/<name>.pid, by which later commands find
it and `quarry down` stops it; a record of a process that is gone is removed.

A pid alone does not name a process for long: after a reboot or enough process churn the same
number belongs to something else. So each record (JSON) keeps the process's identity as well —
its start time (field 22 of /proc/<pid>/stat, in clock ticks since boot) and its command line —
and a record is trusted, and its process signalled, only while the process under that pid still
has both. A record whose pid runs another process is stale: it is removed, said, and that process
is left alone. Records written before identities were kept (a bare pid) are trusted only while the
pid runs this home's own server (on its database) or worker.

A process is stopped with SIGTERM to its process group (a worker finishes what it holds and
flushes its spans), SIGKILL after a grace period, and waited for by its start time until it is
gone: once `stop_detached` returns, nothing of it still runs or writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from stores import settings
from stores.atomic import write_atomic
from stores.home import ensure_home
from stores.process_identity import pid_runs, proc_readable, running_since

# The dev server's own record (pid, ports), kept by workflows.processes.dev_server beside its pid file and
# removed with it here.
SERVER_RECORD = "temporal-server.json"


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a child of this process that exited is reaped here: a zombie
    does not run)."""
    if not pid_runs(pid):
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:  # not our child: kill(0) answered for it
        return True


def run_dir(home: Path) -> Path:
    """QUARRY_HOME/run, where the records of a home's background processes are kept."""
    path = ensure_home(home) / "run"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def pidfile(home: Path, name: str) -> Path:
    return run_dir(home) / f"{name}.pid"


@dataclass(frozen=True)
class Identity:
    """What names one process for its whole life: its start time since boot and its command line."""

    start_time: str
    cmdline: tuple[str, ...]


def identity(pid: int) -> Identity | None:
    """The identity of the running process `pid` (None when there is none, or it is a zombie)."""
    start = running_since(pid)
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    if start is None or start != running_since(pid):
        return None
    args = raw.split(b"\0")
    if args and args[-1] == b"":
        args.pop()
    return Identity(start, tuple(a.decode("utf-8", "surrogateescape") for a in args))


def looks_like_quarry(home: Path, name: str, pid: int, cmdline: tuple[str, ...] | list[str]) -> bool:
    """Whether process `pid` (running `cmdline`) is one this home's Quarry starts as `name` — for
    records that kept only a pid: the server on this home's database, a worker of this home."""
    args = list(cmdline)
    if name == "temporal-server":
        return (
            bool(args)
            and Path(args[0]).name == "temporal"
            and args[1:3] == ["server", "start-dev"]
            and any(args[i : i + 2] == ["--db-filename", str(home / "temporal.db")] for i in range(len(args)))
        )
    if name != "worker" or not (
        any(args[i : i + 3] == ["-m", "quarry", "worker"] for i in range(len(args)))
        or any(Path(a).name == "quarry" and args[i + 1 : i + 2] == ["worker"] for i, a in enumerate(args))
    ):
        return False
    try:  # its home: QUARRY_HOME in its environment, else ./.quarry of its working folder
        env = dict(
            item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item
        )
        raw = env.get(os.fsencode(settings.HOME.name), b"").decode("utf-8", "surrogateescape")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except (OSError, ValueError):
        return False
    return (cwd / Path(raw).expanduser() if raw else cwd / ".quarry").resolve() == Path(home).resolve()


@dataclass(frozen=True)
class _Record:
    pid: int
    ident: Identity | None  # None: a record from before identities were kept


def _write_record(home: Path, name: str, pid: int, cmd: list[str]) -> None:
    # A process in the middle of its exec shows an empty command line for a moment: read it
    # once it shows (what it runs as is what later checks compare), else keep the one started.
    deadline, ident = time.monotonic() + 2.0, identity(pid)
    while ident is not None and not ident.cmdline and time.monotonic() < deadline:
        time.sleep(0.005)
        ident = identity(pid)
    if ident is not None and not ident.cmdline:
        ident = Identity(ident.start_time, tuple(cmd))
    data: dict = {"pid": pid}
    if ident is not None:
        data |= {"start_time": ident.start_time, "cmdline": list(ident.cmdline)}
    write_atomic(pidfile(home, name), json.dumps(data), mode=0o600)


def _read_record(path: Path) -> _Record | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, int) and not isinstance(data, bool):  # the old format: a bare pid
        return _Record(data, None) if data > 0 else None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int) or data["pid"] <= 0:
        return None
    if isinstance(data.get("start_time"), str) and isinstance(data.get("cmdline"), list):
        return _Record(data["pid"], Identity(data["start_time"], tuple(str(a) for a in data["cmdline"])))
    return _Record(data["pid"], None)


def _verdict(home: Path, name: str, record: _Record) -> str:
    """'same' when the process under the record's pid is the one the record was written for,
    'other' when that pid now runs another process, 'gone' when nothing (or a process on its
    way out, whose command line already reads empty) runs under it."""
    if not alive(record.pid):
        return "gone"
    if not proc_readable():  # no /proc (not Linux): the pid is all there is to go on
        return "same"
    now = identity(record.pid)
    if now is None:
        return "gone"
    if record.ident is None:  # a bare pid from an older Quarry: trusted only if it looks like ours
        if not now.cmdline:
            return "gone"
        return "same" if looks_like_quarry(home, name, record.pid, now.cmdline) else "other"
    if now.start_time != record.ident.start_time:
        return "other"
    if not now.cmdline:
        return "gone"
    return "same" if now.cmdline == record.ident.cmdline else "other"


def _checked(home: Path, name: str, say: Callable[[str], None] | None = None) -> _Record | None:
    """The record of background process `name` if that very process still runs; otherwise the
    record is removed (and, when its pid now runs another process, `say` is told so)."""
    path = pidfile(home, name)
    if not path.exists():
        return None
    record = _read_record(path)
    verdict = _verdict(home, name, record) if record is not None else "gone"
    if verdict == "same":
        return record
    path.unlink(missing_ok=True)
    if name == "temporal-server":
        (run_dir(home) / SERVER_RECORD).unlink(missing_ok=True)
    if verdict == "other" and say is not None and record is not None:
        say(
            f"the {name} record ({path}) was stale: pid {record.pid} is now another process, "
            "which was left alone; the record is removed"
        )
    return None


def pid_of(home: Path, name: str, say: Callable[[str], None] | None = None) -> int | None:
    """The pid of a background process this home started, if that process still runs (a record
    of a process that is gone, or whose pid now runs something else, is removed; `say` is told
    about the second)."""
    record = _checked(home, name, say)
    return record.pid if record is not None else None


def spawn_detached(
    home: Path, name: str, cmd: list[str], record: bool = True, pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen:
    """Start a background process that outlives this command; logs go to QUARRY_HOME/logs.
    It runs under umask 077 (what it creates — the Temporal database, the job store, traces —
    is its owner's alone) and its record keeps its identity (see the module's doc). With
    `record=False` the process writes its own record (`record_process`) once it knows it is the one
    that stays — the resident searcher, of which a second copy started at the same moment leaves.
    `pass_fds` are inherited (the resident searcher's readiness pipe)."""
    logs = ensure_home(home) / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(logs / f"{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "ab") as log:
        _private(fd)
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=os.environ.copy(),
            umask=0o077,
            pass_fds=pass_fds,
        )
    if record:
        _write_record(home, name, proc.pid, [str(c) for c in cmd])
    return proc


def record_process(home: Path, name: str, pid: int) -> None:
    """Record running process `pid` as background process `name` of `home` (pid, start time,
    command line): the resident searcher records itself, or the copy that stays (see spawn_detached)."""
    _write_record(home, name, pid, [])


def recorded_pid(home: Path, name: str) -> int | None:
    """The pid the record of `name` names, whether or not that process still runs (None: no record)."""
    record = _read_record(pidfile(home, name))
    return record.pid if record is not None else None


def forget_self(home: Path, name: str) -> None:
    """Remove the record of background process `name` if it names this very process (a process
    leaving on its own, e.g. after its idle timeout; a newer one's record is left alone)."""
    path = pidfile(home, name)
    record = _read_record(path)
    if record is not None and record.pid == os.getpid() and _verdict(home, name, record) == "same":
        path.unlink(missing_ok=True)


def _private(fd: int) -> None:
    """Make an open file of ours readable by its owner only (one left 0644 by an older Quarry)."""
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
    except OSError:
        pass


STOP_WAIT_S = 20.0  # a worker's graceful stop (workflows.worker.SHUTDOWN_GRACE_S) and some slack


def stop_detached(home: Path, name: str, wait_s: float = STOP_WAIT_S, say: Callable[[str], None] | None = None) -> bool:
    """SIGTERM a background process Quarry started and wait until it has exited (a worker
    finishes what it holds and flushes its spans), SIGKILL after `wait_s`: when this returns,
    nothing of it still runs or writes. Only the process the record names is signalled: a
    record whose pid now runs another process is removed and `say` is told (see `pid_of`)."""
    record = _checked(home, name, say)
    pidfile(home, name).unlink(missing_ok=True)
    if name == "temporal-server":
        (run_dir(home) / SERVER_RECORD).unlink(missing_ok=True)
    if record is None:
        return False
    pid = record.pid
    # From here on the process is known by its start time: its command line reads empty while it exits.
    since = running_since(pid) if proc_readable() else None

    def running() -> bool:
        return alive(pid) and (since is None or running_since(pid) == since)

    def signal_it(sig: int) -> bool:
        if not running():
            return False
        try:  # its own process group (started in a session of its own): children go with it
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    if not signal_it(signal.SIGTERM):
        return False
    deadline, killed = time.monotonic() + wait_s, False
    while running():
        if not killed and time.monotonic() > deadline:
            signal_it(signal.SIGKILL)
            killed, deadline = True, time.monotonic() + 5.0
        elif killed and time.monotonic() > deadline:
            break  # not even SIGKILL ended it (uninterruptible I/O): nothing more to do from here
        time.sleep(0.05)  # polling a process that is not our child: there is nothing to wait on
    return True


def record_alive(home: Path, path: Path, name: str = "worker") -> int | None:
    """The pid a process record at `path` (JSON: pid, start_time, cmdline, as `_write_record`
    writes them, other fields ignored) names, if that very process still runs; else None. For
    status files a process writes about itself, such as the worker's warm-up status."""
    record = _read_record(path)
    if record is None or _verdict(home, name, record) != "same":
        return None
    return record.pid
