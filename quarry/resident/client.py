"""The `quarry` executable's first step: hand `quarry search` / `quarry read` to this home's resident
searcher (quarry.resident.server) when one answers, else run the command in-process as always.

Why here, before `quarry.cli`: the whole point is a command that answers in tens of milliseconds,
and importing the command line (typer, rich, the stores) alone costs several times a bare Python
start. So this module imports only the standard library's socket and JSON, understands just enough
of the arguments to know the command is a search or a read, and sends them unparsed: the resident
process runs them through the very same `quarry.cli.app`, so what it prints, and the exit status,
are what the in-process command would give (errors included).

Whenever that cannot be relied on the command runs in-process: the switch is off
(`QUARRY_RESIDENT=0`), the arguments are anything but a plain search or read, the socket path is
too long for AF_UNIX, the socket is missing, stale, not private or not this user's, or the
resident process answers garbage, says it cannot run the command the same way (its QUARRY_*
settings differ), or falls silent. When none answers and the collection exists, a resident
process is started in the background for the next command; it warms up only after this command
has ended, so the first command is no slower than before.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from quarry.resident.start import RECORD_NAME  # noqa: F401  (re-exported: quarry.resident.server reads it here)
from stores import settings as quarry_settings  # the standard library only (it says why)

SOCKET_NAME = "resident.sock"  # in QUARRY_HOME/run (0700), itself 0600
# Beside it, the running searcher's own limits (nodes.job.config.ResidentLimits) as it states them:
# the client reads how long to wait there rather than import the configuration (a third of its start).
LIMITS_NAME = "resident-limits.json"
# AF_UNIX addresses hold 108 bytes with the terminating NUL; a longer path cannot be bound or reached.
MAX_SOCKET_PATH = 107
COMMANDS = ("search", "read")
_VALUED = {"search": ("--offset", "--limit", "--k1", "--b", "--channel"), "read": ("--offset", "--limit")}
_FLAGS = ("--json",)
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


def parse(argv: list[str]) -> tuple[Path, list[str], str] | None:
    """(home, the arguments from the command on, collection) of a plain `search`/`read`, or None
    for anything else (help, other commands, options it does not know: typer says what is wrong)."""
    i, home_arg = 0, None
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--home" and i + 1 < len(argv):
            home_arg, i = argv[i + 1], i + 2
        elif argv[i].startswith("--home="):
            home_arg, i = argv[i][len("--home=") :], i + 1
        else:
            return None
    if i >= len(argv) or argv[i] not in COMMANDS:
        return None
    command, rest, positional = argv[i], argv[i + 1 :], []
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg in _VALUED[command]:
            if j + 1 >= len(rest):
                return None
            j += 2
            continue
        if arg in _FLAGS or (arg.split("=", 1)[0] in _VALUED[command] and "=" in arg):
            j += 1
            continue
        if arg.startswith("-") and arg != "-":
            return None  # --help, `--`, an unknown option, a query that reads as one: typer's to say
        positional.append(arg)
        j += 1
    if len(positional) != 2:
        return None
    raw = home_arg if home_arg is not None else quarry_settings.home()
    return Path(raw).expanduser().resolve(), argv[i:], positional[0]


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
    try:
        with open(home / "run" / LIMITS_NAME, encoding="utf-8") as fh:
            wait = json.load(fh).get("silence_s")
    except (OSError, ValueError, AttributeError):
        return None
    ok = isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 3600
    return float(wait) if ok else None


def _terminal() -> dict[str, object]:
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
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(silence_s)
        sock.connect(path)
        sock.sendall(json.dumps(request).encode("ascii"))
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
        reply = json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError):  # refused (a stale socket), timed out, cut off, not JSON
        return None
    finally:
        sock.close()
    return reply if isinstance(reply, dict) else None


def _spawn(home: Path, collection: str) -> None:
    """Start this home's resident searcher in the background (it warms up once this command ends)."""
    if not (home / "collections" / collection).is_dir() or "/" in collection or collection in (".", ".."):
        return  # nothing to keep warm: the in-process command says what is wrong
    from quarry.resident.start import spawn

    with contextlib.suppress(OSError):  # it cannot start: the commands run in-process, as they always could
        spawn(home, collection, after=os.getpid())


def answer(argv: list[str]) -> int | None:
    """The exit status of `argv` answered by the resident searcher (its output already written),
    or None: run the command in-process."""
    if switched_off():
        return None
    parsed = parse(argv)
    if parsed is None:
        return None
    home, args, collection = parsed
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
            "command": args[0],
            "collection": collection,
            "args": args,
            "settings": settings(),
            "terminal": _terminal(),
        }
        reply = _exchange(path, request, silence_s)
    if reply is None or "fallback" in reply:
        if reply is None:
            _spawn(home, collection)
        return None
    out, err, code = reply.get("stdout"), reply.get("stderr"), reply.get("code")
    if not (isinstance(out, str) and isinstance(err, str) and isinstance(code, int) and not isinstance(code, bool)):
        return None
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    sys.stderr.flush()
    return code


def main() -> None:
    """The `quarry` executable: a search or read answered by the resident searcher, else the
    command line in-process (`quarry.cli.main`)."""
    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from quarry.cli import main as in_process

    in_process()
