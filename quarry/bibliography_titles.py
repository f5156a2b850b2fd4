"""Titles as a reference manager should receive them: markup gone, hyphenation repaired, and
the words whose case is part of their meaning (code names, acronyms) marked as protected.

Why: titles are taken from the documents, and documentation titles carry their source's markup
(Markdown "**`printf`** and [links](u)", reST ".. _tut-classes:" labels and roles, "{#anchor}"
attributes) and PDF text its line-break hyphens ("lan‐ guage"). A CSL processor also title-cases a
title for most styles, which turns the command `printf` into "Printf": so code names and acronyms
are marked, and each format protects them its own way (CSL `<span class="nocase">`, BibTeX
braces: quarry.bibliography_formats).

The rules, in order:
1. Hyphenation: a soft hyphen is dropped; a letter, a hyphen (ASCII, U+2010 or U+2011) and a space (the flattened
   line break) before a lower-case word are joined ("lan- guage" → "language") unless that word
   is a conjunction (a suspended hyphen: "pre- and post-processing"). A hyphen between two
   letters ("read-only") is never touched.
2. Labels and anchors: a leading reST label (".. _tut-classes:"), Markdown heading marks ("## x",
   trailing "#"s), attribute blocks ("{#anchor .class}") and a trailing adornment ("=====").
3. Inline markup: code (`x`, ``x``, reST roles :func:`x`, <code>x</code>) becomes its text,
   protected; links ([t](u), [t][r], `t <u>`_, t_), images (their alt text), emphasis (**x**,
   __x__, *x*, _x_ at word edges) and HTML tags become their text.
4. Case protection of the rest, word by word: a word with a capital after its first letter
   (SQLite, HTTP/2, iOS), a lower-case word with code characters (os.path, std::vec, read_file,
   printf(3), --help) or digits (x86, utf8), the command a man page names ("printf - format and
   print data"), and a title that is a single lower-case word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Title:
    """A cleaned title as (text, case-protected) segments, in order."""

    segments: tuple[tuple[str, bool], ...]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)

    @property
    def protected(self) -> tuple[str, ...]:
        """The protected words, as they appear."""
        return tuple(text for text, keep in self.segments if keep)


# --- 1. hyphenation -------------------------------------------------------------------------------

_SUSPENDED = "and or nor to but und oder et ou y e".split()
_BROKEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011]\s+(?!(?:" + "|".join(_SUSPENDED) + r")\b)(?=[a-zà-ÿ])")


def repair_hyphenation(text: str) -> str:
    """`text` with words broken across lines joined again ("lan‐ guage" → "language")."""
    return _BROKEN.sub("", text.replace("\u00ad", ""))


# --- 2. labels and anchors ------------------------------------------------------------------------

_RST_LABEL = re.compile(r"^(\.\.\s+_[^:\s][^:]*:\s*)+")
_ATTRIBUTES = re.compile(r"\s*\{\s*[#.][^{}]*\}")  # "{#anchor}", "{#id .class key=v}"
_HEADING_MARKS = re.compile(r"^#{1,6}\s+|\s+#+\s*$")
_ADORNMENT = re.compile(r"\s+([=\-~^*+#`'\"])\1{2,}\s*$|^([=\-~^*+#`'\"])\2{2,}\s+")


def strip_labels(text: str) -> str:
    """`text` without reST labels, Markdown heading marks, attribute blocks and adornments."""
    text = _RST_LABEL.sub("", text)
    text = _ATTRIBUTES.sub("", text)
    text = _ADORNMENT.sub("", text)
    return _HEADING_MARKS.sub("", text).strip()


# --- 3. inline markup -----------------------------------------------------------------------------

_CODE = re.compile(
    r"(?::[\w:+.-]+:)?``(?P<a>.+?)``"  # ``literal``, :role:``x``
    r"|(?::[\w:+.-]+:)`(?P<b>[^`]+)`"  # :func:`printf`
    r"|(?<![\w`])`(?P<c>[^`]+)`(?!_)"  # `code` (not a reST link `t`_)
    r"|<code>(?P<d>.*?)</code>",
    re.I,
)
_MARKUP = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # image: its alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # [text](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),  # [text][ref]
    (re.compile(r"`([^`<]+?)\s*<[^>]*>`__?"), r"\1"),  # `text <url>`_
    (re.compile(r"`([^`]+)`__?"), r"\1"),  # `text`_
    (re.compile(r"(?<!\w)([^\W\d_][^\W_]*)__?(?!\w)"), r"\1"),  # reST reference: word_
    (re.compile(r"<[^<>]*>"), ""),  # HTML tags
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # **strong**, __strong__
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<![\w])_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),  # _emphasis_ (not snake_case)
)


# Applied before code is taken out: markup around a code span ("**`x`**", "[`x`](u)").
_AROUND_CODE = (*_MARKUP[:3], (re.compile(r"(\*\*?|__?)(`+[^`]+`+)\1"), r"\2"))


def _plain(text: str) -> str:
    """Markup other than code removed from `text`."""
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text


# --- 4. case protection ---------------------------------------------------------------------------

_INNER_CAPITAL = re.compile(r"^.+[A-Z]")  # SQLite, HTTP, iOS, HTTP/2
_CODE_CHARS = re.compile(r"[\w)](\.|::|->|/)[\w(]|_|\(\d?\w*\)|^--?[a-z]|[=$]|^[a-z]+\d|\d[a-z]")
_MAN_NAME = re.compile(r"^([a-z][\w.+-]*(?:,\s*[a-z][\w.+-]*)*)(\(\d\w*\))?\s+[-–—]\s")
_TOKEN = re.compile(r"\S+")
_OPENERS = "\"'\u201c\u2018\u00ab(["  # quotes and brackets before a word
_CLOSERS = "\"'\u201d\u2019\u00bb,;:!?.)]"  # and after it


def _needs_protection(core: str) -> bool:
    """Whether a word (its edge punctuation removed) is a code name or an acronym."""
    if not re.search(r"[^\W\d_]", core):
        return False
    return bool(_INNER_CAPITAL.search(core) or _CODE_CHARS.search(core))


def _protect_words(text: str, whole: bool) -> list[tuple[str, bool]]:
    """`text` split into segments with each word that needs it protected; `whole`: the title is
    this one text (so its man-page name and a single lower-case word count)."""
    names: set[int] = set()
    if whole and (m := _MAN_NAME.match(text)):
        names = set(range(m.start(1), m.end(2) if m.group(2) else m.end(1)))
    single = whole and re.fullmatch(r"[a-z][\w.+-]*", text.strip()) is not None
    out: list[tuple[str, bool]] = []
    last = 0
    for match in _TOKEN.finditer(text):
        word = match.group()
        lead = len(word) - len(word.lstrip(_OPENERS))
        trail = len(word) - len(word.rstrip(_CLOSERS))
        if re.search(r"\(\d?\w*\)$", word.rstrip(",;:!?.")):  # "printf(3)": the parenthesis is the name's
            trail = len(word) - len(word.rstrip(",;:!?."))
            lead = 0
        core = word[lead : len(word) - trail]
        keep = single or match.start() in names or _needs_protection(core)
        if not keep or not core:
            continue
        start = match.start() + lead
        out.append((text[last:start], False))
        out.append((core, True))
        last = start + len(core)
    out.append((text[last:], False))
    return out


def clean_title(raw: str) -> Title:
    """`raw` cleaned by the module's rules, as protected and plain segments."""
    text = strip_labels(repair_hyphenation(" ".join(raw.split())))
    for pattern, repl in _AROUND_CODE:
        text = pattern.sub(repl, text)
    pieces: list[tuple[str, bool]] = []
    last = 0
    for match in _CODE.finditer(text):
        pieces.append((_plain(text[last : match.start()]), False))
        code = next(g for g in match.groups() if g is not None)
        pieces.append((" ".join(code.split()), True))
        last = match.end()
    pieces.append((_plain(text[last:]), False))
    # Whitespace left by removed markup, collapsed across the pieces.
    joined: list[tuple[str, bool]] = []
    for text_part, keep in pieces:
        text_part = re.sub(r"\s+", " ", text_part)
        if text_part:
            joined.append((text_part, keep))
    if joined:
        joined[0] = (joined[0][0].lstrip(), joined[0][1])
        joined[-1] = (joined[-1][0].rstrip(), joined[-1][1])
    whole = "".join(t for t, _ in joined)
    segments: list[tuple[str, bool]] = []
    if len(joined) == 1 and not joined[0][1]:
        segments = _protect_words(whole, whole=True)
    else:
        for text_part, keep in joined:
            segments += [(text_part, True)] if keep else _protect_words(text_part, whole=False)
    return Title(_merge(segments))


def _merge(segments: list[tuple[str, bool]]) -> tuple[tuple[str, bool], ...]:
    """Adjacent segments of the same kind joined, empty ones dropped."""
    out: list[tuple[str, bool]] = []
    for text, keep in segments:
        if not text:
            continue
        if out and out[-1][1] == keep:
            out[-1] = (out[-1][0] + text, keep)
        else:
            out.append((text, keep))
    return tuple(out)
