"""SQLite corpus store: metadata, text and chunk layers, plus citations, queries and qrels.

The store is written once per version into a fresh file — by a complete ingest, or as a copy of
the previous version with an incremental change applied (`stores.incremental`) — and swapped in
atomically, so readers never see a half-written corpus. Reads open one connection per thread (SQLite connections are
not shareable across threads) in read-only mode.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from stores.errors import QuarryError
from stores.readers import CorpusSource, ProgressFn, RecordStream
from stores.records import Chunk, DocRecord, chunk_document, content_hash, document_lines, last_name, record_json
from stores.spans import document_text

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    ord INTEGER NOT NULL, docid TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL,
    year INTEGER, venue TEXT, authors TEXT NOT NULL, keywords TEXT NOT NULL, extras TEXT NOT NULL,
    lines TEXT NOT NULL, page_starts TEXT NOT NULL DEFAULT '[]', hash TEXT
);
CREATE TABLE chunks (
    docid TEXT NOT NULL, chunk_no INTEGER NOT NULL, line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (docid, chunk_no)
);
CREATE TABLE citations (citing TEXT NOT NULL, cited TEXT NOT NULL, PRIMARY KEY (citing, cited));
CREATE TABLE queries (qid TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE answers (qid TEXT PRIMARY KEY, answer TEXT NOT NULL);
CREATE TABLE qrels (split TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, score INTEGER NOT NULL,
    PRIMARY KEY (split, qid, docid));
"""


def source_fingerprint(src: CorpusSource) -> str:
    """A content hash of everything ingested: equal hashes mean a re-ingest changes nothing."""
    if isinstance(src.records, RecordStream):
        h = src.records.digest.copy()  # hashed while validating: no second read of the file
    else:
        h = hashlib.sha256()
        for rec in src.records:
            h.update(record_json(rec).encode())
    h.update(json.dumps([src.citations, src.queries, src.qrels], sort_keys=True).encode())
    if src.answers:  # only when present, so collections without answers keep their fingerprints
        h.update(json.dumps(src.answers, sort_keys=True).encode())
    return h.hexdigest()


DOC_COLUMNS = "ord, docid, title, text, year, venue, authors, keywords, extras, lines, page_starts, hash"


def insert_records(
    con: sqlite3.Connection,
    records: Iterable[DocRecord],
    first_ord: int,
    progress: ProgressFn | None = None,
    total: int | None = None,
) -> None:
    """Insert documents (with their lines and chunks), numbered from `first_ord` on, a thousand
    at a time as they come (a RecordStream is read, not held)."""
    it, start = iter(records), 0
    while batch := list(itertools.islice(it, 1000)):  # itertools.batched is Python 3.12
        doc_rows: list[tuple[Any, ...]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        for ord_, rec in enumerate(batch, start=first_ord + start):
            lines = document_lines(rec)
            doc_rows.append(
                (
                    ord_,
                    rec.docid,
                    rec.title,
                    rec.text,
                    rec.year,
                    rec.venue,
                    json.dumps(rec.authors),
                    json.dumps(rec.keywords),
                    json.dumps(rec.extras, ensure_ascii=False),
                    json.dumps(lines, ensure_ascii=False),
                    json.dumps(rec.page_starts),
                    content_hash(rec),
                )
            )
            chunk_rows.extend(
                (c.docid, c.chunk_no, c.line_start, c.line_end, c.text) for c in chunk_document(rec, lines)
            )
        con.executemany(f"INSERT INTO docs ({DOC_COLUMNS}) VALUES ({','.join('?' * 12)})", doc_rows)
        con.executemany("INSERT INTO chunks VALUES (?,?,?,?,?)", chunk_rows)
        start += len(batch)
        if progress:
            progress("storing", start, total)


def replace_extras(con: sqlite3.Connection, src: CorpusSource) -> None:
    """Replace citations, queries, reference answers and judgements by those of `src`."""
    for table in ("citations", "queries", "answers", "qrels"):
        con.execute(f"DELETE FROM {table}")
    con.executemany("INSERT INTO citations VALUES (?,?)", src.citations)
    con.executemany("INSERT INTO queries VALUES (?,?)", sorted(src.queries.items()))
    con.executemany("INSERT INTO answers VALUES (?,?)", sorted(src.answers.items()))
    con.executemany(
        "INSERT OR REPLACE INTO qrels VALUES (?,?,?,?)",
        [(split, q, d, s) for split, rows in src.qrels.items() for q, d, s in rows],
    )


def write_corpus_db(path: Path, src: CorpusSource, name: str, progress: ProgressFn | None = None) -> str:
    """Write a complete corpus database at `path` (which must not exist); return its fingerprint."""
    fingerprint = source_fingerprint(src)
    con = sqlite3.connect(path)
    try:
        con.executescript(SCHEMA)
        insert_records(con, src.records, 0, progress, len(src.records))
        replace_extras(con, src)
        meta = {
            "name": name,
            "source": str(src.path.resolve()),
            "kind": src.kind,
            "fingerprint": fingerprint,
            "documents": str(len(src.records)),
        }
        con.executemany("INSERT INTO meta VALUES (?,?)", meta.items())
        con.commit()
    finally:
        con.close()
    return fingerprint


# A record's columns without its numbered lines (a large JSON column only `lines()` needs).
RECORD_COLUMNS = "docid, title, text, year, venue, authors, keywords, extras"
PAGED_RECORD_COLUMNS = RECORD_COLUMNS + ", page_starts"


def _record(row: sqlite3.Row) -> DocRecord:
    pages = json.loads(row["page_starts"]) if "page_starts" in row.keys() else []  # noqa: SIM118 - `in` on a Row tests values
    return DocRecord(
        docid=row["docid"],
        title=row["title"],
        text=row["text"],
        year=row["year"],
        venue=row["venue"],
        authors=tuple(json.loads(row["authors"])),
        keywords=tuple(json.loads(row["keywords"])),
        extras=json.loads(row["extras"]),
        page_starts=tuple(pages),
    )


def upgrade_schema(con: sqlite3.Connection) -> None:
    """Add the columns newer Quarry writes (pages, content hash) to a corpus written before them."""
    have = {r[1] for r in con.execute("PRAGMA table_info(docs)")}
    if "page_starts" not in have:
        con.execute("ALTER TABLE docs ADD COLUMN page_starts TEXT NOT NULL DEFAULT '[]'")
    if "hash" not in have:
        con.execute("ALTER TABLE docs ADD COLUMN hash TEXT")
    con.execute("CREATE TABLE IF NOT EXISTS answers (qid TEXT PRIMARY KEY, answer TEXT NOT NULL)")


class CorpusStore:
    """Read access to one collection's corpus database."""

    def __init__(self, path: Path, name: str = "") -> None:
        if not path.is_file():
            raise QuarryError(
                "no_collection",
                f"collection {name or path} does not exist",
                f"ingest it first: quarry ingest PATH --name {name or 'NAME'}",
            )
        self.path = path
        self.name = name
        self._local = threading.local()

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            con.row_factory = sqlite3.Row
            self._local.con = con
        return con

    @property
    def _columns(self) -> str:
        """The record columns this database has (corpora written before pages lack them)."""
        cols = getattr(self, "_cols", None)
        if cols is None:
            have = {r[1] for r in self._con().execute("PRAGMA table_info(docs)")}
            cols = self._cols = PAGED_RECORD_COLUMNS if "page_starts" in have else RECORD_COLUMNS
        return cols

    def hashes(self) -> dict[str, str]:
        """Every document's content hash (`stores.records.content_hash`), by docid."""
        if "page_starts" in self._columns:
            rows = self._con().execute("SELECT docid, hash FROM docs").fetchall()
            if all(h for _, h in rows):
                return dict(rows)
        return {rec.docid: content_hash(rec) for rec in self.iter_records()}

    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._con().execute("SELECT key, value FROM meta")}

    @property
    def fingerprint(self) -> str:
        return self.meta()["fingerprint"]

    def count(self) -> int:
        return self._con().execute("SELECT COUNT(*) FROM docs").fetchone()[0]

    def has(self, docid: str) -> bool:
        return self._con().execute("SELECT 1 FROM docs WHERE docid=?", (docid,)).fetchone() is not None

    def get(self, docid: str) -> DocRecord | None:
        row = self._con().execute(f"SELECT {self._columns} FROM docs WHERE docid=?", (docid,)).fetchone()
        return _record(row) if row else None

    def get_many(self, docids: Iterable[str]) -> dict[str, DocRecord]:
        ids = list(dict.fromkeys(docids))
        out: dict[str, DocRecord] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._con().execute(
                f"SELECT {self._columns} FROM docs WHERE docid IN ({','.join('?' * len(part))})", part
            )
            out.update((r["docid"], _record(r)) for r in rows)
        return out

    def titles(self, docids: Iterable[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(docids))
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            out.update(
                self._con()
                .execute(f"SELECT docid, title FROM docs WHERE docid IN ({','.join('?' * len(part))})", part)
                .fetchall()
            )
        return out

    def year_span(self) -> tuple[int, int] | None:
        """(earliest, latest) publication year, or None when no document has a year."""
        lo, hi = self._con().execute("SELECT MIN(year), MAX(year) FROM docs").fetchone()
        return None if lo is None else (int(lo), int(hi))

    def venues(self) -> list[str]:
        return [r[0] for r in self._con().execute("SELECT DISTINCT venue FROM docs WHERE venue IS NOT NULL")]

    def docs_by_venue(self, venue: str) -> list[str]:
        rows = self._con().execute("SELECT docid FROM docs WHERE lower(venue) = lower(?) ORDER BY ord", (venue,))
        return [r[0] for r in rows]

    def docs_by_author(self, last_names: list[str]) -> dict[str, list[str]]:
        """Docids per requested last name (case-insensitive), from the authors metadata."""
        wanted = {n.lower() for n in last_names}
        out: dict[str, list[str]] = {n: [] for n in wanted}
        for docid, authors in self._con().execute("SELECT docid, authors FROM docs WHERE authors != '[]' ORDER BY ord"):
            for author in json.loads(authors):
                last = last_name(author)
                if last in wanted:
                    out[last].append(docid)
        return out

    def lines(self, docid: str) -> list[str] | None:
        row = self._con().execute("SELECT lines FROM docs WHERE docid=?", (docid,)).fetchone()
        return json.loads(row[0]) if row else None

    def read_span(self, docid: str, char_start: int, char_end: int) -> str | None:
        """The text of `[char_start, char_end)` of the document's lines joined by newlines (the
        text evidence quotes), or None for an unknown docid or a span outside the document."""
        lines = self.lines(docid)
        if lines is None:
            return None
        text = document_text(lines)
        return text[char_start:char_end] if 0 <= char_start <= char_end <= len(text) else None

    def chunks(self, docid: str) -> list[Chunk]:
        rows = self._con().execute(
            "SELECT docid, chunk_no, line_start, line_end, text FROM chunks WHERE docid=? ORDER BY chunk_no", (docid,)
        )
        return [Chunk(**dict(r)) for r in rows]

    def chunks_many(self, docids: Iterable[str]) -> dict[str, list[Chunk]]:
        """Each found document's chunks in order (unknown docids are absent)."""
        ids = list(dict.fromkeys(docids))
        out: dict[str, list[Chunk]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._con().execute(
                "SELECT docid, chunk_no, line_start, line_end, text FROM chunks "
                f"WHERE docid IN ({','.join('?' * len(part))}) ORDER BY docid, chunk_no",
                part,
            )
            for r in rows:
                out.setdefault(r["docid"], []).append(Chunk(**dict(r)))
        return out

    def iter_records(self, batch: int = 1000) -> Iterator[DocRecord]:
        cur = self._con().execute("SELECT * FROM docs ORDER BY ord")
        while rows := cur.fetchmany(batch):
            yield from (_record(r) for r in rows)

    def iter_chunks(self, batch: int = 1000) -> Iterator[Chunk]:
        cur = self._con().execute(
            "SELECT docid, chunk_no, line_start, line_end, text FROM chunks ORDER BY docid, chunk_no"
        )
        while rows := cur.fetchmany(batch):
            yield from (Chunk(**dict(r)) for r in rows)

    def citations(self) -> list[tuple[str, str]]:
        return [tuple(r) for r in self._con().execute("SELECT citing, cited FROM citations")]

    def queries(self) -> dict[str, str]:
        return dict(self._con().execute("SELECT qid, text FROM queries").fetchall())

    def answers(self) -> dict[str, str]:
        """Reference answers by query id ({} for collections without them, or stored before them)."""
        try:
            return dict(self._con().execute("SELECT qid, answer FROM answers").fetchall())
        except sqlite3.OperationalError:  # a corpus written before answers were stored
            return {}

    def splits(self) -> list[str]:
        return [r[0] for r in self._con().execute("SELECT DISTINCT split FROM qrels ORDER BY split")]

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for qid, docid, score in self._con().execute("SELECT qid, docid, score FROM qrels WHERE split=?", (split,)):
            out.setdefault(qid, {})[docid] = score
        return out

    def stats(self) -> dict[str, Any]:
        con = self._con()
        return {
            "documents": self.count(),
            "chunks": con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
            "citations": con.execute("SELECT COUNT(*) FROM citations").fetchone()[0],
            "queries": con.execute("SELECT COUNT(*) FROM queries").fetchone()[0],
            "splits": self.splits(),
        }

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
