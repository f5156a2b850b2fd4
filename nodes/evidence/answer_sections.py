"""The heading a passage stands under, and the section a question's identifier heads.

Reference pages define one parameter per entry: a heading line ("checkpoint_timeout (integer)",
"DeflateCompressionLevel Directive") and a paragraph that never repeats the name ("… The default
is five minutes (5min)."). The verified evidence of a page is the best sentence per requirement,
often another entry's; so for the answer step each passage gets the entry heading above it as its
`context`, and the entry the question's identifier heads is added as a passage of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from nodes.evidence.answer_subject import asked_identifiers, is_identifier, keys
from nodes.evidence.answer_values import VERSION_ASKED, states_version
from nodes.policy.seam import AnswerDoc, Passage

HEADING_WORDS = 8
LOOK_BACK = 40
SECTION_LINES = 14
# The paragraphs of a document holding most of the question's words, added as passages; shorter
# ones are headings or table cells.
BEST_PARAGRAPHS = 3
MIN_PARAGRAPH_CHARS = 40
_FIRST = re.compile(r"^\s*([A-Za-z_][\w.-]*)")


def heading_name(line: str) -> str:
    """The identifier a line heads an entry for ('' when it is no such heading): a short line
    whose first word is an identifier and that does not end a sentence."""
    m = _FIRST.match(line)
    text = line.strip()
    if not m or not text or len(text.split()) > HEADING_WORDS or text.endswith((".", ":", ",")):
        return ""
    return m.group(1).lower() if is_identifier(m.group(1)) else ""


def heading_above(lines: Sequence[str], line_no: int) -> str:
    """The entry heading nearest above 1-based `line_no` (within LOOK_BACK lines), or ''."""
    for n in range(min(line_no, len(lines)) - 1, max(0, line_no - 1 - LOOK_BACK) - 1, -1):
        if heading_name(lines[n]):
            return lines[n].strip()
    return ""


def sections(lines: Sequence[str], names: Sequence[str]) -> list[Passage]:
    """The entries headed by one of `names` (identifiers, lower case): the lines after the heading
    up to the next heading or SECTION_LINES lines, as one passage with the heading as context."""
    out = []
    for n, line in enumerate(lines):
        if heading_name(line) in names:
            end = n + 1
            while end < min(len(lines), n + 1 + SECTION_LINES) and not heading_name(lines[end]):
                end += 1
            text = " ".join(" ".join(lines[n + 1 : end]).split())
            if text:
                out.append(Passage(n + 2, end, text, context=line.strip()))
    return out


def paragraphs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """0-based [start, end) line ranges of the runs of non-empty lines (a stored document wraps a
    paragraph over several lines and separates paragraphs by a blank one)."""
    out, start = [], None
    for n, line in enumerate([*lines, ""]):
        if line.strip() and start is None:
            start = n
        elif not line.strip() and start is not None:
            out.append((start, n))
            start = None
    return out


def best_paragraphs(
    lines: Sequence[str], question: str, names: Sequence[str], limit: int = BEST_PARAGRAPHS
) -> list[Passage]:
    """The paragraphs that hold the most of the question's words — at least half of them — and,
    for each identifier the question names, the one holding it with the most of the other words (and
    for a question asking which version, the one naming a version with the most of them);
    each a passage with the entry heading above it as context. The verified evidence is the best
    sentence per *requirement*; the sentence that states the answer ("The TCP port the server listens
    on; 5432 by default.") is often another, and a comparison needs one for each side."""
    wanted = keys(question)
    need = max(2, (len(wanted) + 1) // 2)
    scored = []
    for a, b in paragraphs(lines):
        text = " ".join(" ".join(lines[a:b]).split())
        if len(text) >= MIN_PARAGRAPH_CHARS:
            scored.append((len(keys(text) & wanted), a, b, text))
    picked = [p for p in sorted(scored, key=lambda p: (-p[0], p[1])) if p[0] >= need][:limit]
    # "Which release first supported …": the one line that says so holds few of the other words.
    versions = [p for p in scored if p[0] >= 2 and states_version(p[3])] if VERSION_ASKED.search(question) else []
    if versions:
        picked.append(max(versions, key=lambda p: (p[0], -p[1])))
    for name in names:
        holding = [p for p in scored if name in keys(p[3])]
        if holding:
            picked.append(max(holding, key=lambda p: (p[0], -p[1])))
    out, seen = [], set()
    for _, a, b, text in picked:
        if a not in seen:
            seen.add(a)
            out.append(Passage(a + 1, b, text, context=heading_above(lines, a + 1)))
    return out


def with_sections(question: str, docs: Sequence[AnswerDoc], corpus: Any) -> list[AnswerDoc]:
    """The answer documents with each passage's entry heading as its context and, first, the
    entries the question's identifiers head, then the lines holding most of the question's words
    (`best_paragraphs`), all read through `corpus.lines`."""
    names = asked_identifiers(question, [d.docid for d in docs])
    out = []
    for doc in docs:
        lines = corpus.lines(doc.docid) or []
        own = [replace(p, context=p.context or heading_above(lines, p.line_start)) for p in doc.passages]
        extra = [*sections(lines, names), *best_paragraphs(lines, question, names)]
        seen = {p.text for p in own}
        out.append(replace(doc, passages=(*[p for p in extra if p.text not in seen], *own)))
    return out
