"""Sentences and quotes: where a passage's sentences start and end (`sentences`), which span of
it is quoted for a requirement (`quote_span`, `sentence_quote`, `whole_sentences`), how a quote
is shown (`display_text`, `quote`), and the crude word stems both compare (`stem`, `stems`).

Split from `nodes.evidence.scoring` because these are text rules, used by answers, citation checks and
results as well as by scoring; `nodes.evidence.scoring` keeps what turns a quote into an item score, the
combined score, hard constraints and the feedback query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from nodes.evidence.quotable import definition_line, entry_starts, fence_lines, lead_trim, quotable_spans
from nodes.tools.excerpts import STOPWORDS
from stores.records import Chunk

WORD = re.compile(r"\w+", re.UNICODE)
EVIDENCE_CHARS = 300
QUOTE_MIN_CHARS = 80  # a shorter best sentence is quoted with the sentences after it …
QUOTE_MAX_CHARS = 600  # … up to this; a single sentence longer than SENTENCE_CAP is cut at a word
SENTENCE_CAP = 1000
# A sentence: from a non-space to a terminator (optionally closed by quotes or brackets) that is
# followed by whitespace, or to a blank line, or to a line that starts a bulleted list item ("- ",
# "* ", "• ": each item is its own statement, a list is not one run-on sentence), or to the end.
_SENTENCE = re.compile(
    r"\S.*?(?:[.!?][\"')\]]*(?=\s+[A-Z0-9\"'(\[])|(?=\n[ \t]*\n)|(?=\n[ \t]*[-*+•][ \t]+\S)|\Z)", re.S
)
# Endings that are abbreviations, not sentence ends ("e.g.", "Fig.", "et al.", an initial "J.").
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|No|Dr|Mr|Mrs|Ms|Prof|Inc|Ltd|approx)|"
    r"\b[A-Z])\.$"
)
# A text with no capital letter at all (a lower-cased corpus, as Cranfield's) marks no sentence
# start by case: there any word may start a sentence, and abbreviations are known in any case.
_SENTENCE_CASELESS = re.compile(
    r"\S.*?(?:[.!?][\"')\]]*(?=\s+[\w\"'(\[])|(?=\n[ \t]*\n)|(?=\n[ \t]*[-*+•][ \t]+\S)|\Z)", re.S
)
_ABBREVIATION_CASELESS = re.compile(
    r"\b(?:e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|sec|no|dr|mr|mrs|ms|prof|inc|ltd|"
    r"approx)\.$"
)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# Rendered man pages hyphenate a word at a line end with U+2010 ("connec‐\n tions"): shown with
# whitespace collapsed that reads "connec‐ tions". A U+2010 after a letter, then whitespace (a
# line break, or the space a passage already collapsed it to) and a lower-case letter is such a
# break; the word is joined for reading. Not before "and"/"or"/"to": a suspended hyphen
# ("pre‐ and post‐processing") is written that way on purpose. ASCII "-" is never joined.
_MAN_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])\u2010\s+(?!(?:and|or|to)\b)(?=[a-z])")


def display_text(text: str) -> str:
    """Text as a reader sees a quote: man-page hyphenation breaks joined ("connec‐\n tions" →
    "connections"), whitespace collapsed. Only for showing: the exact quote (`quote` in results,
    `read_span`) keeps the document's characters."""
    return " ".join(_MAN_HYPHEN_BREAK.sub("", text).split())


def quote(text: str) -> str:
    """Evidence text as results show it: hyphenation breaks joined, whitespace collapsed, cut at
    EVIDENCE_CHARS."""
    return display_text(text)[:EVIDENCE_CHARS]


def sentences(text: str, cased: bool | None = None) -> list[tuple[int, int]]:
    """`[start, end)` of each sentence of `text` (whitespace between them excluded). A regular
    expression with an abbreviation list, not a trained splitter (NLTK's punkt needs a model
    download): evidence needs whole sentences, not linguistics. `cased`: whether the document
    this text comes from has capital letters (default: whether `text` has)."""
    cased = any(c.isupper() for c in text) if cased is None else cased
    pattern, abbreviation = (_SENTENCE, _ABBREVIATION) if cased else (_SENTENCE_CASELESS, _ABBREVIATION_CASELESS)
    out: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        end = m.start() + len(m.group().rstrip())
        if (
            out
            and abbreviation.search(text[out[-1][0] : out[-1][1]])
            and not _PARAGRAPH.search(text, out[-1][1], m.start())
        ):
            out[-1] = (out[-1][0], end)
        else:
            out.append((m.start(), end))
    return _cut_entries(text, out)


def _cut_entries(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each span cut before the lines that start a statement of their own without a sentence end
    before them (`nodes.evidence.quotable.entry_starts`: rst fields, table rows, a run of option
    definitions), so that a quote is one definition, not a field list or a `--help` dump."""
    starts = entry_starts(text)
    if not starts:
        return spans
    out: list[tuple[int, int]] = []
    for a, b in spans:
        cuts = [c for c in starts if a < c < b]
        for lo, hi in zip([a, *cuts], [*cuts, b], strict=True):
            while lo < hi and text[lo].isspace():
                lo += 1
            hi = lo + len(text[lo:hi].rstrip())
            if lo < hi:
                out.append((lo, hi))
    return out


def whole_sentences(text: str, start: int, end: int, floor: int = 0, ceiling: int | None = None) -> tuple[int, int]:
    """`[start, end)` widened to the sentences of `text` it touches — a passage (chunk) boundary
    can fall inside a sentence, and a quote must not. Looks within the paragraph, at most
    3 × SENTENCE_CAP characters either side, and never before `floor` or after `ceiling` (the
    document's body: its title, metadata and keywords lines are not sentences of it). A quote
    that began inside its first sentence saw only that sentence's tail, may have found it short
    and taken the next one too (`sentence_quote`): when the whole first sentence reaches
    QUOTE_MIN_CHARS, the quote is that sentence alone."""
    ceiling = len(text) if ceiling is None else ceiling
    if not floor <= start <= end <= ceiling:
        return start, end
    lo = max(floor, start - 3 * SENTENCE_CAP)
    hi = min(ceiling, end + 3 * SENTENCE_CAP)
    para = [m.end() for m in _PARAGRAPH.finditer(text, lo, start)]
    lo = para[-1] if para else lo
    nxt = _PARAGRAPH.search(text, end, hi)
    hi = nxt.start() if nxt else hi
    window = text[lo:hi]
    cased = any(c.isupper() for c in text[floor:ceiling])
    touching = [(lo + a, lo + b) for a, b in sentences(window, cased) if lo + a < end and lo + b > start]
    if not touching:
        return start, end
    trimmed = touching[0][0] + lead_trim(text[touching[0][0] : touching[0][1]])
    if trimmed <= start:  # a heading glued to the quote's sentence stays out of it
        touching[0] = (trimmed, touching[0][1])
    new_start, new_end = min(start, touching[0][0]), max(end, touching[-1][1])
    first = touching[0]
    if first[0] < start and len(touching) > 1 and first[1] - first[0] >= QUOTE_MIN_CHARS:
        new_end = first[1]  # the sentence after it was padding for a tail that looked short
    if new_end - new_start > SENTENCE_CAP + (end - start):  # a run-on: keep what the passage gave
        return start, end
    return new_start, new_end


@lru_cache(maxsize=4096)
def _sentence_spans(text: str, title: str, fenced: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """A passage's sentences and those that may be quoted, once per passage: every checklist item
    of a candidate looks at the same chunks."""
    spans = sentences(text) or [(0, len(text))]
    return spans, quotable_spans(text, spans, title, fenced)


def fenced_starts(chunks: Sequence[Chunk]) -> dict[int, bool]:
    """Per chunk number, whether the chunk starts inside a Markdown fenced code block (its
    document's earlier chunks hold an odd number of fence lines): a passage cut from the middle
    of an example must not read its closing fence as an opening one."""
    out, open_ = {}, False
    for chunk in sorted(chunks, key=lambda c: c.line_start):
        out[chunk.chunk_no] = open_
        open_ ^= fence_lines(chunk.text) % 2 == 1
    return out


def quote_span(text: str, wanted: set[str], title: str = "", fenced: bool = False) -> tuple[int, int] | None:
    """`[start, end)` of the quote a passage gives for a requirement: its quotable sentence
    covering most of `wanted` (stems; the first on ties), with the following quotable sentences
    while it is shorter than QUOTE_MIN_CHARS. None when no sentence of the passage may be quoted
    (only headings, code or boilerplate). Only a sentence longer than SENTENCE_CAP (a table, a
    run-on) is cut, at a word. A definition (an option, an rst field, a table row) is short and
    complete: it is neither padded with the next statement nor padding for the one before
    (":Number of Instances: 150 …" was quoted with ":Number of Attributes: 4 …")."""
    spans, ok = _sentence_spans(text, title, fenced)
    if not ok:
        return None
    scores = [len(wanted & stems(text[a:b])) for a, b in ok]
    first = max(range(len(ok)), key=lambda i: (scores[i], -i))
    start, end = ok[first]
    allowed = set(ok)
    for a, b in spans[spans.index(next(s for s in spans if s[1] == end)) + 1 :]:
        if (
            end - start >= QUOTE_MIN_CHARS
            or b - start > QUOTE_MAX_CHARS
            or _PARAGRAPH.search(text, end, a)
            or (a, b) not in allowed
            or _definition_at(text, start)
            or _definition_at(text, a)
        ):
            break
        end = b
    if end - start > SENTENCE_CAP:
        cut = text.rfind(" ", start, start + SENTENCE_CAP)
        end = cut if cut > start else start + SENTENCE_CAP
    return start, end


def _definition_at(text: str, start: int) -> bool:
    """Whether the line of `text` from `start` is a definition (`nodes.evidence.quotable.definition_line`)."""
    end = text.find("\n", start)
    return definition_line(text[start : end if end >= 0 else len(text)])


def header_title(chunk: Chunk, title: str) -> str:
    """The title a chunk may quote as its header: only the chunk of line 1 (which the quotable
    view keeps only for a record that is only a title); a body line that repeats the title (a
    manual page's own rst heading) is a heading like any other."""
    return title if chunk.line_start == 1 else ""


def sentence_quote(chunk: Chunk, wanted: set[str], title: str = "") -> tuple[str, int, int]:
    """The quote a passage gives for a requirement (`quote_span`) as the passage's exact text and
    the lines it spans. A passage with no quotable sentence gives its best sentence all the same
    (callers that must refuse such a passage use `quote_span`)."""
    text = chunk.text
    span = quote_span(text, wanted, header_title(chunk, title))
    if span is None:
        spans = sentences(text) or [(0, len(text))]
        start, end = max(spans, key=lambda sp: (len(wanted & stems(text[sp[0] : sp[1]])), -sp[0]))
        if end - start > SENTENCE_CAP:
            cut = text.rfind(" ", start, start + SENTENCE_CAP)
            end = cut if cut > start else start + SENTENCE_CAP
    else:
        start, end = span
    line_start = chunk.line_start + text.count("\n", 0, start)
    return text[start:end], line_start, line_start + text.count("\n", start, end)


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Crude stem: a plural "s" dropped, then the first five letters, so that plural and verb forms
    of a word meet (retrieval/retrieve, passage/passages, encoder/encoding). Without the plural
    rule short words never met their plurals ("stop"/"stops", "tab"/"tabs", "rule"/"rules":
    less(1)'s "Sets tab stops." covered one word of "default tab stop"). A Porter stemmer would
    need the JVM or a new dependency for a signal that only locates evidence."""
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word[:5]


@lru_cache(maxsize=1 << 14)
def stems(text: str) -> frozenset[str]:
    """The content words (stems) of `text`. Cached: the heuristic librarian compares every
    sentence of every candidate with every requirement, so one job asks for the same sentence's
    stems a dozen times (uncached, this was most of a heuristic job's time)."""
    return frozenset(stem(w) for w in WORD.findall(text) if w.lower() not in STOPWORDS)
