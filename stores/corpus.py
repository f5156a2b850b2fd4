"""SQLite corpus store: each document's metadata and text, plus citations, queries and qrels.

The text is stored once. A document's numbered lines (`stores.records.document_lines`) are kept
as offsets into it — each line a (gap, length) slice of the text, or the line itself when it is
not a slice (the title, metadata and keywords lines, a paragraph whose tabs were expanded) — and
its chunks (`chunk_document`) as the last line of each; reads rebuild both by slicing, byte for
byte what was derived when the document was stored. A store written before this layout (issue
24, item 1) kept the lines as JSON in `docs.lines` and each chunk's text in a `chunks` table;
such a store is still read as it is, and an incremental change (`stores.incremental`) writes its
next version in this layout, with the lines and chunks the old store kept.

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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from stores.corpus_rows import (
    INSERT_DOC,
    PAGED_RECORD_COLUMNS,
    RECORD_COLUMNS,
    decode_chunks,
    decode_lines,
    new_doc_row,
    record_of,
)
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import CorpusSource, ProgressFn, RecordStream
from stores.records import Chunk, DocRecord, content_hash, last_name, record_json
from stores.spans import document_text

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    ord INTEGER NOT NULL, docid TEXT PRIMARY KEY, title TEXT NOT NULL, year INTEGER, venue TEXT,
    authors TEXT NOT NULL, keywords TEXT NOT NULL, extras TEXT NOT NULL, page_starts TEXT NOT NULL DEFAULT '[]',
    hash TEXT NOT NULL, chunks INTEGER NOT NULL, layout TEXT NOT NULL, text TEXT NOT NULL
);
CREATE TABLE citations (citing TEXT NOT NULL, cited TEXT NOT NULL, PRIMARY KEY (citing, cited));
CREATE TABLE queries (qid TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE answers (qid TEXT PRIMARY KEY, answer TEXT NOT NULL);
CREATE TABLE answer_aliases (qid TEXT NOT NULL, alias TEXT NOT NULL, PRIMARY KEY (qid, alias));
CREATE TABLE qrels (split TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, score INTEGER NOT NULL,
    PRIMARY KEY (split, qid, docid));
"""
# `docs.text` comes last, so scans of the metadata columns (hashes, authors, venues, the chunk
# count) stop at each row's first page. `docs.layout` is the numbered lines and chunks as
# offsets, JSON: {"l": [gap, length, … or "a line", …], "c": [last line of each chunk, …]}; a
# slice starts `gap` characters after the previous slice's end. It is about 7% of the text of a
# long document, where the lines as JSON and the chunk texts were twice the text.


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
    if src.answer_aliases:
        h.update(json.dumps(src.answer_aliases, sort_keys=True).encode())
    return h.hexdigest()


def insert_records(
    con: sqlite3.Connection,
    records: Iterable[DocRecord],
    first_ord: int,
    progress: ProgressFn | None = None,
    total: int | None = None,
    each: Callable[[DocRecord], None] | None = None,
) -> None:
    """Insert documents (the text once, its lines and chunks as offsets), numbered from
    `first_ord` on, a thousand at a time as they come (a RecordStream is read, not held);
    `each` is given every record as it is stored (the BM25 indexer, fed in the same pass)."""
    it, start = iter(records), 0
    while batch := list(itertools.islice(it, 1000)):  # itertools.batched is Python 3.12
        if each is not None:
            for rec in batch:
                each(rec)
        con.executemany(INSERT_DOC, [new_doc_row(o, rec) for o, rec in enumerate(batch, start=first_ord + start)])
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
    # A corpus stored before aliases were kept gets their table on its next ingest.
    con.execute(
        "CREATE TABLE IF NOT EXISTS answer_aliases (qid TEXT NOT NULL, alias TEXT NOT NULL, PRIMARY KEY (qid, alias))"
    )
    con.execute("DELETE FROM answer_aliases")
    con.executemany(
        "INSERT OR IGNORE INTO answer_aliases VALUES (?,?)",
        [(q, a) for q, aliases in sorted(src.answer_aliases.items()) for a in aliases],
    )
    con.executemany(
        "INSERT OR REPLACE INTO qrels VALUES (?,?,?,?)",
        [(split, q, d, s) for split, rows in src.qrels.items() for q, d, s in rows],
    )


def write_corpus_db(
    path: Path,
    src: CorpusSource,
    name: str,
    progress: ProgressFn | None = None,
    each: Callable[[DocRecord], None] | None = None,
) -> str:
    """Write a complete corpus database at `path` (which must not exist); return its fingerprint.
    `each` sees every record as it is stored (see `insert_records`). The records of an unchecked
    stream are validated in this same pass: their count and fingerprint are known at its end."""
    checked = not isinstance(src.records, RecordStream) or src.records.checked
    con = sqlite3.connect(path)
    try:
        con.executescript(SCHEMA)
        insert_records(con, src.records, 0, progress, len(src.records) if checked else None, each)
        if progress and not checked:
            progress("storing", len(src.records), len(src.records))
        fingerprint = source_fingerprint(src)
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
    def _have(self) -> set[str]:
        """The `docs` columns of this database (corpora written before pages lack some; an
        old-layout one has `lines`)."""
        have = getattr(self, "_docs_columns", None)
        if have is None:
            have = self._docs_columns = {r[1] for r in self._con().execute("PRAGMA table_info(docs)")}
        return have

    @property
    def _columns(self) -> str:
        """The record columns this database has (corpora written before pages lack them)."""
        return PAGED_RECORD_COLUMNS if "page_starts" in self._have else RECORD_COLUMNS

    @property
    def old_layout(self) -> bool:
        """Whether this store keeps numbered lines and chunk texts (the layout before the text was kept once)."""
        return "lines" in self._have

    def hashes(self) -> dict[str, str]:
        """Every document's content hash (`stores.records.content_hash`), by docid."""
        if "hash" in self._have:
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

    def docids_after(self, after: str, limit: int) -> list[str]:
        """Up to `limit` docids after `after` in docid order (an index range scan: a durable dense
        build's batch is found again by its first key and size alone, at any corpus size)."""
        rows = self._con().execute("SELECT docid FROM docs WHERE docid > ? ORDER BY docid LIMIT ?", (after, limit))
        return [r[0] for r in rows]

    def has(self, docid: str) -> bool:
        return self._con().execute("SELECT 1 FROM docs WHERE docid=?", (docid,)).fetchone() is not None

    def get(self, docid: str) -> DocRecord | None:
        row = self._con().execute(f"SELECT {self._columns} FROM docs WHERE docid=?", (docid,)).fetchone()
        return record_of(row) if row else None

    def get_many(self, docids: Iterable[str]) -> dict[str, DocRecord]:
        ids = list(dict.fromkeys(docids))
        out: dict[str, DocRecord] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._con().execute(
                f"SELECT {self._columns} FROM docs WHERE docid IN ({','.join('?' * len(part))})", part
            )
            out.update((r["docid"], record_of(r)) for r in rows)
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

    def _layouts(self, docids: list[str]) -> Iterator[tuple[str, list[str], dict[str, Any]]]:
        """(docid, numbered lines, layout) of each found document, by docid (current layout)."""
        for start in range(0, len(docids), 500):
            part = docids[start : start + 500]
            rows = self._con().execute(
                f"SELECT docid, layout, text FROM docs WHERE docid IN ({','.join('?' * len(part))}) ORDER BY docid",
                part,
            )
            for docid, layout, text in rows:
                data = json.loads(layout)
                yield docid, decode_lines(text, data), data

    def lines(self, docid: str) -> list[str] | None:
        column = "lines" if self.old_layout else "layout, text"
        row = self._con().execute(f"SELECT {column} FROM docs WHERE docid=?", (docid,)).fetchone()
        if row is None:
            return None
        return json.loads(row[0]) if self.old_layout else decode_lines(row[1], json.loads(row[0]))

    def read_span(self, docid: str, char_start: int, char_end: int) -> str | None:
        """The text of `[char_start, char_end)` of the document's lines joined by newlines (the
        text evidence quotes), or None for an unknown docid or a span outside the document."""
        lines = self.lines(docid)
        if lines is None:
            return None
        text = document_text(lines)
        return text[char_start:char_end] if 0 <= char_start <= char_end <= len(text) else None

    def chunks(self, docid: str) -> list[Chunk]:
        return self.chunks_many([docid]).get(docid, [])

    def chunks_many(self, docids: Iterable[str]) -> dict[str, list[Chunk]]:
        """Each found document's chunks in order (unknown docids are absent)."""
        ids = list(dict.fromkeys(docids))
        if not self.old_layout:
            return {docid: decode_chunks(docid, lines, data) for docid, lines, data in self._layouts(ids)}
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
        cur = self._con().execute(f"SELECT {self._columns} FROM docs ORDER BY ord")
        while rows := cur.fetchmany(batch):
            yield from (record_of(r) for r in rows)

    def iter_chunks(self, batch: int = 1000) -> Iterator[Chunk]:
        """Every chunk, by docid and chunk number (`batch` chunks, or about, read at a time)."""
        if self.old_layout:
            cur = self._con().execute(
                "SELECT docid, chunk_no, line_start, line_end, text FROM chunks ORDER BY docid, chunk_no"
            )
            while rows := cur.fetchmany(batch):
                yield from (Chunk(**dict(r)) for r in rows)
            return
        cur = self._con().execute("SELECT docid, layout, text FROM docs ORDER BY docid")
        while rows := cur.fetchmany(max(1, batch // 50)):  # a long document has ~50 chunks
            for docid, layout, text in rows:
                data = json.loads(layout)
                yield from decode_chunks(docid, decode_lines(text, data), data)

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

    def answer_aliases(self) -> dict[str, list[str]]:
        """Other accepted forms of each reference answer (answers.jsonl's "aliases"; {} when none)."""
        out: dict[str, list[str]] = {}
        try:
            rows = self._con().execute("SELECT qid, alias FROM answer_aliases ORDER BY qid, alias").fetchall()
        except sqlite3.OperationalError:  # a corpus written before aliases were stored
            return out
        for qid, alias in rows:
            out.setdefault(qid, []).append(alias)
        return out

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
            "chunks": con.execute(
                "SELECT COUNT(*) FROM chunks" if self.old_layout else "SELECT COALESCE(SUM(chunks), 0) FROM docs"
            ).fetchone()[0],
            "citations": con.execute("SELECT COUNT(*) FROM citations").fetchone()[0],
            "queries": con.execute("SELECT COUNT(*) FROM queries").fetchone()[0],
            "splits": self.splits(),
        }

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
