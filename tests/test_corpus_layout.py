"""One copy of the text (issue 24, item 1): the corpus store keeps each document's text once and
derives its numbered lines and chunks on read; a store in the old layout (lines as JSON, chunk
texts in a `chunks` table) still reads back identically, and an incremental change to it writes
the new layout without moving any line number or span."""

from __future__ import annotations

import json
import random
import sqlite3
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stores.records as records
from stores.collection import Collection, ingest
from stores.collection_edits import add, remove
from stores.corpus import CorpusStore, write_corpus_db
from stores.file_formats.corpus_reader import read_corpus
from stores.incremental import diff, update_corpus_db
from stores.records import DocRecord, chunk_document, content_hash, document_lines, wrap
from tests.fakes import filler, write_beir

# -- the old layout, as Quarry wrote it before issue 24 (schema and insert copied from 9df32b8) --

OLD_SCHEMA = """
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
OLD_DOC_COLUMNS = "ord, docid, title, text, year, venue, authors, keywords, extras, lines, page_starts, hash"


@contextmanager
def textwrap_lines() -> Iterator[None]:
    """Numbered lines as the old code made them: `textwrap.wrap` itself, not `records.wrap`."""
    fast = records.wrap
    records.wrap = lambda para, width=records.LINE_WIDTH: textwrap.wrap(
        para, width, break_long_words=True, break_on_hyphens=False
    )
    try:
        yield
    finally:
        records.wrap = fast


def write_old_layout(path: Path, new_store: CorpusStore, stored_lines=None) -> None:
    """The corpus of `new_store` written in the old layout (the old insert_records, inline).
    `stored_lines` overrides some documents' stored lines, as an older Quarry may have made them."""
    stored_lines = stored_lines or {}
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    with textwrap_lines():
        for ord_, rec in enumerate(new_store.iter_records()):
            lines = stored_lines.get(rec.docid) or document_lines(rec)
            con.execute(
                f"INSERT INTO docs ({OLD_DOC_COLUMNS}) VALUES ({','.join('?' * 12)})",
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
                ),
            )
            con.executemany(
                "INSERT INTO chunks VALUES (?,?,?,?,?)",
                [(c.docid, c.chunk_no, c.line_start, c.line_end, c.text) for c in chunk_document(rec, lines)],
            )
    con.executemany("INSERT INTO meta VALUES (?,?)", new_store.meta().items())
    con.executemany("INSERT INTO citations VALUES (?,?)", new_store.citations())
    con.executemany("INSERT INTO queries VALUES (?,?)", new_store.queries().items())
    con.executemany(
        "INSERT INTO qrels VALUES (?,?,?,?)",
        [(s, q, d, v) for s in new_store.splits() for q, docs in new_store.qrels(s).items() for d, v in docs.items()],
    )
    con.commit()
    con.close()


# -- a corpus of long and awkward documents --------------------------------------------------


def long_text(i: int) -> str:
    rng = random.Random(i)
    paras = [filler(i * 31 + p, rng.randint(40, 160)) for p in range(rng.randint(20, 40))]
    if i % 4 == 1:  # what textwrap treats specially: tabs, indents, a long word, a no-break space
        paras[1] = "\tindented\twith tabs " + paras[1]
        paras[2] = "    " + paras[2] + " " + "x" * 130 + " tail"
        paras[3] = paras[3].replace(" ", "\u00a0", 3) + " \u00a0 lone"
    return "\n\n".join(paras)


def docs(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "_id": f"d{i:03d}",
            "title": f"Document {i}  with\tspaces",
            "text": long_text(i),
            "metadata": {"year": 2000 + i % 20, "venue": "Venue", "authors": ["Ann Lee"], "keywords": ["kw", f"k{i}"]},
        }
        for i in range(start, start + n)
    ]


@pytest.fixture
def new_store(tmp_path: Path) -> CorpusStore:
    folder = write_beir(
        tmp_path / "beir",
        docs(40),
        queries={"q1": "first query", "q2": "second"},
        qrels={"test": [("q1", "d001", 2), ("q2", "d003", 1)]},
        citations=[("d001", "d002"), ("d003", "d001")],
    )
    db = tmp_path / "new.sqlite"
    write_corpus_db(db, read_corpus(folder), "layout")
    return CorpusStore(db, "layout")


def raw_text_bytes(store: CorpusStore) -> int:
    return sum(len(r.title.encode()) + len(r.text.encode()) for r in store.iter_records())


def columns(db: Path, table: str) -> set[str]:
    with sqlite3.connect(db) as con:
        return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def assert_same_reads(a: CorpusStore, b: CorpusStore) -> None:
    """Every public read of two stores agrees: records, lines, chunks, spans, counts, hashes."""
    ids = [r.docid for r in a.iter_records()]
    assert ids == [r.docid for r in b.iter_records()]
    assert list(a.iter_records()) == list(b.iter_records())
    assert list(a.iter_chunks()) == list(b.iter_chunks())
    asked = [*ids, "nope"]
    assert a.get_many(asked) == b.get_many(asked)
    assert a.chunks_many([*ids[::3], "nope"]) == b.chunks_many([*ids[::3], "nope"])
    assert a.stats() == b.stats() and a.hashes() == b.hashes() and a.count() == b.count()
    assert (a.citations(), a.queries(), a.qrels("test")) == (b.citations(), b.queries(), b.qrels("test"))
    rng = random.Random(7)
    for docid in ids:
        lines = a.lines(docid)
        assert lines is not None and lines == b.lines(docid)
        assert a.get(docid) == b.get(docid) and a.chunks(docid) == b.chunks(docid)
        size = len("\n".join(lines))
        for _ in range(5):
            x, y = sorted(rng.randint(0, size) for _ in range(2))
            assert a.read_span(docid, x, y) == b.read_span(docid, x, y) == "\n".join(lines)[x:y]
    assert a.lines("nope") is b.lines("nope") is None and a.chunks("nope") == b.chunks("nope") == []
    assert a.read_span(ids[0], 5, 10**9) is None


# -- tests -----------------------------------------------------------------------------------


WRAP_ALPHABET = ["a", "bc", "defgh", " ", " ", "   ", "\t", "\u00a0", "\u3000", "-", "é", "\r", " " * 9, "x" * 12]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(WRAP_ALPHABET), max_size=40).map("".join), st.integers(1, 16))
def test_wrap_is_textwrap_line_for_line(para: str, width: int) -> None:
    assert wrap(para, width) == textwrap.wrap(para, width, break_long_words=True, break_on_hyphens=False)


def test_numbered_lines_are_textwraps_on_long_documents() -> None:
    for i in range(60):
        rec = DocRecord(docid="d", title="T", text=long_text(i))
        fast = document_lines(rec)
        with textwrap_lines():
            assert fast == document_lines(rec)


def test_the_new_layout_keeps_the_text_once(new_store: CorpusStore, tmp_path: Path) -> None:
    db = new_store.path
    assert "lines" not in columns(db, "docs") and not columns(db, "chunks"), "no lines JSON, no chunk table"
    with sqlite3.connect(db) as con:
        layout, text = con.execute("SELECT SUM(LENGTH(layout)), SUM(LENGTH(text)) FROM docs").fetchone()
        first = json.loads(con.execute("SELECT layout FROM docs WHERE docid='d000'").fetchone()[0])
    assert layout < 0.15 * text, "lines and chunks are offsets, not text"
    assert first["l"][:2] == ["Document 0 with spaces", "year: 2000 | venue: Venue | authors: Ann Lee"]
    assert first["l"][-1] == "keywords: kw, k0"
    assert all(isinstance(x, int) or x == "" for x in first["l"][2:-1]), "the body: slices and blank lines"
    assert not new_store.old_layout
    raw = raw_text_bytes(new_store)
    assert db.stat().st_size <= 1.3 * raw, (db.stat().st_size, raw)
    old = tmp_path / "old.sqlite"
    write_old_layout(old, new_store)
    assert old.stat().st_size >= 2.5 * raw, "the old layout kept three copies"
    assert new_store.stats()["chunks"] == sum(
        len(chunk_document(r, document_lines(r))) for r in new_store.iter_records()
    )


def test_an_old_layout_store_reads_back_identically(new_store: CorpusStore, tmp_path: Path) -> None:
    old_db = tmp_path / "old.sqlite"
    write_old_layout(old_db, new_store)
    old = CorpusStore(old_db, "layout")
    assert old.old_layout
    assert_same_reads(old, new_store)


def test_an_incremental_change_to_an_old_layout_store_writes_the_new_layout(
    new_store: CorpusStore, tmp_path: Path
) -> None:
    """Every document keeps the lines and chunks the old store kept — including one an older
    Quarry made differently (its title not normalised, as at 9739693), so no span moves."""
    quirky = new_store.get("d005")
    assert quirky is not None
    with textwrap_lines():
        as_stored = [quirky.title, *document_lines(quirky)[1:]]
    assert as_stored != document_lines(quirky)
    old_db = tmp_path / "old.sqlite"
    write_old_layout(old_db, new_store, {"d005": as_stored})
    old = CorpusStore(old_db, "layout")
    changed = [
        DocRecord(docid="d001", title="Changed", text=long_text(99)),
        DocRecord(docid="n001", title="New", text=long_text(100)),
    ]
    delta = diff(old.hashes(), changed, remove_missing=False)
    out = tmp_path / "next.sqlite"
    count = update_corpus_db(old_db, out, delta, fingerprint="next")
    assert count == 41
    assert "lines" not in columns(out, "docs") and not columns(out, "chunks")
    nxt = CorpusStore(out, "layout")
    assert not nxt.old_layout and nxt.fingerprint == "next"
    assert nxt.lines("d005") == as_stored == old.lines("d005")
    assert nxt.chunks("d005") == old.chunks("d005")
    text = "\n".join(as_stored)
    assert nxt.read_span("d005", 0, len(text)) == text
    for docid in [r.docid for r in old.iter_records()]:
        if docid != "d001":
            assert (nxt.get(docid), nxt.lines(docid), nxt.chunks(docid)) == (
                old.get(docid),
                old.lines(docid),
                old.chunks(docid),
            )
    assert nxt.get("d001") == changed[0] and nxt.get("n001") == changed[1]
    assert nxt.lines("n001") == document_lines(changed[1])
    assert nxt.hashes() == {**old.hashes(), "d001": content_hash(changed[0]), "n001": content_hash(changed[1])}
    assert nxt.stats()["chunks"] == sum(len(c) for c in nxt.chunks_many(nxt.hashes()).values())
    assert (nxt.citations(), nxt.queries(), nxt.qrels("test")) == (old.citations(), old.queries(), old.qrels("test"))
    with sqlite3.connect(out) as con:
        kept = json.loads(con.execute("SELECT layout FROM docs WHERE docid='d005'").fetchone()[0])
    assert kept["l"][0] == "Document 5  with\tspaces", "the title line as the old store kept it"


def test_adding_to_and_removing_from_an_old_layout_collection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = write_beir(tmp_path / "beir", docs(12))
    ingest(folder, "old", home=home, build_lucene=False)
    col = Collection("old", home)
    reference = CorpusStore(col.paths.corpus_db, "old")
    legacy = tmp_path / "legacy.sqlite"
    write_old_layout(legacy, reference)
    legacy.replace(col.paths.corpus_db)  # the collection as an older Quarry left it
    before = Collection("old", home).corpus
    assert before.old_layout
    before_reads = {d: (before.lines(d), before.chunks(d)) for d in before.hashes()}

    extra = tmp_path / "extra"
    write_beir(extra, docs(2, start=50))
    add("old", [extra / "corpus.jsonl"], home=home)
    after = Collection("old", home).corpus
    assert not after.old_layout and after.count() == 14
    assert {d: (after.lines(d), after.chunks(d)) for d in before_reads} == before_reads
    remove("old", ["d000"], home=home)
    final = Collection("old", home).corpus
    assert not final.old_layout and final.count() == 13 and final.get("d000") is None
    assert final.lines("d001") == before_reads["d001"][0]
