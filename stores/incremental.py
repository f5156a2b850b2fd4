"""Incremental change of a collection's corpus: which documents are new, changed or gone (by
content hash), and a staged copy of the corpus database with exactly those rows replaced.

`stores.collection` drives it (lock, staging, Lucene, commit); `stores.dense_update` does the
same for the vectors, so unchanged documents are never re-embedded.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from stores.corpus import insert_records, replace_extras
from stores.corpus_migration import convert_old_layout, is_old_layout
from stores.file_formats.corpus_reader import CorpusSource
from stores.records import DocRecord, content_hash


@dataclass(frozen=True)
class Delta:
    """What changes: `upserts` are new or changed records; `removed` docids leave the corpus."""

    upserts: tuple[DocRecord, ...]
    removed: tuple[str, ...]
    added: int
    updated: int
    kept: int

    @property
    def empty(self) -> bool:
        return not self.upserts and not self.removed

    @property
    def replaced(self) -> tuple[str, ...]:
        """Every docid whose old rows (and vectors) go: removed and changed documents."""
        return (*self.removed, *(r.docid for r in self.upserts[self.added :]))


def diff(old: dict[str, str], records: Iterable[DocRecord], *, remove_missing: bool) -> Delta:
    """Compare records with the stored content hashes (`CorpusStore.hashes()`). New records come
    first in `upserts`, then changed ones. With `remove_missing`, stored documents the records
    do not name are removed (a re-ingest); without, they are kept (an add)."""
    new, changed, kept, seen = [], [], 0, set()
    for rec in records:
        seen.add(rec.docid)
        stored = old.get(rec.docid)
        if stored is None:
            new.append(rec)
        elif stored != content_hash(rec):
            changed.append(rec)
        else:
            kept += 1
    removed = tuple(d for d in old if d not in seen) if remove_missing else ()
    return Delta(tuple(new + changed), removed, len(new), len(changed), kept)


def removal(old: dict[str, str], docids: Iterable[str]) -> Delta:
    gone = tuple(dict.fromkeys(d for d in docids if d in old))
    return Delta((), gone, 0, 0, len(old) - len(gone))


def delta_fingerprint(previous: str, delta: Delta) -> str:
    """A new corpus fingerprint for an add or a removal: the old one plus exactly what changed."""
    change = [sorted((r.docid, content_hash(r)) for r in delta.upserts), sorted(delta.removed)]
    return hashlib.sha256(f"{previous}\n{json.dumps(change)}".encode()).hexdigest()


def _delete(con: sqlite3.Connection, table: str, column: str, docids: list[str]) -> None:
    for start in range(0, len(docids), 500):
        part = docids[start : start + 500]
        con.execute(f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * len(part))})", part)


def update_corpus_db(
    old_db: Path,
    new_db: Path,
    delta: Delta,
    *,
    fingerprint: str,
    src: CorpusSource | None = None,
    order: list[str] | None = None,
) -> int:
    """Copy `old_db` to `new_db` and apply `delta` there (the old file is never written). An
    old-layout `old_db` (numbered lines and chunk texts stored) is written in the current layout.

    With `src` (a re-ingest), the source, kind, citations, queries, answers and judgements come
    from it and `order` renumbers documents as the source lists them; without (an add or a
    removal), they are kept, less citations touching removed documents. Returns the count."""
    probe = sqlite3.connect(f"file:{old_db}?mode=ro", uri=True)
    try:
        old_layout = is_old_layout(probe)
    finally:
        probe.close()
    if old_layout:
        convert_old_layout(old_db, new_db)
    else:
        shutil.copyfile(old_db, new_db)
    con = sqlite3.connect(new_db)
    try:
        gone = list(delta.replaced)
        _delete(con, "docs", "docid", gone)
        if src is None:
            _delete(con, "citations", "citing", list(delta.removed))
            _delete(con, "citations", "cited", list(delta.removed))
        first = con.execute("SELECT COALESCE(MAX(ord), -1) + 1 FROM docs").fetchone()[0]
        insert_records(con, list(delta.upserts), first)
        if src is not None:
            replace_extras(con, src)
            con.executemany(
                "UPDATE meta SET value=? WHERE key=?", [(str(src.path.resolve()), "source"), (src.kind, "kind")]
            )
        if order is not None:
            con.executemany("UPDATE docs SET ord=? WHERE docid=?", [(i, d) for i, d in enumerate(order)])
        count = con.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
        con.executemany(
            "UPDATE meta SET value=? WHERE key=?", [(fingerprint, "fingerprint"), (str(count), "documents")]
        )
        con.commit()
    finally:
        con.close()
    return count
