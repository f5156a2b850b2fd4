"""What the resident-process tests share: the real `quarry` executable with the resident process on or
off, the count of commands it ran (from its log), the byte-for-byte comparison of the two paths,
and a terminal of a given width (a pty) to run a command on."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

QUARRY = Path(sys.executable).parent / "quarry"


def quarry(home: Path, *args: str | bytes, resident: bool, **env: str) -> subprocess.CompletedProcess[bytes]:
    """The `quarry` executable, with the resident searcher on or off (QUARRY_RESIDENT); output as bytes."""
    environ = os.environ | {"QUARRY_RESIDENT": "1" if resident else "0"} | env
    return subprocess.run(
        [str(QUARRY), "--home", str(home), *args], capture_output=True, env=environ, timeout=600, check=False
    )


def served(home: Path) -> int:
    """Commands the resident process of `home` has run: its log has one `served` object per request,
    with the command's exit `code` when it ran it and a `fallback` when it handed it back (counted
    wherever it stands: the JVM may have written to the same log without a line break)."""
    log = home / "logs" / "resident.log"
    return len(re.findall(r'\{"served": [0-9.e-]+, "code"', log.read_text(errors="replace"))) if log.is_file() else 0


def fallbacks(home: Path) -> int:
    log = home / "logs" / "resident.log"
    return log.read_text(errors="replace").count('"fallback"') if log.is_file() else 0


def same_either_way(
    home: Path, *args: str | bytes, served_by_resident: bool = True, **env: str
) -> subprocess.CompletedProcess:
    """Run a command in-process and through the resident path; the two must match byte for byte (stdout,
    stderr, exit status), and the second must have been answered by the resident searcher (or not)."""
    before = served(home)
    alone = quarry(home, *args, resident=False, **env)
    assert served(home) == before, "QUARRY_RESIDENT=0 must keep the command in-process"
    handed = quarry(home, *args, resident=True, **env)
    assert (handed.stdout, handed.stderr, handed.returncode) == (alone.stdout, alone.stderr, alone.returncode)
    assert served(home) == before + (1 if served_by_resident else 0)
    return handed


def ingest(home: Path, source: Path, name: str) -> None:
    done = quarry(home, "ingest", str(source), "--name", name, resident=False)
    assert done.returncode == 0, done.stderr


def on_a_terminal(home: Path, *args: str, resident: bool, columns: int, **env: str) -> bytes:
    """What `quarry` writes to a terminal (stdout and stderr on one pty, `columns` wide; 0: a
    terminal that reports no size, as `script` gives one)."""
    main, other = os.openpty()
    fcntl.ioctl(other, termios.TIOCSWINSZ, struct.pack("HHHH", 40 if columns else 0, columns, 0, 0))
    environ = os.environ | {"QUARRY_RESIDENT": "1" if resident else "0", "TERM": "xterm-256color"} | env
    environ.pop("COLUMNS", None)
    proc = subprocess.Popen([str(QUARRY), "--home", str(home), *args], stdout=other, stderr=other, env=environ)
    os.close(other)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 1 << 16)
        except OSError:  # EIO: the command has ended and closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert proc.wait(timeout=600) is not None
    return shown
