"""Switching a SQLite file to WAL when several processes open it at once.

`PRAGMA journal_mode=WAL` needs the file to itself for a moment. When another process is creating
the same file's tables (two workers starting on a fresh home), SQLite can answer "database is
locked" at once instead of waiting out the busy timeout — it does so where waiting could deadlock —
and a worker then died at start-up (seen in a fresh-clone run of the dense drill). The switch is
persistent in the file, so it is simply tried again after a short pause.
"""

from __future__ import annotations

import sqlite3
import time

WAL_ATTEMPTS = 40  # × a pause growing to 0.25 s: about 8 s before the error is let through


def use_wal(con: sqlite3.Connection) -> None:
    """Put `con`'s database in WAL mode, retrying while another connection holds it."""
    for attempt in range(WAL_ATTEMPTS):
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(min(0.25, 0.01 * (attempt + 1)))
