"""The classification rules of quarry.exports.bibliography: what kind of publication a venue names,
the arXiv id a document carries, and which "titles" are markup rather than titles (the markup
inside a real title is removed, and its code names marked, by quarry.exports.titles).

Kept apart and table-tested (tests/test_bibliography.py) because they are the rules a user
will want to read and extend: a venue list is never complete.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any, Literal

from quarry.exports.titles import _RST_LABEL, Title, clean_title

Kind = Literal["conference", "journal", "report", "book", "arxiv", "local", "misc"]

# --- venue -> type ------------------------------------------------------------------------------

# Venue words that mean a journal even when a conference name is in them ("Transactions of the
# ACL", "SIGIR Forum", "Proceedings of the IEEE" are journals). Checked first.
_JOURNAL = re.compile(
    r"\b(journal|transactions|letters|magazine|review|forum|computing surveys|communications of the acm"
    r"|tacl|pvldb|pnas|proceedings of the (ieee|national academy|vldb endowment|royal society))\b",
    re.I,
)
# Conference venues: "Proceedings of …", "… Conference / Workshop / Symposium", "Findings of …"
# and the usual acronyms (with an optional year: "SIGIR 2021", "NeurIPS'20").
_CONFERENCE = re.compile(
    r"\b(proceedings|proc\.|conference|conf\.|workshop|symposium|findings of|meeting of the"
    r"|naacl|acl|aacl|eacl|emnlp|coling|conll|lrec|ijcnlp|sigir|ictir|ecir|cikm|wsdm|www|kdd|sigkdd"
    r"|recsys|jcdl|trec|clef|ntcir|neurips|nips|icml|iclr|aistats|uai|colt|aaai|ijcai|cvpr|iccv"
    r"|eccv|interspeech|icassp|chi|chiir|cscw|uist|sigmod|vldb|icde|icdm|sdm|ecml|pkdd|iswc|eswc|stoc|focs|soda"
    r"|hlt|osdi|sosp|nsdi|usenix|mlsys|icse|pldi|popl)(\s*'?\d{2,4})?\b",
    re.I,
)
_REPORT = re.compile(r"\b(technical report|tech\.? rep(ort)?\.?|working paper)\b", re.I)
_ARXIV_VENUE = re.compile(r"\b(arxiv|corr)\b", re.I)
_PUBLISHER = re.compile(r"\b(press|publishers?|publishing)\b", re.I)  # "MIT Press": a book's publisher


def venue_kind(venue: str | None) -> Kind:
    """The kind of publication a venue name means: "arxiv", "report", "book" (a publisher),
    "journal", "conference", or "misc" without a venue. An unrecognised venue name is a
    journal (most are)."""
    if not venue or not venue.strip():
        return "misc"
    if _ARXIV_VENUE.search(venue):
        return "arxiv"
    if _REPORT.search(venue):
        return "report"
    if _PUBLISHER.search(venue):
        return "book"
    if _JOURNAL.search(venue):
        return "journal"
    if _CONFERENCE.search(venue):
        return "conference"
    return "journal"


def is_arxiv_venue(venue: str | None) -> bool:
    """Whether a venue name is arXiv's ("arXiv", "CoRR", "arXiv preprint arXiv:1901.04085")."""
    return bool(venue and _ARXIV_VENUE.search(venue))


def institution(venue: str) -> str:
    """A report's institution: the venue without "Technical Report" ("Stanford InfoLab")."""
    return _REPORT.sub("", venue).strip(" ,;") or venue


# --- arXiv ids ----------------------------------------------------------------------------------

_ARXIV_ID = r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z][a-z.\-]+/\d{7}(?:v\d+)?)"
_ARXIV_IN = (
    re.compile(r"arxiv\.org/(?:abs|pdf)/" + _ARXIV_ID, re.I),
    re.compile(r"10\.48550/arxiv\." + _ARXIV_ID, re.I),
    re.compile(r"arxiv:\s*" + _ARXIV_ID, re.I),
    re.compile(r"^" + _ARXIV_ID + r"$", re.I),
)


def arxiv_id(*texts: Any) -> str | None:
    """The arXiv identifier (1901.04085, hep-th/9901001) in a URL, DOI, "arXiv:…" or bare id."""
    for text in texts:
        if not isinstance(text, str):
            continue
        for pattern in _ARXIV_IN:
            if found := pattern.search(text.strip()):
                return found.group(1)
    return None


# --- junk titles ------------------------------------------------------------------------------

_JUNK_TITLE = re.compile(
    r"^\s*(<!--|<\?|<!doctype|\.\.\s|---\s*$|\+\+\+\s*$|#!|\{[{%])"  # comments, rst directives, front matter, templates
    r"|^\s*(\S+)\(\d\w*\)\s.*\s\2\(\d\w*\)\s*$",  # a man page header: "GREP(1) User Commands GREP(1)"
    re.I,
)


def is_junk_title(title: str) -> bool:
    """True for a "title" that is markup, not a title: an HTML/XML comment or declaration, an
    rst directive or comment (".. cmake-manual-description: …"), a front matter fence, a man
    page header, or text without a letter once tags are removed. Better titles are extracted at
    ingest (stores.file_formats.dispatch); this only keeps what slipped through out of a bibliography."""
    if _JUNK_TITLE.search(title):
        return True
    return not re.search(r"[^\W\d_]", re.sub(r"<[^>]*>", "", title))


def display_title(title: str, docid: str) -> str:
    """The title to cite: the record's cleaned (`clean_title`), or the docid's last segment when
    that is junk or empty."""
    return cited_title(title, docid).text


def cited_title(title: str, docid: str) -> Title:
    """The title to cite with its case-protected parts: the record's cleaned (`clean_title`), or
    the docid's last segment (protected: a file name) when that is junk or empty."""
    title = _RST_LABEL.sub("", " ".join(title.split()))
    if title and not is_junk_title(title):
        cleaned = clean_title(title)
        if cleaned.text and re.search(r"[^\W\d_]", cleaned.text):
            return cleaned
    name = PurePosixPath(docid).name or docid
    return Title(((name, True),))
