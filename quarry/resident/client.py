"""The `quarry` executable's first step: hand a command the resident process answers — `quarry
search` / `read`, the job commands that only read (`job list`, `show`, `progress`, `result`),
`collections` and the help screens (quarry.resident.commands) — to this home's resident process
(quarry.resident.server) when one answers, else run the command in-process as always.

Why here, before `quarry.cli`: the whole point is a command that answers in tens of milliseconds,
and importing the command line (typer, rich, the stores) alone costs several times a bare Python
start. So this module imports only the standard library, understands just enough of the arguments
to know the command is one of those, and sends them unparsed: the resident process runs them
through the very same `quarry.cli.app`, so what it prints, and the exit status, are what the
in-process command would give (errors included). Anything else imports nothing more than this
module and its table.

Whenever that cannot be relied on the command runs in-process: the switch is off
(`QUARRY_RESIDENT=0`), the arguments are not one of those commands, the socket path is too long
for AF_UNIX, the socket is missing, stale, not private or not this user's, or the resident process
answers garbage, says it cannot run the command the same way (its QUARRY_* settings differ), or
falls silent. When none answers, a resident process is started in the background for the next
command — for a search or read when the collection exists, for the others when the home does; it
warms up only after this command has ended, so the first command is no slower than before.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from quarry.resident.commands import SEARCHES, Command, command_of
from quarry.resident.start import RECORD_NAME  # noqa: F401  (re-exported: quarry.resident.server reads it here)
from stores import settings as quarry_settings  # the standard library only (it says why)

SOCKET_NAME = "resident.sock"  # in QUARRY_HOME/run (0700), itself 0600
# Beside it, the running searcher's own limits (nodes.job.config.ResidentLimits) as it states them:
# the client reads how long to wait there rather than import the configuration (a third of its start).
LIMITS_NAME = "resident-limits.json"
# AF_UNIX addresses hold 108 bytes with the terminating NUL; a longer path cannot be bound or reached.
MAX_SOCKET_PATH = 107
# What typer's help and error screens read once, when they are first imported: the resident process
# answers only a client whose values are its own (it imported them with its own environment).
IMPORT_TIME_VARS = ("GITHUB_ACTIONS", "PY_COLORS", "FORCE_COLOR", "TERMINAL_WIDTH", "_TYPER_FORCE_DISABLE_TERMINAL")
# What decides how rich renders for the user's terminal: sent along, so the resident process
# renders the same colours and widths the in-process command would.
TERMINAL_VARS = (
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLUMNS",
    "LINES",
    "GITHUB_ACTIONS",
    "PY_COLORS",
    "TERMINAL_WIDTH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
)
SWITCH = quarry_settings.RESIDENT.name


def switched_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the resident searcher is turned off (`QUARRY_RESIDENT=0`, `false`, `no` or `off`)."""
    return not quarry_settings.resident(environ)


def settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The QUARRY_* settings that can change what a command prints (every one but the home, which
    the socket's place already fixes, and the switch itself): the resident process runs a command
    only when its own are the same."""
    own = quarry_settings.quarry_entries(environ)
    return {k: v for k, v in own.items() if k not in (quarry_settings.HOME.name, SWITCH)}


def parse(argv: list[str]) -> tuple[Path, list[str], Command] | None:
    """(home, the arguments from the command on, the command) of one the resident process answers,
    or None for anything else (other commands, options it does not know: typer says what is wrong)."""
    i, home_arg = 0, None
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--help":
        if argv[i] == "--home" and i + 1 < len(argv):
            home_arg, i = argv[i + 1], i + 2
        elif argv[i].startswith("--home="):
            home_arg, i = argv[i][len("--home=") :], i + 1
        else:
            return None
    command = command_of(argv[i:])
    if command is None:
        return None
    raw = home_arg if home_arg is not None else quarry_settings.home()
    return Path(raw).expanduser().resolve(), argv[i:], command


def socket_path(home: Path) -> str | None:
    """Where this home's resident searcher listens, or None when that path is too long for AF_UNIX."""
    path = str(home / "run" / SOCKET_NAME)
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def _private_socket(path: str) -> bool | None:
    """True for a socket of this user's that only they can use; None when there is none; False for
    anything else (not trusted, never connected to)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _stated_silence(home: Path) -> float | None:
    """How long the running searcher says to wait for a byte from it (None: it says nothing usable)."""
    import json

    try:
        with open(home / "run" / LIMITS_NAME, encoding="utf-8") as fh:
            wait = json.load(fh).get("silence_s")
    except (OSError, ValueError, AttributeError):
        return None
    ok = isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 3600
    return float(wait) if ok else None


def _terminal() -> dict[str, object]:
    import contextlib

    env = {k: os.environ[k] for k in TERMINAL_VARS if k in os.environ}
    out_tty, err_tty = sys.stdout.isatty(), sys.stderr.isatty()
    if (out_tty or err_tty) and "COLUMNS" not in env:  # rich asks the terminal; the resident process has none
        with contextlib.suppress(OSError):
            size = os.get_terminal_size((sys.stdout if out_tty else sys.stderr).fileno())
            if size.columns > 0:  # a terminal without a size (rich then assumes 80, as the resident process does)
                env |= {"COLUMNS": str(size.columns), "LINES": str(size.lines)}
    return {"stdout_tty": out_tty, "stderr_tty": err_tty, "encoding": sys.stdout.encoding or "utf-8", "env": env}


def _exchange(path: str, request: Mapping[str, object], silence_s: float) -> dict[str, object] | None:
    """Send one request, read the whole reply (leading keep-alive spaces allowed); None when
    nothing usable came back in time."""
    # _socket is the C module under `socket`: the wrapper imports `selectors` and builds enums
    # (3 ms, a tenth of a resident command), and nothing here needs them. Its errors are OSError.
    import _socket
    import json

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(silence_s)
        sock.connect(path)
        sock.sendall(json.dumps(request).encode("ascii"))
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
        reply = json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError):  # refused (a stale socket), timed out, cut off, not JSON
        return None
    finally:
        sock.close()
    return reply if isinstance(reply, dict) else None


def _spawn(home: Path, command: Command) -> None:
    """Start this home's resident process in the background (it warms up once this command ends):
    for a search or read of a collection that exists, opened at once; for another command, when
    the home exists (a help screen in a home never used starts nothing)."""
    import contextlib

    name = command.collection
    if command.words in SEARCHES:
        if name is None or not (home / "collections" / name).is_dir() or "/" in name or name in (".", ".."):
            return  # nothing to keep warm: the in-process command says what is wrong
    elif not home.is_dir():
        return
    from quarry.resident.start import spawn

    with contextlib.suppress(OSError):  # it cannot start: the commands run in-process, as they always could
        spawn(home, name, after=os.getpid())


def answer(argv: list[str]) -> int | None:
    """The exit status of `argv` answered by the resident searcher (its output already written),
    or None: run the command in-process."""
    if switched_off():
        return None
    parsed = parse(argv)
    if parsed is None:
        return None
    home, args, command = parsed
    path = socket_path(home)
    if path is None:
        return None
    trusted = _private_socket(path)
    if trusted is False:
        return None
    reply = None
    silence_s = _stated_silence(home)
    if trusted and silence_s is not None:
        request = {
            "command": command.name,
            "collection": command.collection,
            "args": args,
            "settings": settings(),
            "terminal": _terminal(),
        }
        reply = _exchange(path, request, silence_s)
    if reply is None or "fallback" in reply:
        if reply is None:
            _spawn(home, command)
        return None
    out, err, code = reply.get("stdout"), reply.get("stderr"), reply.get("code")
    if not (isinstance(out, str) and isinstance(err, str) and isinstance(code, int) and not isinstance(code, bool)):
        return None
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`| head`): exit 1, as the in-process command does
        return 1
    return code


def main() -> None:
    """The `quarry` executable: a command the resident process answers (a search, a read, a job
    or help screen that only reads), else the command line in-process (`quarry.cli.main`)."""
    code = answer(sys.argv[1:])
    if code is not None:
        # Everything is written and flushed, and this process holds nothing else (no files, no
        # exit handlers: the standard library only): the interpreter's teardown would only free
        # memory, a tenth of a resident command's time (3-4 ms here). os._exit skips it.
        os._exit(code)
    from quarry.cli import main as in_process

    in_process()
