"""Whether a document's *subject* is an excluded thing ("not Tcl", "other than CRC", a steer).

Why: an exclusion that removed a document only when its title held every word of the phrase
left the Tcl manual in the list for "not Tcl" (its pages are titled "after - Execute a command
after a time delay") and `python/threading` for "not Python threading" (the title names
threading, only the path names Python). A reader judges a document's subject from several places
at once, so every word of the phrase must be established at the *subject level* by one of:

- its **path** (the document id's components: a folder like `tcl/` or `postgresql/` names the
  product, a file name like `threading` or `after.3tcl` the topic or its manual section),
- its **title** (or keywords),
- its **headings** (the word in several of the document's section headings, not in one),
- its **dominant terms** (the word among the document's most frequent content words).

The words may be split across them ("Python" from the path, "threading" from the title). A
document that mentions the phrase in passing — in a sentence or two, in one heading of many — is
kept: wrongly removing a relevant document is worse than keeping a doubtful one.

Pure functions over a `DocRecord`; the nodes decide where to apply them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nodes.tools.excerpts import STOPWORDS, query_terms
from stores.records import DocRecord

# The signals that establish a word of the phrase as (part of) a document's subject, in the order
# a reason names them.
PATH, TITLE, HEADINGS, DOMINANT = "path", "title", "headings", "dominant terms"
SIGNALS = (PATH, TITLE, HEADINGS, DOMINANT)

# Dominant terms: a word is dominant when it is among the document's DOMINANT_TOP most frequent
# content words (stems), occurs at least DOMINANT_MIN_COUNT times and at least DOMINANT_OF_TOP
# times as often as the most frequent one. On the Debian documentation set (dev use only) this
# keeps python/signal ("thread" 4th but 35 times against "signal"'s 253) and Apache's
# performance-tuning page for "not threads", and removes the worker MPM (25 against 32).
DOMINANT_TOP = 5
DOMINANT_MIN_COUNT = 3
DOMINANT_OF_TOP = 1 / 3
# Headings: a word establishes the subject when it is in at least HEADING_MIN headings and in at
# least HEADING_SHARE of them (a "Thread Objects" section among twenty is a passing mention).
HEADING_MIN = 2
HEADING_SHARE = 0.25
# A heading: a line standing alone between blank lines, of at most this many words, without a
# sentence ending.
HEADING_MAX_WORDS = 8

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A path component split into words: "after.3tcl" → after, 3, tcl; "runtime-config-wal" → runtime,
# config, wal; "mod_rewrite" → mod, rewrite.
_PATH_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
# A name with an underscore inside ("pg_dump", "mod_rewrite").
_NAME = re.compile(r"\b[^\W_]+(?:_[^\W_]+)+\b", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?;:,][\"')\]]*\s*$")


@dataclass(frozen=True, slots=True)
class SubjectMatch:
    """An exclusion phrase that names a document's subject, and the signals that showed it."""

    phrase: str
    signals: tuple[str, ...]

    @property
    def reason(self) -> str:
        """As a person reads it: "path and title name 'Python threading'"."""
        names = list(self.signals)
        said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{said} name{'s' if len(names) == 1 else ''} {self.phrase!r}"

    @property
    def kind(self) -> str:
        """The short form results group removals by: "subject named in path/title"."""
        return "subject named in " + "/".join(self.signals)


@lru_cache(maxsize=1 << 16)
def word_stem(word: str) -> str:
    """A word as exclusions compare it: lower case, without a plural "s", an "-ing"/"-ed" ending
    and a final "e", so that "locking" meets "lock", "caching" meets "cache" and "threads" meets
    "threading". Unlike the evidence stem (`nodes.evidence.sentences.stem`) it is not cut to five
    letters: an exclusion removes documents, and "not socketserver" must not remove every page
    whose subject is "socket" (both "socke" there)."""
    w = word.lower()
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for end in ("ing", "ed"):
        if w.endswith(end) and len(w) - len(end) >= 4:
            w = w[: -len(end)]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


# Words that say what kind of document is meant, not what it is about: "the Tcl manual pages", "the
# Apache modules", "Python's sqlite3 module" exclude Tcl, Apache, Python's sqlite3 — a path never
# says "manual" and a title rarely does. Dropped from a phrase that has other words.
DOCUMENT_KIND_WORDS = frozenset(
    "manual manuals page pages man documentation docs doc module modules package packages "
    "utility utilities interface interfaces library libraries extension extensions reference "
    "references tool tools command commands program programs".split()
)


def phrase_stems(phrase: str) -> tuple[str, ...]:
    """The phrase's content words as stems, in order (stopwords dropped, as queries drop them;
    words naming a kind of document dropped when others remain; a name with an underscore one
    word, `joined`)."""
    words = [w for w in query_terms(phrase) if w.lower().strip("'’s") not in ("such",)]
    topical = [w for w in words if w.lower() not in DOCUMENT_KIND_WORDS] or words
    return tuple(dict.fromkeys(joined(w) if "_" in w else word_stem(w) for w in topical))


def joined(name: str) -> str:
    """A name with underscores as one word without them: "pg_dump" → "pgdump", which its title
    ("pg_dump") and its path ("app-pgdump") both give, and "pg_dumpall" or "pg-dumpall" do not."""
    return name.lower().replace("_", "")


def _stems_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(word_stem(w) for w in words if w.lower() not in STOPWORDS)


def path_stems(docid: str) -> frozenset[str]:
    """The words of a document id's path components, as stems."""
    return _stems_of(_PATH_WORD.findall(docid.lower()))


# "zlib — Compression compatible with gzip", "tkinter - Python interface to Tcl/Tk": a title that
# names its subject before a dash describes it after; what the description mentions is not the subject.
_TITLE_DASH = re.compile(r"\s[—–-]\s")


def title_stems(rec: DocRecord) -> frozenset[str]:
    """The words of the title (its head, when a dash separates a name from its description) and
    keywords, as stems."""
    head = " ".join([_TITLE_DASH.split(rec.title, maxsplit=1)[0], *rec.keywords]).lower()
    return _stems_of(_WORD.findall(head)) | {joined(n) for n in _NAME.findall(head)}


def headings(text: str) -> list[str]:
    """The document's section headings as they survive in plain text: a short line standing
    alone between blank lines (or the text's edges) without a sentence ending ("DESCRIPTION",
    "20.5.1. Settings", "Thread Objects")."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or (i and lines[i - 1].strip()) or (i + 1 < len(lines) and lines[i + 1].strip()):
            continue
        words = _PATH_WORD.findall(s)
        if 0 < len(words) <= HEADING_MAX_WORDS and len(s) <= 80 and not _SENTENCE_END.search(s):
            out.append(s)
    return out


# (docid, hash of its text) → (dominant stems, heading stems); bounded, cleared when full. Keyed by
# a hash, not the text: a cache holding 4096 manuals' texts would hold hundreds of megabytes.
_PROFILES: dict[tuple[str, int], tuple[frozenset[str], frozenset[str]]] = {}
PROFILE_CACHE = 4096


def text_profile(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(dominant stems, heading stems) of a body text: the words it is mostly about, and the
    words in at least `HEADING_MIN` and `HEADING_SHARE` of its headings."""
    counts = Counter(
        word_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and not w.isdigit() and w not in STOPWORDS
    )
    common = counts.most_common(DOMINANT_TOP)
    floor = max(DOMINANT_MIN_COUNT, DOMINANT_OF_TOP * common[0][1]) if common else 0
    top = [s for s, n in common if n >= floor]
    heads = [_stems_of(_WORD.findall(h.lower())) for h in headings(text)]
    per_stem = Counter(s for h in heads for s in h)
    wanted = max(HEADING_MIN, HEADING_SHARE * len(heads))
    return frozenset(top), frozenset(s for s, n in per_stem.items() if n >= wanted)


def _cached_profile(rec: DocRecord) -> tuple[frozenset[str], frozenset[str]]:
    """`text_profile` of a record, cached: the same record is judged at verification, in the
    final list and in the deep run."""
    key = (rec.docid, hash(rec.text))
    got = _PROFILES.get(key)
    if got is None:
        if len(_PROFILES) >= PROFILE_CACHE:
            _PROFILES.clear()
        got = _PROFILES[key] = text_profile(rec.text)
    return got


def subject_signals(rec: DocRecord, words: Sequence[str]) -> dict[str, frozenset[str]]:
    """For each signal, which of `words` (stems) it establishes in `rec`."""
    wanted = frozenset(words)
    found = {PATH: path_stems(rec.docid) & wanted, TITLE: title_stems(rec) & wanted}
    if wanted - found[PATH] - found[TITLE]:
        lowered = rec.text.lower()
        if all(w in lowered for w in wanted - found[PATH] - found[TITLE]):  # cheap: absent words end it
            dominant, heading = _cached_profile(rec)
            found[HEADINGS] = heading & wanted
            found[DOMINANT] = dominant & wanted
    return found


def subject_match(phrase: str, rec: DocRecord) -> SubjectMatch | None:
    """The match when every content word of `phrase` is established at the subject level of
    `rec` (split across path, title, headings and dominant terms as need be), else None. A phrase
    without content words matches nothing. The signals named are the fewest, in `SIGNALS` order,
    that together cover the phrase."""
    words = phrase_stems(phrase)
    if not words:
        return None
    found = subject_signals(rec, words)
    if set().union(*found.values()) != set(words):
        return None
    used: list[str] = []
    left = set(words)
    for name in SIGNALS:  # the earlier (more evident) signals first
        if found.get(name, frozenset()) & left:
            used.append(name)
            left -= found[name]
    return SubjectMatch(phrase, tuple(used))


def excluded_by(phrases: Iterable[str], rec: DocRecord) -> SubjectMatch | None:
    """The first exclusion of `phrases` whose subject `rec` is, or None."""
    for phrase in phrases:
        match = subject_match(phrase, rec)
        if match is not None:
            return match
    return None
