"""Relevance judgements a collection's jobs made: model librarians' and a researcher's own marks.

Every judgement an `llm` job's librarians make (the probability a document meets the intent) and
every mark a user gives (`quarry job mark JOB DOCID relevant|not`) is kept per collection in
`runs/judgements.sqlite`, beside its versions (docids are stable across versions), so self-tuning
(`quarry tune NAME --self`) can learn from them next to its pseudo-queries: a collection searched
with a model once is ranked better offline afterwards. One row per (job, document, source); a
later judgement of the same job and document replaces the earlier one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from stores.home import CollectionPaths

JUDGEMENTS_FILE = "judgements.sqlite"
Source = Literal["model", "user"]
SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    job_id TEXT NOT NULL, docid TEXT NOT NULL, source TEXT NOT NULL,
    intent TEXT NOT NULL, relevance REAL NOT NULL, judge TEXT NOT NULL DEFAULT '', at TEXT NOT NULL,
    PRIMARY KEY (job_id, docid, source));
"""


@dataclass(frozen=True, slots=True)
class Judgement:
    job_id: str
    intent: str
    docid: str
    source: Source
    relevance: float  # 0–1: a librarian's p, or a user's mark (1 relevant, 0 not)
    judge: str = ""  # the model that judged, or "" for a user


def judgements_path(paths: CollectionPaths) -> Path:
    return paths.runs_dir / JUDGEMENTS_FILE


class JudgementStore:
    """The judgements of one collection (the file is made on the first write)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=30)
        con.executescript(SCHEMA)
        return con

    def record(self, judgements: Iterable[Judgement]) -> int:
        rows = [
            (j.job_id, j.docid, j.source, j.intent, min(max(float(j.relevance), 0.0), 1.0), j.judge) for j in judgements
        ]
        if not rows:
            return 0
        at = datetime.now(UTC).isoformat(timespec="seconds")
        con = self._connect()
        try:
            with con:
                con.executemany(
                    "INSERT OR REPLACE INTO judgements (job_id, docid, source, intent, relevance, judge, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(*r, at) for r in rows],
                )
        finally:
            con.close()
        return len(rows)

    def all(self) -> list[Judgement]:
        if not self.path.is_file():
            return []
        con = self._connect()
        try:
            rows = con.execute(
                "SELECT job_id, intent, docid, source, relevance, judge FROM judgements ORDER BY job_id, docid, source"
            ).fetchall()
        finally:
            con.close()
        return [Judgement(*r) for r in rows]


__all__ = ["JUDGEMENTS_FILE", "Judgement", "JudgementStore", "judgements_path"]
