"""WAL switching that survives another process holding the file (stores.sqlite_wal)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stores import sqlite_wal
from stores.sqlite_wal import use_wal


class Busy:
    """A connection whose WAL switch is refused as "locked" `refusals` times, then done."""

    def __init__(self, refusals: int, error: str = "database is locked") -> None:
        self.refusals, self.error, self.calls = refusals, error, 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        assert sql == "PRAGMA journal_mode=WAL"
        if self.calls <= self.refusals:
            raise sqlite3.OperationalError(self.error)


def test_a_locked_file_is_tried_again_until_it_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(sqlite_wal.time, "sleep", pauses.append)
    con = Busy(refusals=3)
    use_wal(con)  # type: ignore[arg-type]
    assert con.calls == 4 and len(pauses) == 3 and pauses == sorted(pauses)


def test_other_errors_and_a_file_locked_for_good_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_wal.time, "sleep", lambda s: None)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        use_wal(Busy(refusals=1, error="disk I/O error"))  # type: ignore[arg-type]
    forever = Busy(refusals=10**6)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(forever)  # type: ignore[arg-type]
    assert forever.calls == sqlite_wal.WAL_ATTEMPTS


def test_a_real_file_ends_in_wal(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "x.sqlite")
    use_wal(con)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
