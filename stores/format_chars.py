"""Invisible format characters (Unicode category Cf) removed from what BM25 compares.

A soft hyphen (U+00AD), a zero-width space or joiner (U+200B–U+200D), a direction mark or
embedding (U+200E/F, U+202A–U+202E, U+2066–U+2069), a word joiner (U+2060) or a byte-order mark
(U+FEFF) draws nothing, yet Lucene's tokenizer keeps it inside the word it touches: a query ending
in a right-to-left mark, as pasted from an RTL page, finds nothing, and a document hyphenated with
soft hyphens ("inter\\u00ADnational") is not found by the word a reader sees. So both sides drop
them: every query on its way to Lucene (`stores.lucene.bag_of_words`) and every document on its
way into the index (`stores.lucene_build.index_line`). The dense side needs nothing: MiniLM's
tokenizer already drops them.

Dropped, not replaced by a space: the text then reads as it is drawn ("inter\\u00ADnational" is
"international", as MiniLM reads it too). Why not NFKC as well: it rewrites visible characters that
carry meaning ("x²" → "x2", "protein¹" → "protein1", "™" → "TM"), which would join footnote marks
to words and change the terms (and pinned scores) of indexes built so far; format characters carry
no letters, so removing them changes no visible text. Category Cf from the `regex` module's
Unicode tables (tag characters, U+E0001–U+E007F, included: they hide text from a reader too).
"""

from __future__ import annotations

import regex

_FORMAT = regex.compile(r"\p{Cf}+")


def drop_format_chars(text: str) -> str:
    """`text` without its format characters (ASCII text has none and is returned as it is: the
    check is constant-time in CPython, which keeps the indexing feed's common case free)."""
    if text.isascii():
        return text
    return _FORMAT.sub("", text)
