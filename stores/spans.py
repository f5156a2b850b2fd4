"""Exact provenance: character spans in a document's text, and the lines (and pages) they cover.

A document's text, for provenance, is its numbered lines (`read_document`'s view: title,
metadata, wrapped text, keywords) joined by newlines — exactly what Quarry reads and quotes. A
span is a half-open `[char_start, char_end)` range of that text; reading it back
(`CorpusStore.read_span`) gives the quote byte for byte.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True)
class Span:
    char_start: int
    char_end: int
    line_start: int   # 1-based, inclusive
    line_end: int


def document_text(lines: list[str]) -> str:
    return "\n".join(lines)


def line_offsets(lines: list[str]) -> list[int]:
    """The character offset at which each line starts in `document_text(lines)`."""
    return [0, *accumulate(len(line) + 1 for line in lines[:-1])] if lines else []


def span_of(lines: list[str], char_start: int, char_end: int) -> Span:
    """The span with the lines it touches."""
    offsets = line_offsets(lines)
    first = bisect.bisect_right(offsets, char_start)
    last = bisect.bisect_right(offsets, max(char_start, char_end - 1))
    return Span(char_start, char_end, max(first, 1), max(last, 1))


def find_exact(lines: list[str], quote: str, from_line: int = 1) -> Span | None:
    """Where `quote` occurs verbatim, searching from the start of line `from_line`."""
    if not quote:
        return None
    offsets = line_offsets(lines)
    start = offsets[from_line - 1] if 0 < from_line <= len(offsets) else 0
    pos = document_text(lines).find(quote, start)
    return span_of(lines, pos, pos + len(quote)) if pos >= 0 else None


def find_loose(lines: list[str], quote: str) -> Span | None:
    """Where `quote` occurs with case and spacing ignored (a model's quote of wrapped lines):
    the span of the document's own text, which is what a result then quotes."""
    words = quote.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)
    match = pattern.search(document_text(lines))
    return span_of(lines, match.start(), match.end()) if match else None
