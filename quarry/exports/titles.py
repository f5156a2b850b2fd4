"""Titles as a reference manager should receive them: markup gone, hyphenation repaired, and
the words whose case is part of their meaning (code names, acronyms) marked as protected.

Why: titles are taken from the documents, and documentation titles carry their source's markup
(Markdown "**`printf`** and [links](u)", reST ".. _tut-classes:" labels and roles, "{#anchor}"
attributes) and PDF text its line-break hyphens ("lan‐ guage"). A CSL processor also title-cases a
title for most styles, which turns the command `printf` into "Printf": so code names and acronyms
are marked, and each format protects them its own way (CSL `<span class="nocase">`, BibTeX
braces: quarry.exports.formats).

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
   printf(3), --help) or digits (x86, utf8), the names a man page's NAME line gives ("printf -
   format and print data", "gcloud sql users list - …"), a first word in lower case ("adduser
   in Debian"), the lower-case words of a title written in title case ("Reference Manual for
   libxslt"), and a short title all in lower case (a command: "pip check").
   A roff/TeX quotation ("`intelligent'") becomes typographic quotes, not code.
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
    (re.compile(r"<[^<>]*>"), ""),  # HTML tags
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),  # **strong**
    (re.compile(r"(?<!\w)__(?=\S)(?!\w+__(?!\w))(.+?)(?<=\S)__(?!\w)"), r"\1"),  # __strong__, not __init__
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<![\w])_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),  # _emphasis_ (not snake_case)
    (re.compile(r"(?<!\w)([^\W\d_][^\W_]*)__?(?!\w)"), r"\1"),  # reST reference: word_
)


# Applied before code is taken out: markup around a code span ("**`x`**", "[`x`](u)").
_AROUND_CODE = (*_MARKUP[:3], (re.compile(r"(\*\*?|__?)(`+[^`]+`+)\1"), r"\2"))


# A roff/TeX quotation ("Compute `intelligent' differences"): quotes, not a code span.
_TEX_QUOTES = re.compile(r"(?<![`\w])`([^`']+)'(?!\w)")


def _plain(text: str) -> str:
    """Markup other than code removed from `text`."""
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text


# --- 4. case protection ---------------------------------------------------------------------------

_INNER_CAPITAL = re.compile(r"^.+[A-Z]")  # SQLite, HTTP, iOS, HTTP/2
_CODE_CHARS = re.compile(r"[\w)](\.|::|->|/)[\w(]|_|\(\d?\w*\)|^--?[a-z]|[=$]|^[a-z]+\d|\d[a-z]")
# A man page's NAME line: the names (one or several words, all starting in lower case: "gcloud
# sql users list", "gzip, gunzip, zcat") before " - ".
_MAN_NAME = re.compile(r"^([a-z][\w.+:-]*(?:,?\s+[a-z][\w.+:-]*){0,63})(\(\d\w*\))?\s+[-–—]\s")
# Words a title case leaves in lower case: a title-cased title's other lower-case words are names.
# CSL's own list (what citeproc's title case keeps lower-case), with "vs", "per", "is", "are", "be".
_MINOR = frozenset(
    "a an and as at but by down for from in into nor of on onto or over so the till to up via with yet"
    " vs per is are be".split()
)
_TOKEN = re.compile(r"\S+")
_OPENERS = "\"'\u201c\u2018\u00ab(["  # quotes and brackets before a word
_CLOSERS = "\"'\u201d\u2019\u00bb,;:!?.)]"  # and after it


def _needs_protection(core: str) -> bool:
    """Whether a word (its edge punctuation removed) is a code name or an acronym."""
    if not re.search(r"[^\W\d_]", core):
        return False
    return bool(_INNER_CAPITAL.search(core) or _CODE_CHARS.search(core))


def _lower_names(words: list[str]) -> set[str]:
    """The lower-case words of a title its author wrote in title case ("Reference Manual for
    libxslt"): there a lower-case word that title case would capitalise is a name. A title in
    sentence case ("Reporting bugs and getting help") has none."""
    major = [w.strip(_OPENERS + _CLOSERS) for w in words]
    major = [w for w in major if w and w.lower() not in _MINOR and re.match(r"[^\W\d_]", w)]
    capitalised = [w for w in major if w[:1].isupper()]
    if len(capitalised) < 2 or len(capitalised) < 0.6 * len(major):
        return set()
    return {w for w in major if w[:1].islower()}


def _protect_words(text: str, whole: bool) -> list[tuple[str, bool]]:
    """`text` split into segments with each word that needs it protected; `whole`: the title is
    this one text (so the rules about a title's first word and its whole shape apply)."""
    names: set[int] = set()
    if whole and (m := _MAN_NAME.match(text)):
        names = set(range(m.start(1), m.end(2) if m.group(2) else m.end(1)))
    words = text.split()
    # A short title all in lower case is a command ("pip check", "grep"); a longer one is a phrase.
    command = whole and len(words) <= 2 and all(re.match(r"[a-z\d]", w) and w not in _MINOR for w in words)
    named = _lower_names(words) if whole else set()
    out: list[tuple[str, bool]] = []
    last = 0
    for match in _TOKEN.finditer(text):
        word = match.group()
        lead = len(word) - len(word.lstrip(_OPENERS))
        trail = len(word) - len(word.rstrip(_CLOSERS))
        if re.search(r"\w\(\d?\w*\)$", word.rstrip(",;:!?.")):  # "printf(3)": the parenthesis is the name's
            trail = len(word) - len(word.rstrip(",;:!?."))
            lead = 0
        core = word[lead : len(word) - trail]
        keep = (
            command
            or match.start() in names
            or (whole and match.start() == 0 and core[:1].islower())  # "adduser in Debian", "libxslt Reference"
            or core in named
            or _needs_protection(core)
        )
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
    text = _TEX_QUOTES.sub("\u2018\\1\u2019", text)
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
    """Adjacent segments of the same kind joined (protected words with only spaces between them
    too: "gcloud sql users list" is one span), empty ones dropped."""
    segments = [s for s in segments if s[0]]
    for n in range(1, len(segments) - 1):
        text, keep = segments[n]
        if not keep and not text.strip() and segments[n - 1][1] and segments[n + 1][1]:
            segments[n] = (text, True)
    out: list[tuple[str, bool]] = []
    for text, keep in segments:
        if out and out[-1][1] == keep:
            out[-1] = (out[-1][0] + text, keep)
        else:
            out.append((text, keep))
    return tuple(out)
