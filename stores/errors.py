"""Typed errors with a code and a repair hint.

Every failure a user can cause (bad input, missing index, unknown docid) is raised as a
`QuarryError` so the command line can print *what went wrong and what to do* and exit with a
stable status, instead of a stack trace.
"""

from __future__ import annotations

import errno
import re

# What a terminal would obey rather than show: C0 controls but tab and newline (ESC starts CSI and
# OSC sequences; BEL, CR and BS ring or overwrite), DEL, the C1 controls (U+009B is a one-byte CSI),
# the bidi embeddings, overrides and isolates that reorder a line ("Trojan Source", CVE-2021-42574),
# and lone surrogates (bytes that were not UTF-8, which cannot even be encoded). The one rule for
# every printed user or corpus text: quarry.app.terminal builds its escaping on it, quarry.exports.job_export strips it.
UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """`text` with every UNPRINTABLE character shown as a visible escape (`\\x1b`, `\\u202e`; a
    lone surrogate as U+FFFD), so printing it cannot move the cursor, retitle the window, ring,
    hide what came before or reorder the line."""
    return UNPRINTABLE.sub(lambda m: _visible(m.group()), str(text))


class QuarryError(Exception):
    """A user-facing failure: `code` is stable for scripts, `hint` says how to repair it."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


def error_record(err: QuarryError) -> dict[str, str]:
    """`{code, message, hint}`: how a failed job's result (and its ApplicationError's details)
    carries a QuarryError."""
    return {"code": err.code, "message": err.message, "hint": err.hint}


def error_line(error: object) -> str:
    """A job's `error` as one line: "CODE: message" for a record; a string (results stored before
    errors had codes, a terminator's reason) as it is; '' for none."""
    if isinstance(error, dict):
        code, message = str(error.get("code") or ""), str(error.get("message") or "")
        return f"{code}: {message}" if code else message
    return str(error) if error else ""


class IngestError(QuarryError):
    """Ingestion rejected the input; `problems` lists every bad record as `file:line: reason`."""

    def __init__(self, problems: list[str], hint: str = "") -> None:
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  … and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(
            "bad_input",
            f"ingest rejected {len(problems)} problem(s); nothing was changed:\n{shown}{more}",
            hint or "fix the records named above (file:line) and run the ingest again",
        )
        self.problems = problems


# errno values of a full disk (ENOSPC) and of an exhausted disk quota (EDQUOT).
_DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", 122)}
# A full disk as native code words it, where no errno reaches Python: the JVM's IOException in
# Anserini's log, Chroma's Rust core ("database or disk is full", "No space left on device (os
# error 28)"), SQLite's own message.
DISK_FULL_TEXT = re.compile(
    r"No space left on device|ENOSPC|errno[ =:]*28\b|os error 28\b|Disk quota exceeded|database or disk is full", re.I
)


def disk_full(exc: BaseException, home: object = None) -> QuarryError | None:
    """A full disk behind `exc` (itself or anything in its cause/context chain: an OSError with
    ENOSPC/EDQUOT, SQLite's "database or disk is full", or a native library's error that says so,
    `DISK_FULL_TEXT`) as one QuarryError naming the path when known (else the home it was writing
    under, `home`); None for any other failure.

    Why here: a full disk can surface from any store write (SQLite, a temporary file, Lucene's
    output), so the top-level handlers (the `quarry` command group, `run_script`) map it once
    instead of every writer. Stores write a new version and switch to it atomically, and SQLite
    rolls back a failed transaction, so nothing was changed.
    """
    import sqlite3

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        full_db = isinstance(current, sqlite3.OperationalError) and (
            getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(current)
        )
        native = not isinstance(current, (OSError, QuarryError)) and DISK_FULL_TEXT.search(str(current)) is not None
        if full_db or native or (isinstance(current, OSError) and current.errno in _DISK_FULL_ERRNOS):
            path = getattr(current, "filename", None)
            where = f" (writing {path})" if path else f" (writing under {home})" if home else ""
            return QuarryError(
                "disk_full",
                f"the disk is full{where}",
                "free space on the disk that holds QUARRY_HOME (or the path named) and run the "
                "command again; nothing was changed (a failed write leaves the previous version)",
            )
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return None
