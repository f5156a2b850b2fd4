"""The job store: one SQLite file under QUARRY_HOME holding every job's latest checkpoint,
its final result, and the deep rankings behind its search_ids.

Temporal history is the source of truth while a job runs; this store is what lets a finished
or interrupted job always be shown (even after the dev server's database is gone) and keeps
large rankings out of workflow payloads. A ReAct job's conversation lives here too, one row per
message (append-only, addressed by position), so the workflow state carries only its length.
WAL mode lets the worker write while the CLI reads. Everything written passes through
`redact`, so a credential echoed by an endpoint never lands on disk.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from stores import job_events
from stores.errors import QuarryError, error_line
from stores.job_status import FINAL, JobStatus
from stores.redact import redact
from stores.sqlite_wal import use_wal

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, collection TEXT NOT NULL, intent TEXT NOT NULL, status TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, round INTEGER NOT NULL DEFAULT 0,
    trace_id TEXT, workflow_id TEXT, state TEXT, result TEXT, error TEXT
);
CREATE TABLE IF NOT EXISTS rankings (
    job_id TEXT NOT NULL, search_id TEXT NOT NULL, query TEXT NOT NULL, docids TEXT NOT NULL,
    scores TEXT NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (job_id, search_id)
);
CREATE TABLE IF NOT EXISTS surfaced (job_id TEXT NOT NULL, docid TEXT NOT NULL, PRIMARY KEY (job_id, docid));
CREATE TABLE IF NOT EXISTS pools (
    job_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (job_id, seq)
);
CREATE TABLE IF NOT EXISTS drafts (job_id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    job_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (job_id, seq)
);
CREATE TABLE IF NOT EXISTS steps (
    job_id TEXT PRIMARY KEY, node TEXT NOT NULL, stage TEXT NOT NULL, done INTEGER NOT NULL,
    total INTEGER NOT NULL, updated_at REAL NOT NULL
);
"""
RANKINGS_PER_JOB = 32
POOLS_PER_JOB = 3  # the pool an activity reads, the one it writes, and one before (retries, resumes)


def _dumps(obj: Any) -> str:
    return redact(json.dumps(obj, ensure_ascii=False))


def _private_db(path: Path) -> None:
    """Create the job store readable by its owner only (SQLite gives its -wal and -shm files the
    database file's mode); tighten one an older Quarry left 0644. It holds intents and results."""
    import os

    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if part.exists() and part.stat().st_uid == os.geteuid() and part.stat().st_mode & 0o077:
                part.chmod(0o600)
    except OSError:
        pass  # opening it below reports what is wrong


class JobStore:
    """One connection per thread, all closed with the store (`close`, `with`, or when dropped).

    Closing is not left to the garbage collector on purpose: CPython's sqlite3 connection sits in
    a reference cycle with its statement cache, so a dropped connection — with its file
    descriptors and its SQLite locks — lives until a cyclic collection, which may be never in a
    short command and is at a random moment in a long process.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _private_db(path)
        self._local = threading.local()
        self._open: list[sqlite3.Connection] = []
        self._open_lock = threading.Lock()
        con = self._con()
        con.executescript(SCHEMA + job_events.SCHEMA)
        columns = {r[1] for r in con.execute("PRAGMA table_info(jobs)")}
        if "params" not in columns:  # job stores written before jobs kept their input
            con.execute("ALTER TABLE jobs ADD COLUMN params TEXT")

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            con.row_factory = sqlite3.Row
            use_wal(con)  # retried while another process holds the file (stores.sqlite_wal)
            con.execute("PRAGMA busy_timeout=30000")
            self._local.con = con
            with self._open_lock:
                self._open.append(con)
        return con

    def close(self) -> None:
        """Close every thread's connection; the store opens a new one if it is used again."""
        with self._open_lock:
            open_, self._open = self._open, []
        self._local = threading.local()
        for con in open_:
            con.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # try/except rather than contextlib.suppress: at interpreter exit module globals may be gone.
        try:  # noqa: SIM105
            self.close()
        except Exception:  # at interpreter exit the sqlite module may already be gone
            pass

    # -- jobs ----------------------------------------------------------------------------------

    def create(
        self,
        job_id: str,
        collection: str,
        intent: str,
        *,
        workflow_id: str,
        trace_id: str | None,
        params: dict[str, Any] | None = None,
    ) -> None:
        """Record a submitted job; `params` is its input (mode, policy, budget, config) for `rerun`."""
        now = time.time()
        self._con().execute(
            "INSERT OR IGNORE INTO jobs (job_id, collection, intent, status, created_at, updated_at, trace_id,"
            " workflow_id, params) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                job_id,
                collection,
                intent,
                JobStatus.RUNNING,
                now,
                now,
                trace_id,
                workflow_id,
                _dumps(params) if params else None,
            ),
        )

    def mark(self, job_id: str, status: str, error: str | None = None) -> bool:
        """Set the status of a job that ended without finishing itself (terminated), unless it has
        already ended; returns whether it changed — the one caller that changed it closes the
        job's trace, however many saw the termination."""
        cur = self._con().execute(
            f"UPDATE jobs SET status=?, error=COALESCE(?, error), updated_at=? WHERE job_id=?"
            f" AND status NOT IN ({','.join('?' * len(FINAL))})",
            (status, error, time.time(), job_id, *FINAL),
        )
        if cur.rowcount > 0:
            job_events.append(self._con(), job_id, job_events.ending({"status": status}))
        return cur.rowcount > 0

    def checkpoint(self, job_id: str, state: dict[str, Any], status: str = "running", *, event: bool = True) -> None:
        """Save the latest state between rounds (creates the row if the job was started elsewhere)
        and append what a watcher is shown of it to the job's event log (stores.job_events). A
        running checkpoint never reopens a finished job: an activity its job abandoned (cancelled,
        out of time) may still finish a step and checkpoint after the job's final write."""
        now = time.time()
        final = ",".join("?" * len(FINAL))
        cur = self._con().execute(
            "INSERT INTO jobs (job_id, collection, intent, status, created_at, updated_at, round, state)"
            " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(job_id) DO UPDATE SET status=excluded.status,"
            " updated_at=excluded.updated_at, round=excluded.round, state=excluded.state"
            f" WHERE excluded.status IN ({final}) OR jobs.status NOT IN ({final})",
            (
                job_id,
                state.get("collection", ""),
                state.get("intent", ""),
                status,
                now,
                now,
                int(state.get("round", 0)),
                _dumps(state),
                *FINAL,
                *FINAL,
            ),
        )
        if event and cur.rowcount > 0:
            job_events.append(self._con(), job_id, job_events.snapshot(state, status))

    def finish(self, job_id: str, result: dict[str, Any], state: dict[str, Any] | None = None) -> None:
        now = time.time()
        self.checkpoint(
            job_id,
            state or {"collection": result.get("collection", ""), "intent": result.get("intent", "")},
            status=result["status"],
            event=False,
        )
        # The rounds the result counts (rounds that searched), not the state's `round`: a
        # reflection numbers the state with the round it plans, which a stop or budget never runs.
        rounds = result.get("rounds")
        self._con().execute(
            "UPDATE jobs SET result=?, status=?, updated_at=?, error=?, round=COALESCE(?, round) WHERE job_id=?",
            (
                _dumps(result),
                result["status"],
                now,
                redact(error_line(result.get("error"))) or None,
                rounds if isinstance(rounds, int) and not isinstance(rounds, bool) else None,
                job_id,
            ),
        )
        job_events.append(self._con(), job_id, job_events.ending(result))

    def events(self, job_id: str, after: int = 0, limit: int = 500) -> builtins.list[job_events.JobEvent]:
        """The job's progress events numbered after `after` (stores.job_events), oldest first."""
        return job_events.since(self._con(), job_id, after, limit)

    def set_trace(self, job_id: str, trace_id: str) -> None:
        self._con().execute("UPDATE jobs SET trace_id=COALESCE(trace_id, ?) WHERE job_id=?", (trace_id, job_id))

    def get(self, job_id: str) -> dict[str, Any]:
        row = self._con().execute("SELECT * FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        if row is None:
            raise QuarryError("unknown_job", f"no job {job_id!r} in {self.path}", "list jobs with: quarry job list")
        out = dict(row)
        for key in ("state", "result", "params"):
            out[key] = json.loads(out[key]) if out[key] else None
        return out

    # `list` below names this method inside the class, so later signatures say `builtins.list`.
    def list(
        self, limit: int = 50, *, status: str | None = None, collection: str | None = None
    ) -> list[dict[str, Any]]:
        rows = self._con().execute(
            "SELECT job_id, collection, intent, status, created_at, updated_at, round FROM jobs"
            " WHERE (? IS NULL OR status=?) AND (? IS NULL OR collection=?) ORDER BY created_at DESC LIMIT ?",
            (status, status, collection, collection, limit),
        )
        return [dict(r) for r in rows]

    # -- rankings behind search_ids ------------------------------------------------------------

    def save_ranking(
        self, job_id: str, search_id: str, query: str, docids: builtins.list[str], scores: builtins.list[float]
    ) -> None:
        con = self._con()
        used = time.time_ns()
        con.execute(
            "INSERT OR REPLACE INTO rankings VALUES (?,?,?,?,?,?)",
            (job_id, search_id, query, json.dumps(docids), json.dumps(scores), used),
        )
        con.executemany("INSERT OR IGNORE INTO surfaced VALUES (?,?)", [(job_id, d) for d in docids])
        con.execute(
            "DELETE FROM rankings WHERE job_id=? AND search_id NOT IN (SELECT search_id FROM rankings"
            " WHERE job_id=? ORDER BY used DESC LIMIT ?)",
            (job_id, job_id, RANKINGS_PER_JOB),
        )

    def load_ranking(self, job_id: str, search_id: str) -> tuple[str, builtins.list[str], builtins.list[float]] | None:
        con = self._con()
        row = con.execute(
            "SELECT query, docids, scores FROM rankings WHERE job_id=? AND search_id=?", (job_id, search_id)
        ).fetchone()
        if row is None:
            return None
        con.execute("UPDATE rankings SET used=? WHERE job_id=? AND search_id=?", (time.time_ns(), job_id, search_id))
        return row["query"], json.loads(row["docids"]), json.loads(row["scores"])

    def ranking_ids(self, job_id: str) -> builtins.list[str]:
        return [
            r[0] for r in self._con().execute("SELECT search_id FROM rankings WHERE job_id=? ORDER BY used", (job_id,))
        ]

    def add_surfaced(self, job_id: str, docids: builtins.list[str]) -> None:
        """Record documents a store returned for this job outside a cached ranking (citation
        and metadata channels), so the trajectory's "surfaced" tier counts every channel."""
        self._con().executemany("INSERT OR IGNORE INTO surfaced VALUES (?,?)", [(job_id, d) for d in docids])

    def surfaced(self, job_id: str) -> set[str]:
        return {r[0] for r in self._con().execute("SELECT docid FROM surfaced WHERE job_id=?", (job_id,))}

    # -- a ReAct conversation, append-only --------------------------------------------------------

    def put_message(self, job_id: str, seq: int, message: dict[str, Any]) -> None:
        """Write message number `seq` (0-based). Rewriting the same position is how a retried
        activity stays idempotent: it writes what the failed attempt wrote, at the same place."""
        self._con().execute("INSERT OR REPLACE INTO messages VALUES (?,?,?)", (job_id, seq, _dumps(message)))

    def message(self, job_id: str, seq: int) -> dict[str, Any] | None:
        row = self._con().execute("SELECT body FROM messages WHERE job_id=? AND seq=?", (job_id, seq)).fetchone()
        return json.loads(row[0]) if row else None

    def messages(self, job_id: str, upto: int | None = None) -> builtins.list[dict[str, Any]]:
        """Messages 0 … upto-1 in order (all when `upto` is None)."""
        rows = self._con().execute(
            "SELECT body FROM messages WHERE job_id=? AND seq < ? ORDER BY seq",
            (job_id, upto if upto is not None else 2**62),
        )
        return [json.loads(r[0]) for r in rows]

    # -- a job's candidate pool, by snapshot -----------------------------------------------------

    def save_pool(self, job_id: str, seq: int, candidates: dict[str, Any]) -> None:
        """Write pool snapshot `seq`. Snapshots are immutable once the activity that wrote them
        completed; a retried activity rewrites the same `seq` with the same content."""
        con = self._con()
        con.execute("INSERT OR REPLACE INTO pools VALUES (?,?,?)", (job_id, seq, _dumps(candidates)))
        con.execute("DELETE FROM pools WHERE job_id=? AND seq <= ?", (job_id, seq - POOLS_PER_JOB))

    def load_pool(self, job_id: str, seq: int) -> dict[str, Any]:
        if seq <= 0:
            return {}
        row = self._con().execute("SELECT body FROM pools WHERE job_id=? AND seq=?", (job_id, seq)).fetchone()
        if row is None:
            raise QuarryError(
                "lost_pool",
                f"job {job_id!r} has no candidate pool #{seq} in {self.path}",
                "the job store was changed under a running job; start the job again",
            )
        return json.loads(row[0])

    # -- what a running node is doing inside a long step ------------------------------------------

    def set_step(self, job_id: str, node: str, stage: str, done: int, total: int) -> None:
        """Record a node's long-step progress ("retrieval: embedding 320/1,200 chunks"): the
        workflow's progress query cannot see inside an activity, so `job progress` reads it here."""
        self._con().execute(
            "INSERT OR REPLACE INTO steps VALUES (?,?,?,?,?,?)",
            (job_id, node, stage, int(done), int(total), time.time()),
        )

    def clear_step(self, job_id: str) -> None:
        self._con().execute("DELETE FROM steps WHERE job_id=?", (job_id,))

    def step(self, job_id: str) -> dict[str, Any] | None:
        """The running node's long step: node, stage, done, total, updated_at and `text`, or None."""
        row = (
            self._con()
            .execute("SELECT node, stage, done, total, updated_at FROM steps WHERE job_id=?", (job_id,))
            .fetchone()
        )
        if row is None:
            return None
        out = dict(row)
        out["text"] = f"{out['stage']} {out['done']:,}/{out['total']:,} chunks"
        return out

    # -- the result before the workflow finishes it ------------------------------------------------

    def save_draft(self, job_id: str, result: dict[str, Any]) -> None:
        self._con().execute("INSERT OR REPLACE INTO drafts VALUES (?,?)", (job_id, _dumps(result)))

    def load_draft(self, job_id: str) -> dict[str, Any] | None:
        row = self._con().execute("SELECT body FROM drafts WHERE job_id=?", (job_id,)).fetchone()
        return json.loads(row[0]) if row else None


# A job cannot run longer than its budget (at most 7 days, workflows.job_input), so a row still
# "running" after this long belongs to a job whose workflow is gone: it pins nothing.
RUNNING_HORIZON_SECONDS = 8 * 24 * 3600


def running_pins(path: Path, collection: str, *, now: float | None = None) -> list[tuple[str | None, float]]:
    """(pinned collection version or None when not yet recorded, created_at) of every job of
    `collection` the job store still counts as running — what a writer must not prune
    (stores.versions). Read only: a missing job store means no jobs (it is not created)."""
    if not path.is_file():
        return []
    since = (time.time() if now is None else now) - RUNNING_HORIZON_SECONDS
    con = sqlite3.connect(path, timeout=30)
    try:
        rows = con.execute(
            "SELECT json_extract(state, '$.collection_version'), created_at FROM jobs WHERE collection=?"
            f" AND status NOT IN ({','.join('?' * len(FINAL))}) AND created_at >= ?",
            (collection, *FINAL, since),
        ).fetchall()
    finally:
        con.close()
    return [(str(v) if isinstance(v, str) and v else None, float(t)) for v, t in rows]
