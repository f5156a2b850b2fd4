"""What reading one document file gives (`FileDocument`), how it fails (`Unreadable`), and the
limits every format reader applies (`MAX_DOCUMENT_CHARS`, `TITLE_MAX_CHARS`, `cap_title`).

Its own module so that `stores.file_formats.dispatch` (which dispatches on the suffix) and the format readers
it calls (`stores.file_formats.pdf`) both import it, and neither imports the other: a paged reader checks the
size limit and caps its title itself, as its page offsets index the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_DOCUMENT_CHARS", "TITLE_MAX_CHARS", "FileDocument", "Unreadable", "cap_title"]

# The Lucene indexer (Anserini's JSON reader) refuses a document over 20 million characters and
# would drop the rest of its shard; Quarry refuses such documents itself, with the reason. Here
# (not in stores.file_formats.corpus_reader) so a paged reader can stop as soon as a file passes it.
MAX_DOCUMENT_CHARS = 10_000_000
# Long enough for real titles (the longest in CACM, Cranfield and scifact-train have 214, 249 and
# 300 characters), short enough to show on a result line or two.
TITLE_MAX_CHARS = 400


class Unreadable(ValueError):
    """A file that gives no document; `str()` is the reason."""


@dataclass(frozen=True)
class FileDocument:
    """What a file says: `metadata` holds raw year/venue/authors/keywords/doi values, validated
    by the reader like a JSONL record's; `page_starts` as in `stores.records.DocRecord`."""

    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    page_starts: tuple[int, ...] = ()


def cap_title(title: str, limit: int = TITLE_MAX_CHARS) -> str:
    """`title` if it has at most `limit` characters, else its start cut at a word boundary (or
    mid-word when the first word alone is too long) with "…", `limit` characters at most."""
    if len(title) <= limit:
        return title
    head = " ".join(title[: limit * 2].split())  # whitespace runs count once, as they are shown
    if len(head) <= limit:
        return head
    cut = head[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
