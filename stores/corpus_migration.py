"""Reading a corpus store written in the old layout, before the text was kept once (numbered lines
as JSON in `docs.lines`, each chunk's text in a `chunks` table), into the current one (`stores.corpus_rows`):
what `stores.incremental` does on an old store's next change, so no line number or span moves."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from stores.corpus import SCHEMA
from stores.corpus_rows import INSERT_DOC, RECORD_COLUMNS, doc_row, encode_layout, record_of


def is_old_layout(con: sqlite3.Connection) -> bool:
    """Whether a corpus database keeps numbered lines and chunk texts (the layout before the text was kept once)."""
    return "lines" in {r[1] for r in con.execute("PRAGMA table_info(docs)")}


def convert_old_layout(old_db: Path, new_db: Path) -> None:
    """Write `old_db`, an old-layout corpus, at `new_db` in the current layout: same documents,
    order, hashes, citations, queries, answers, judgements and meta, and each document's lines
    and chunks as the old store kept them (an older Quarry may have made some differently), so
    no line number or span moves."""
    src = sqlite3.connect(f"file:{old_db}?mode=ro", uri=True)
    src.row_factory = sqlite3.Row
    con = sqlite3.connect(new_db)
    try:
        con.executescript(SCHEMA)
        have = {r[1] for r in src.execute("PRAGMA table_info(docs)")}
        tables = {r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in ("meta", "citations", "queries", "answers", "answer_aliases", "qrels"):
            if table in tables:
                rows = src.execute(f"SELECT * FROM {table}").fetchall()
                if rows:
                    con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
        cols = ", ".join(["ord", RECORD_COLUMNS, "lines"] + [c for c in ("page_starts", "hash") if c in have])
        cur = src.execute(f"SELECT {cols} FROM docs ORDER BY ord")
        while rows := cur.fetchmany(500):
            stored: dict[str, list[tuple[int, int, str]]] = {}
            for r in src.execute(
                "SELECT docid, line_start, line_end, text FROM chunks "
                f"WHERE docid IN ({','.join('?' * len(rows))}) ORDER BY docid, chunk_no",
                [r["docid"] for r in rows],
            ):
                stored.setdefault(r[0], []).append((r[1], r[2], r[3]))
            out = []
            for row in rows:
                rec = record_of(row)
                lines: list[str] = json.loads(row["lines"])
                chunks = stored.get(rec.docid, [])
                ranges = [(a, b) for a, b, _ in chunks]
                joined = all(t == "\n".join(lines[a - 1 : b]) for a, b, t in chunks)
                layout = encode_layout(rec.text, lines, ranges, None if joined else [t for _, _, t in chunks])
                out.append(doc_row(row["ord"], rec, layout, len(chunks), row["hash"] if "hash" in have else None))
            con.executemany(INSERT_DOC, out)
        con.commit()
    finally:
        con.close()
        src.close()
