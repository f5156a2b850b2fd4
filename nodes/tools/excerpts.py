"""Query-biased excerpts: ~220 characters of a document around the first query-term match.

Matching is by word prefix (the first 4+ letters of each query word), a light stand-in for
the Lucene stemmer that avoids a JVM round trip per preview; stopwords never anchor a snippet.
"""

from __future__ import annotations

import re
from functools import lru_cache

EXCERPT_CHARS = 220
CUT = "…"  # marks an end of an excerpt that was cut from longer text
_WORD = re.compile(r"\w+", re.UNICODE)
_WORD_CHAR = re.compile(r"\w", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have i if in into is it its of on or such that the their then "
    "there these they this to was were what which who will with about after all also any been before can did "
    "do does how i'd i'm me my not no nor our should so some than them those through under up we when where "
    "while would you your like find articles article papers paper interested especially exist exists deal deals "
    "describing describe describes discuss discussing want need looking information concerning regarding "
    "please any anything something".split()
)


def query_terms(query: str) -> list[str]:
    """Content words of a query, lowercased, in order, without repeats."""
    words = (w.lower() for w in _WORD.findall(query or ""))
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and (len(w) > 1 or not w.isascii())))


@lru_cache(maxsize=256)
def _stems(terms: tuple[str, ...]) -> tuple[frozenset[str], tuple[int, ...]]:
    """The terms' prefix stems, and their lengths longest first (a word matches if it starts with one)."""
    stems = frozenset(t if len(t) <= 4 else t[: max(4, len(t) - 3)] for t in terms)
    return stems, tuple(sorted({len(s) for s in stems}, reverse=True))


def _first_match(text: str, stems: frozenset[str], lengths: tuple[int, ...]) -> re.Match[str] | None:
    """The first word of `text` that starts with a stem (a stem is word characters only).

    Found by searching the lowercased text for each stem (`str.find`, in C) and keeping the
    earliest hit at a word's start: a Python loop over every word cost ~1 ms per excerpt of a
    5,000-word document whose first match is far in (five excerpts were a third of a warm `quarry
    search` there). Where lowercasing changes the text's length (a few letters, such as 'İ',
    lowercase to two characters) positions would not line up, and the words are walked one by one.
    Compiling an alternation regex of every query's stems instead cost ~0.5 ms a query (most of
    the search tool's overhead on long queries, see bench/bench_search.py)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return _first_match_by_word(text, stems, lengths)
    best = len(text)
    for stem in stems:
        at = lowered.find(stem)
        while 0 < at < best and _WORD_CHAR.match(text, at - 1):  # inside a word: not its start
            at = lowered.find(stem, at + 1)
        if 0 <= at < best:
            best = at
    return _WORD.match(text, best) if best < len(text) else None


def _first_match_by_word(text: str, stems: frozenset[str], lengths: tuple[int, ...]) -> re.Match[str] | None:
    """`_first_match` one word at a time (for text whose lowercase form is of another length)."""
    for match in _WORD.finditer(text):
        word = match.group().lower()
        for n in lengths:
            if word[:n] in stems:
                return match
    return None


def excerpt(text: str, query: str, width: int = EXCERPT_CHARS) -> str:
    """A window of `width` characters centred on the first query-term match (else the start)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    stems, lengths = _stems(tuple(query_terms(query)))
    match = _first_match(text, stems, lengths) if stems else None
    centre = match.start() if match else 0
    start = max(0, min(centre - width // 3, len(text) - width))
    end = min(len(text), start + width)
    if start > 0:  # do not cut a word in half
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < centre else start
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > (match.end() if match else start) else end
    return (CUT if start > 0 else "") + text[start:end].strip() + (CUT if end < len(text) else "")
