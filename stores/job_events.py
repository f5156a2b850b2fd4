"""A job's progress as an append-only, numbered event log in the job store.

Why a log and not the workflow's `progress` query: a live view over HTTP (Server-Sent Events in
`quarry serve`, the job page) must be re-attachable — a client that reconnects with
`Last-Event-ID: N` gets events N+1 … exactly, none missed and none repeated — and a finished job
must replay its rounds after the worker and even the Temporal server are gone. So every checkpoint
the worker writes (after each node) appends what a watcher is shown, numbered 1, 2, … per job,
unless it repeats the previous event (a retried activity writes the same checkpoint twice); the
job's end appends a last event with `end: true`. Append and numbering are one SQLite transaction,
so two writers never take the same number.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from stores.redact import redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    job_id TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, body TEXT NOT NULL, PRIMARY KEY (job_id, seq)
);
"""
TOP = 5
SEQ_MAX = 2**63 - 1  # SQLite's largest INTEGER: a number past it cannot be bound (OverflowError)
SEARCHES = 8  # the latest searches an event shows (a round's queries)


@dataclass(frozen=True)
class JobEvent:
    """One numbered event of a job: `seq` is its SSE id, `data` what a watcher is shown."""

    seq: int
    at: float
    data: dict[str, Any]


def snapshot(state: dict[str, Any], status: str) -> dict[str, Any]:
    """What a watcher is shown of a checkpointed state: where the job is, its top 5 and the
    latest searches, its model usage — small (a few hundred bytes), never the pool or evidence."""
    return {
        "status": status,
        "round": int(state.get("round", 0) or 0),
        "node": str(state.get("node", "")),
        "steps": int(state.get("steps", 0) or 0),
        "candidates": int((state.get("pool") or {}).get("size", 0) or 0),
        "top": [{"docid": t.get("docid"), "score": t.get("score")} for t in list(state.get("top") or [])[:TOP]],
        "searches": [
            {"round": s.get("round"), "channel": s.get("channel"), "query": s.get("label") or s.get("query", "")}
            for s in list(state.get("searches") or [])[-SEARCHES:]
        ],
        "usage": state.get("usage") or {},
        "end": False,
    }


def ending(result: dict[str, Any]) -> dict[str, Any]:
    """The last event of a job: its final status and top 5 (`end: true`: a watcher stops here)."""
    ranked = list(result.get("ranked") or [])[:TOP]
    return {
        "status": str(result.get("status", "")),
        "round": int(result.get("rounds", 0) or 0),
        "node": "end",
        "top": [{"docid": r.get("docid"), "score": r.get("score")} for r in ranked],
        "error": (result.get("error") or {}).get("code") if isinstance(result.get("error"), dict) else None,
        "end": True,
    }


def append(con: sqlite3.Connection, job_id: str, data: dict[str, Any]) -> int | None:
    """Append `data` as the job's next event; its number, or None when it repeats the last one."""
    body = redact(json.dumps(data, ensure_ascii=False, sort_keys=True, default=str))
    con.execute("BEGIN IMMEDIATE")
    try:
        last = con.execute(
            "SELECT seq, body FROM events WHERE job_id=? ORDER BY seq DESC LIMIT 1", (job_id,)
        ).fetchone()
        if last is not None and last[1] == body:
            con.execute("COMMIT")
            return None
        seq = (last[0] if last else 0) + 1
        con.execute("INSERT INTO events VALUES (?,?,?,?)", (job_id, seq, time.time(), body))
        con.execute("COMMIT")
        return seq
    except BaseException:
        con.execute("ROLLBACK")
        raise


def since(con: sqlite3.Connection, job_id: str, after: int = 0, limit: int = 500) -> list[JobEvent]:
    """The job's events numbered after `after`, oldest first (at most `limit`). Any integer a door
    passes is taken: one at or past SQLite's range has no events after it, one below 1 means from
    the first, so no caller can make SQLite overflow."""
    if after >= SEQ_MAX or limit <= 0:
        return []
    rows = con.execute(
        "SELECT seq, at, body FROM events WHERE job_id=? AND seq > ? ORDER BY seq LIMIT ?",
        (job_id, max(after, 0), min(limit, SEQ_MAX)),
    )
    return [JobEvent(int(r[0]), float(r[1]), json.loads(r[2])) for r in rows]
