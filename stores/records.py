"""The document record and its deterministic reading layout (lines and chunks).

A record has three layers: metadata (title, year, venue, authors, keywords, free extras), the
body text, and chunks — short runs of lines that the evidence locator scores later. Lines and
chunks are derived deterministically from the record, so the same input always yields the same
line numbers, which is what makes evidence line ranges reproducible.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from bisect import bisect_right
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

LINE_WIDTH = 100
CHUNK_MAX_CHARS = 600


class DocRecord(BaseModel):
    """One validated document. `docid` is always a string."""

    model_config = ConfigDict(frozen=True)

    docid: str
    title: str = ""
    text: str = ""
    year: int | None = None
    venue: str | None = None
    authors: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    extras: dict[str, Any] = Field(default_factory=dict)
    # Pages of a paginated source (PDF): the 0-based index, in `text.splitlines()`, of the first
    # text line of each page, so `page_starts[n - 1]` is where page n begins. Empty for sources
    # without pages. `line_pages` / `page_of_line` map a numbered document line to its page.
    page_starts: tuple[int, ...] = ()

    def index_contents(self) -> str:
        """What BM25 sees: title + text + keywords (authors and venue stay metadata)."""
        return "\n".join(p for p in (self.title, self.text, ", ".join(self.keywords)) if p)


def record_json(rec: DocRecord) -> str:
    """The record's canonical JSON (what fingerprints hash). `page_starts` is left out when empty,
    so records without pages hash as they did before pages existed."""
    return rec.model_dump_json(exclude={"page_starts"} if not rec.page_starts else None)


def content_hash(rec: DocRecord) -> str:
    """A document's content hash: equal hashes mean re-ingesting it changes nothing."""
    return hashlib.sha256(record_json(rec).encode()).hexdigest()


def last_name(name: str) -> str:
    """An author's last name, lower-cased — the one rule for stored authors and names in an
    intent: 'Udo Pooch' → 'pooch'; 'Pooch, U.W.' → 'pooch'; 'Smith J.' → 'smith'."""
    name = name.strip()
    if "," in name:
        return name.split(",", 1)[0].strip().lower()
    words = [w for w in name.replace(".", ". ").split() if not re.fullmatch(r"[A-Z]\.?", w)]
    return (words[-1] if words else name).strip(".").lower()


class Chunk(BaseModel):
    """A passage of a document with its 1-based, inclusive line range."""

    model_config = ConfigDict(frozen=True)

    docid: str
    chunk_no: int
    line_start: int
    line_end: int
    text: str


def _meta_line(rec: DocRecord) -> str:
    parts = []
    if rec.year is not None:
        parts.append(f"year: {rec.year}")
    if rec.venue:
        parts.append(f"venue: {rec.venue}")
    if rec.authors:
        parts.append("authors: " + "; ".join(rec.authors))
    return " | ".join(parts)


# A "word" of whitespace other than spaces (textwrap splits at ASCII whitespace only, but
# `str.strip` empties such a word, so textwrap drops it at a line's edge like a space).
_UNUSUAL = re.compile(r"(?<![^ ])[^\S ]+(?![^ ])")
_MUNGED = re.compile(r"[\t\n\x0b\x0c\r]")  # what textwrap turns into spaces (tabs expanded first)


def wrap(para: str, width: int = LINE_WIDTH) -> list[str]:
    """`textwrap.wrap(para, width, break_long_words=True, break_on_hyphens=False)`, line for line,
    several times faster: the lines are slices of the paragraph (tabs expanded), each ending at
    the last space that keeps it within `width`. The corpus store keeps only the text and reads
    derive the numbered lines with this, so it must be cheap. Paragraphs textwrap treats
    specially — a word longer than the width (it breaks it), a first line opening with more spaces
    than the width, a word of other whitespace — go to textwrap itself. tests/test_corpus_layout.py
    holds it to textwrap's output."""
    p = para.expandtabs().translate(textwrap.TextWrapper.unicode_whitespace_trans) if _MUNGED.search(para) else para
    if not p.isprintable() and _UNUSUAL.search(p):  # every whitespace character but " " is unprintable
        return textwrap.wrap(para, width, break_long_words=True, break_on_hyphens=False)
    out: list[str] = []
    start, n = 0, len(p)
    if n - len(p.lstrip(" ")) > width:
        return textwrap.wrap(para, width, break_long_words=True, break_on_hyphens=False)
    while start < n:
        if n - start <= width:
            line = p[start:].rstrip(" ")
            if line:
                out.append(line)
            break
        end = start + width
        if p[end] != " ":  # the word at `end` does not fit: break before it
            space = p.rfind(" ", start, end)
            if space < 0:  # a word longer than the width
                return textwrap.wrap(para, width, break_long_words=True, break_on_hyphens=False)
            end = space + 1
        line = p[start:end].rstrip(" ")
        if line:  # only the first line can be all spaces (textwrap keeps leading spaces there)
            out.append(line)
        start = end
        while start < n and p[start] == " ":  # a line never starts with the spaces it broke at
            start += 1
    return out


_HEADER, _TRAILER = -1, -2  # source of the title/metadata lines and of the keywords line


def _layout(rec: DocRecord) -> list[tuple[str, int]]:
    """Each numbered line with the index of the `text.splitlines()` line it comes from."""
    lines = [(" ".join(rec.title.split()) or "(untitled)", _HEADER)]  # a title is always exactly line 1
    meta = _meta_line(rec)
    if meta:
        lines.append((meta, _HEADER))
    for source, para in enumerate(rec.text.splitlines()):
        para = para.rstrip()
        if not para.strip():
            if lines and lines[-1][0] != "":
                lines.append(("", source))
            continue
        lines.extend((w, source) for w in wrap(para) or [""])
    while lines and lines[-1][0] == "":
        lines.pop()
    if rec.keywords:
        lines.append(("keywords: " + ", ".join(rec.keywords), _TRAILER))
    return lines


def document_lines(rec: DocRecord) -> list[str]:
    """The numbered lines `read_document` shows: title, metadata, wrapped text, keywords."""
    return [line for line, _ in _layout(rec)]


def line_pages(rec: DocRecord) -> list[int | None]:
    """The page of each numbered line (index 0 is line 1), or [] for a record without pages.
    Title and metadata lines belong to page 1; the keywords line (from the file's metadata,
    printed on no page) to None."""
    if not rec.page_starts:
        return []
    starts = list(rec.page_starts)
    out: list[int | None] = []
    for _, source in _layout(rec):
        if source == _HEADER:
            out.append(1)
        elif source == _TRAILER:
            out.append(None)
        else:
            out.append(max(1, bisect_right(starts, source)))
    return out


def page_of_line(rec: DocRecord, line_no: int) -> int | None:
    """The page that numbered line `line_no` (1-based, as `read_document` shows it) is on;
    None for a record without pages, a line out of range, or the keywords line."""
    pages = line_pages(rec)
    return pages[line_no - 1] if 1 <= line_no <= len(pages) else None


def chunk_ranges(lines: list[str]) -> list[tuple[int, int]]:
    """The 1-based, inclusive line range of each chunk `chunk_document` cuts from `lines`."""
    ranges: list[tuple[int, int]] = []
    start, size = 1, 0
    for no, line in enumerate(lines, start=1):
        if no > start and size + len(line) > CHUNK_MAX_CHARS:
            ranges.append((start, no - 1))
            start, size = no, 0
        size += len(line) + 1
    if lines:
        ranges.append((start, len(lines)))
    return ranges


def chunk_document(rec: DocRecord, lines: list[str]) -> list[Chunk]:
    """Split lines into consecutive passages of at most ~600 characters (never mid-line).

    The title line is part of the first chunk so that short records (title only) still have
    one chunk to serve as evidence.
    """
    return [
        Chunk(docid=rec.docid, chunk_no=no, line_start=a, line_end=b, text="\n".join(lines[a - 1 : b]))
        for no, (a, b) in enumerate(chunk_ranges(lines))
    ]


def body_lines(rec: DocRecord) -> tuple[int, int]:
    """The first and last numbered line of the record's text (between the title/metadata lines
    and the keywords line): a quote's sentences never reach outside them. (1, 1) for a record
    that is only a title."""
    layout = _layout(rec)
    body = [no for no, (_, source) in enumerate(layout, start=1) if source not in (_HEADER, _TRAILER)]
    return (body[0], body[-1]) if body else (1, 1)


def quotable_chunks(rec: DocRecord, chunks: list[Chunk]) -> list[Chunk]:
    """The chunks as evidence quotes them: the first chunk without its title and metadata lines,
    the last without the keywords line
    (a result shows those beside the quote; quoted, "year: 2021 | venue: …" crowded out the
    passage), keeping its honest line range. A chunk that is only header stays whole, so a
    title-only record still has evidence. Stored chunks, and the vectors built from them, are
    unchanged."""
    header = 1 + bool(_meta_line(rec))
    _, last_body = body_lines(rec)
    out = []
    for chunk in chunks:
        if chunk.line_start == 1 and chunk.line_end > header:
            body = chunk.text.split("\n")[header:]
            chunk = chunk.model_copy(update={"line_start": header + 1, "text": "\n".join(body)})
        if rec.keywords and chunk.line_start <= last_body < chunk.line_end:  # nor the keywords line
            kept = chunk.text.split("\n")[: last_body - chunk.line_start + 1]
            chunk = chunk.model_copy(update={"line_end": last_body, "text": "\n".join(kept)})
        out.append(chunk)
    return out
