"""How a document is a row of the corpus store's `docs` table (`stores.corpus`): its columns, and
its numbered lines and chunks kept as offsets into its text (`docs.layout`) — encoded when it is
stored, decoded on every read, byte for byte what `stores.records` derived."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from stores import compact_json
from stores.records import Chunk, DocRecord, chunk_ranges, content_hash, document_lines

DOC_COLUMNS = "ord, docid, title, year, venue, authors, keywords, extras, page_starts, hash, chunks, layout, text"


# How far past the previous line a line is looked for in the text: further, it is kept as itself
# (bounds the search when many lines are not slices, e.g. a paragraph of tabs).
_LOOK_AHEAD = 1000


def encode_layout(text: str, lines: list[str], chunks: list[tuple[int, int]], texts: list[str] | None = None) -> str:
    """`docs.layout` of a document: its lines as slices of `text` where they are, its chunks'
    last lines (and, only for chunks an old store kept that are not consecutive runs of lines
    joined, their first lines and texts)."""
    items: list[int | str] = []
    end = 0
    for line in lines:
        at = text.find(line, end, end + len(line) + _LOOK_AHEAD) if line else -1
        if at < 0:
            items.append(line)
        else:
            items += (at - end, len(line))
            end = at + len(line)
    layout: dict[str, Any] = {"l": items, "c": [b for _, b in chunks]}
    if [a for a, _ in chunks] != [1, *(b + 1 for _, b in chunks[:-1])]:  # never cut by chunk_document
        layout["s"] = [a for a, _ in chunks]
    if texts is not None:
        layout["t"] = texts
    return compact_json.dumps(layout)


def decode_lines(text: str, layout: dict[str, Any]) -> list[str]:
    """The numbered lines `encode_layout` kept."""
    lines: list[str] = []
    end = 0
    items = iter(layout["l"])
    for item in items:
        if isinstance(item, str):
            lines.append(item)
        else:
            start = end + item
            end = start + next(items)
            lines.append(text[start:end])
    return lines


def decode_chunks(docid: str, lines: list[str], layout: dict[str, Any]) -> list[Chunk]:
    """The chunks `encode_layout` kept, their texts joined from `lines`."""
    texts, starts = layout.get("t"), layout.get("s")
    chunks, start = [], 1
    for no, last in enumerate(layout["c"]):
        start = starts[no] if starts is not None else start
        text = texts[no] if texts is not None else "\n".join(lines[start - 1 : last])
        chunks.append(Chunk(docid=docid, chunk_no=no, line_start=start, line_end=last, text=text))
        start = last + 1
    return chunks


def doc_row(ord_: int, rec: DocRecord, layout: str, chunks: int, hash_: str | None = None) -> tuple[Any, ...]:
    """A `docs` row in DOC_COLUMNS order."""
    return (
        ord_,
        rec.docid,
        rec.title,
        rec.year,
        rec.venue,
        compact_json.dumps(rec.authors),
        compact_json.dumps(rec.keywords),
        compact_json.dumps(rec.extras),
        compact_json.dumps(rec.page_starts),
        hash_ or content_hash(rec),
        chunks,
        layout,
        rec.text,
    )


INSERT_DOC = f"INSERT INTO docs ({DOC_COLUMNS}) VALUES ({','.join('?' * len(DOC_COLUMNS.split(',')))})"


def new_doc_row(ord_: int, rec: DocRecord) -> tuple[Any, ...]:
    lines = document_lines(rec)
    chunks = chunk_ranges(lines)
    return doc_row(ord_, rec, encode_layout(rec.text, lines, chunks), len(chunks))


RECORD_COLUMNS = "docid, title, text, year, venue, authors, keywords, extras"
PAGED_RECORD_COLUMNS = RECORD_COLUMNS + ", page_starts"


def record_of(row: sqlite3.Row) -> DocRecord:
    """The record a row of RECORD_COLUMNS (or PAGED_RECORD_COLUMNS) holds."""
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
