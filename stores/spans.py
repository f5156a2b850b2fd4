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
    line_start: int  # 1-based, inclusive
    line_end: int


def document_text(lines: list[str]) -> str:
    return "\n".join(lines)


@dataclass(frozen=True)
class DocumentText:
    """One document's text and line offsets, built once and asked many times (every quote of a
    ranked document is located in the same text)."""

    lines: list[str]
    text: str
    offsets: tuple[int, ...]  # where each line starts in `text`

    @classmethod
    def of(cls, lines: list[str]) -> DocumentText:
        return cls(
            lines, document_text(lines), tuple([0, *accumulate(len(line) + 1 for line in lines[:-1])]) if lines else ()
        )

    def span(self, char_start: int, char_end: int) -> Span:
        """The span with the lines it touches."""
        first = bisect.bisect_right(self.offsets, char_start)
        last = bisect.bisect_right(self.offsets, max(char_start, char_end - 1))
        return Span(char_start, char_end, max(first, 1), max(last, 1))

    def line_range(self, first: int, last: int) -> tuple[int, int]:
        """`[start, end)` of lines `first`..`last` (1-based, inclusive), clamped to the document."""
        first, last = max(1, first), min(len(self.lines), last)
        if not self.lines or first > last:
            return 0, len(self.text)
        return self.offsets[first - 1], self.offsets[last - 1] + len(self.lines[last - 1])

    def find_exact(self, quote: str, from_line: int = 1) -> Span | None:
        """Where `quote` occurs verbatim, searching from the start of line `from_line`."""
        if not quote:
            return None
        start = self.offsets[from_line - 1] if 0 < from_line <= len(self.offsets) else 0
        pos = self.text.find(quote, start)
        return self.span(pos, pos + len(quote)) if pos >= 0 else None

    def find_loose(self, quote: str) -> Span | None:
        """Where `quote` occurs with case and spacing ignored (a model's quote of wrapped lines):
        the span of the document's own text, which is what a result then quotes."""
        words = quote.split()
        if not words:
            return None
        match = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE).search(self.text)
        return self.span(match.start(), match.end()) if match else None


def span_of(lines: list[str], char_start: int, char_end: int) -> Span:
    return DocumentText.of(lines).span(char_start, char_end)


def find_loose(lines: list[str], quote: str) -> Span | None:
    return DocumentText.of(lines).find_loose(quote)
