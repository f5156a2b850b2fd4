"""The resident searcher: `python -m quarry.resident.server`, one per QUARRY_HOME, started in the
background by the first command it answers that found none (quarry.resident.client): a search, a
read, a job command that only reads, `collections`, a help screen (quarry.resident.commands).

It listens on QUARRY_HOME/run/resident.sock (0600, in the 0700 run folder; never a TCP port a web
page could reach), takes one JSON request per connection (`ResidentRequest`) and runs its arguments
through the command line's own `quarry.cli.app` — the same search and read functions, the same
checks, the same messages — with stdout and stderr captured and shown as the client's terminal
would show them (`terminal.captured`). What stays warm between commands is the JVM, the searchers
(`stores.lucene`), the imported tools and the embedder, and each collection's open stores
(`WarmCollections`). A collection is looked up by its current version on every command, so after
`quarry add`/`ingest`/`index` the next command reads the new version, as an in-process one would.

One at a time: commands run on the main thread (the stores' SQLite connections belong to the thread
that opened them; the captured output is the process's), while a second thread sends the client a
space every `keepalive_s` so it knows the command is being worked on. A second copy started at the
same moment finds the lock taken and leaves. It leaves after `idle_s` without a command, on SIGTERM
(`quarry down`), and removes its socket and record as it goes; a SIGKILL leaves both behind, which
the next command recognises as stale (the socket refuses) and replaces.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from nodes.job.config import RESIDENT_LIMITS, ResidentLimits
from quarry.resident.client import IMPORT_TIME_VARS, LIMITS_NAME, RECORD_NAME, TERMINAL_VARS, settings, socket_path
from quarry.resident.commands import Command
from quarry.resident.protocol import Fallback, ResidentReply, ResidentRequest, Terminal
from quarry.resident.terminal import captured
from stores.atomic import write_atomic
from stores.home import quarry_home
from stores.settings import RESIDENT
from workflows.processes.background import forget_self, record_process, recorded_pid, run_dir
from workflows.processes.exit import run_script


class _Stop(BaseException):
    """SIGTERM: leave now (a BaseException a command's own `except SystemExit` does not take)."""


class WarmCollections:
    """`quarry.app.search.collection_opener` in the resident process: each collection's stores kept
    open while its files are the ones opened — its current version, and in that version the same
    corpus store, Lucene and dense index folders and their settings files (`quarry index` can store
    new BM25 parameters, or a dense index, in place; a kill inside such a write leaves a damaged
    file the in-process command reports). Anything else opens afresh, as the in-process command does."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[tuple, Any]] = {}

    @staticmethod
    def _stamp(paths: Any) -> tuple:
        def seen(path: Path) -> tuple | None:
            try:
                st = path.stat()
            except OSError:
                return None
            return st.st_ino, st.st_mtime_ns, st.st_size

        def listing(folder: Path) -> tuple | None:  # its files as they are now: a settings file rewritten too
            try:
                with os.scandir(folder) as entries:
                    return tuple(sorted((e.name, seen(Path(e.path))) for e in entries))
            except OSError:
                return None

        return (
            paths.version,
            seen(paths.version_dir),
            seen(paths.corpus_db),
            listing(paths.lucene_dir),
            listing(paths.chroma_dir),
        )

    def __call__(self, name: str) -> Any:
        from stores.collection import Collection
        from stores.home import collection_paths

        stamp = self._stamp(collection_paths(name))  # a bad name: the same bad_name the command gives
        held = self._open.get(name)
        if held is not None and held[0] == stamp and stamp[0] is not None:
            return held[1]
        self._open.pop(name, None)  # the previous version is let go
        col = Collection(name)
        if stamp[0] is not None and self._stamp(col.paths) == stamp:
            self._open[name] = (stamp, col)
        return col


# Quarry's own packages: a process that keeps running while they change on disk (an update, a
# checkout) would answer with old code, or with old and new mixed once it imports a module late.
PACKAGES = ("quarry", "stores", "nodes", "graphs", "workflows", "observability", "tuning", "evals")


CODE_CHANGED = "Quarry's code changed since this searcher started"


def code_files() -> list[str]:
    """Every source file of Quarry's packages (listed once: an update changes files that exist)."""
    root = Path(__file__).resolve().parents[2]
    return [str(path) for package in PACKAGES for path in (root / package).rglob("*.py")]


def code_stamp(files: list[str]) -> dict[str, int]:
    """Those files' modification times (234 files: half a millisecond of stat calls)."""
    stamp = {}
    for path in files:
        with contextlib.suppress(OSError):
            stamp[path] = os.stat(path).st_mtime_ns
    return stamp


def _run(app: Any, request: ResidentRequest) -> ResidentReply:
    """Run the command's arguments through the command line, as the `quarry` executable would."""
    with captured(request.terminal) as (out, err):
        try:
            app.main(args=list(request.args), prog_name="quarry", standalone_mode=True)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return ResidentReply(stdout=out.getvalue(), stderr=err.getvalue(), code=code)


def _answer(app: Any, raw: bytes, own: dict[str, str], code: dict[str, int]) -> Fallback | ResidentReply:
    """The command's reply, or a fallback: the request is not one it takes, its settings or
    Quarry's code differ from what this process runs, or the command failed unexpectedly here."""
    from pydantic import ValidationError

    if code_stamp(list(code)) != code:
        return Fallback(fallback=CODE_CHANGED)

    try:
        # json, not pydantic's own parser: a query that is not UTF-8 reaches here as lone surrogates
        # (the client's arguments, escaped by json.dumps), which pydantic's parser rejects.
        request = ResidentRequest.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return Fallback(fallback="not a request this searcher takes")
    found = request.command_read()
    if found is None:
        return Fallback(fallback="not a request this searcher takes")
    if request.settings != own:
        return Fallback(fallback="its QUARRY_* settings differ from this searcher's")
    if {k: request.terminal.env.get(k) for k in IMPORT_TIME_VARS} != {k: os.environ.get(k) for k in IMPORT_TIME_VARS}:
        return Fallback(fallback="its terminal settings read at import differ from this searcher's")
    try:
        if not _answerable_now(found):
            return Fallback(fallback="its job has not ended: it is followed in-process")
        return _run(app, request)
    except Exception as exc:
        return Fallback(fallback=f"the command failed here ({type(exc).__name__})")


def _answerable_now(found: Command) -> bool:
    """False for a command answered only once its job has ended (quarry.resident.commands.ENDED_ONLY)
    whose job has not: following a running job, or stopping it, is the in-process command's."""
    from quarry.app.records import has_ended

    return found.ended_job is None or has_ended(found.ended_job)


def _read_request(conn: socket.socket, limits: ResidentLimits) -> bytes | None:
    conn.settimeout(limits.silence_s)
    chunks, size = [], 0
    try:
        while chunk := conn.recv(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limits.request_bytes:
                return None
    except OSError:
        return None
    return b"".join(chunks)


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (the socket is 0600 already; this is the second lock)."""
    try:
        _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except OSError:
        return False
    return uid == os.geteuid()


def _serve_one(
    conn: socket.socket, app: Any, own: dict[str, str], code: dict[str, int], limits: ResidentLimits
) -> bool:
    """Answer one connection; False once this process should leave (its code changed on disk)."""
    raw = _read_request(conn, limits) if _same_user(conn) else None
    if raw is None:
        return True
    lock, done = threading.Lock(), threading.Event()

    def keep_alive() -> None:
        while not done.wait(limits.keepalive_s):
            with lock:
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    beat = threading.Thread(target=keep_alive, daemon=True)
    beat.start()
    started = time.monotonic()
    try:
        reply = _answer(app, raw, own, code)
    finally:
        done.set()
        beat.join()
    # One line per command in its log (never the arguments: they are the user's queries).
    shown = {"code": reply.code} if isinstance(reply, ResidentReply) else {"fallback": reply.fallback}
    print(json.dumps({"served": round(time.monotonic() - started, 3)} | shown), file=sys.__stdout__, flush=True)
    with lock, contextlib.suppress(OSError):  # the client gave up: it runs the command itself
        conn.sendall(reply.model_dump_json().encode("utf-8"))
    return not (isinstance(reply, Fallback) and reply.fallback == CODE_CHANGED)


def _leave_to(home: Path, lock_fd: int) -> None:
    """A copy that found the lock taken leaves; if its starter recorded it (over the one that
    stays), the record is given back to the lock's holder, so `quarry down` stops that one."""
    if recorded_pid(home, RECORD_NAME) != os.getpid():
        return
    try:
        holder = int(os.pread(lock_fd, 32, 0) or b"0")
    except (OSError, ValueError):
        holder = 0
    if holder > 0:
        record_process(home, RECORD_NAME, holder)


def _wait_for(pid: int, timeout_s: float) -> None:
    """Until process `pid` (the command that started this one) has ended, at most `timeout_s`."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return  # gone already (or no pidfd here): nothing to wait for
    try:
        select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)


def _bind(path: str) -> socket.socket:
    """Listen on `path`, replacing a socket left by a resident searcher that was killed (this one
    holds the lock, so no other is alive to own it)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(16)
    return sock


def serve(
    after: int | None, warm: str | None, ready_fd: int | None = None, limits: ResidentLimits = RESIDENT_LIMITS
) -> int:
    """The resident searcher's life: lock, warm up, listen, answer until idle or stopped. It listens
    only once warm, so a socket that accepts is one that answers at once (until then a command runs
    in-process); `ready_fd`, when given, is told "1" then (quarry.resident.start.start_ready)."""
    code = code_stamp(code_files())  # before anything more is imported
    home = quarry_home()
    os.environ[RESIDENT.name] = "0"  # a command run here never hands itself on
    path = socket_path(home)
    if path is None:
        return 0  # a client would not reach it either
    lock_fd = os.open(run_dir(home) / "resident.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        _leave_to(home, lock_fd)  # another resident searcher of this home runs: it stays, this one leaves
        return 0
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, str(os.getpid()).encode())  # who holds the lock, for a copy that leaves (`_leave_to`)

    def stop(_sig: int, _frame: Any) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    inode = None
    try:
        record_process(home, RECORD_NAME, os.getpid())
        if after:
            _wait_for(after, limits.spawner_wait_s)
        app = _warm_up(warm, limits.warm_s)
        signal.signal(signal.SIGTERM, stop)  # the JVM, started since, installs its own handler
        own = settings()
        write_atomic(run_dir(home) / LIMITS_NAME, json.dumps({"silence_s": limits.silence_s}), mode=0o600)
        sock = _bind(path)
        inode = os.stat(path).st_ino
        if ready_fd is not None:
            os.write(ready_fd, b"1")
            os.close(ready_fd)
        sock.settimeout(limits.idle_s)
        while True:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                break
            with conn:
                if not _serve_one(conn, app, own, code, limits):
                    break  # the next command starts a searcher on the new code
            sock.settimeout(limits.idle_s)
    except _Stop:
        pass
    finally:
        try:
            if inode is not None and os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass
        forget_self(home, RECORD_NAME)
    return 0


# Searches run while warming up, in turn for `ResidentLimits.warm_s`: words most collections hold
# many of, so the JVM compiles the scoring loop and the reading of hits before a user's command
# needs them (measured on CACM, depth 1000: a search's Lucene part takes 7-14 ms for the first
# fifty searches of a process, 3-4 ms after a hundred and fifty).
WARM_QUERIES = ("system data program", "method time problem", "information analysis model", "the of and", "a")


def _warm_up(collection: str | None, warm_s: float) -> Any:
    """Import the command line and every command's module (the help screens list them all), and
    open `collection` with a few searches, so the JVM, the tools and its stores are loaded and
    compiled before the first command comes; the command line's group, to run commands."""
    import typer.main

    from quarry.app import search as app_search
    from quarry.cli import app

    app_search.collection_opener = WarmCollections()
    group = typer.main.get_command(app)
    started = time.monotonic()
    # This process's own terminal settings (typer's help screens read some once, at their import).
    own = Terminal(env={k: os.environ[k] for k in TERMINAL_VARS if k in os.environ})
    for words in (("--help",), ("job", "--help")):
        _run(group, ResidentRequest(command=" ".join(words), args=list(words), terminal=own))
    code, searched, opened = 0, 0, time.monotonic()
    while collection and (searched < len(WARM_QUERIES) or time.monotonic() - opened < warm_s):
        if searched == 1:
            opened = time.monotonic()  # the first search started the JVM and opened the index
        args = ["search", collection, WARM_QUERIES[searched % len(WARM_QUERIES)]]
        code = _run(group, ResidentRequest(command="search", collection=collection, args=args, terminal=own)).code
        searched += 1
    warmed = {"warmed": collection, "code": code, "searches": searched, "seconds": round(time.monotonic() - started, 2)}
    print(json.dumps(warmed), flush=True)
    return group


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="quarry.resident.server")
    parser.add_argument("--after", type=int, default=None, help="warm up once this process has ended")
    parser.add_argument("--warm", default=None, help="the collection to open while warming up")
    parser.add_argument("--ready-fd", type=int, default=None, help="write 1 to this pipe once listening")
    args = parser.parse_args(argv)
    # Like every Quarry program, through run_script: a QuarryError (a home that is not this user's)
    # is one line in its log and exit 2, not a traceback.
    run_script(lambda: sys.exit(serve(args.after, args.warm, args.ready_fd)))


if __name__ == "__main__":
    main()
