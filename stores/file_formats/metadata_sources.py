"""Publication dates and authors as a file states them, each with the place it was read from.

Why: a reference is only as good as its year and authors, and a user who doubts one needs to see
where it came from. Each format reader lists what its file says as `Claim`s, most trusted first
(a PDF's XMP `dc:date` before its Info `CreationDate`; an HTML page's `citation_*` tags before
Dublin Core, `date`, `article:published_time` and `<time datetime>`; a man page's `.TH` date; front
matter and field lists), and `bibliographic` keeps the first claim of each field that holds a
real value, writing its source beside it: the document's metadata carries
`sources = {"year": "pdf:xmp:dc:date", "authors": "html:citation_author"}` and `quarry read --json`
shows it.

A file's modification time is never a claim: it says when the copy was made, not when the work
was published (a Debian package's files all carry the build's date).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SOURCES_KEY", "Claim", "PublicationDate", "bibliographic", "parse_date"]

# The metadata key that maps a field ("year", "date", "authors") to where it was read.
SOURCES_KEY = "sources"
# Years outside this range are what broken tools write (PDFium's epoch, "D:00000101"), not dates.
MIN_YEAR = 1800

_ISO = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:$|[T ]|[+-]\d\d:?\d\d$|Z$)")
_PDF = re.compile(r"^D:(\d{4})(\d\d)?(\d\d)?")
_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|2\d\d\d)(?!\d)")


@dataclass(frozen=True)
class PublicationDate:
    """A date as precise as its source: the year always, month and day when stated."""

    year: int
    month: int | None = None
    day: int | None = None

    def iso(self) -> str:
        """`2017`, `2017-03` or `2017-03-14`."""
        parts = [f"{self.year:04d}"] + [f"{p:02d}" for p in (self.month, self.day) if p is not None]
        return "-".join(parts)


def _valid(year: int, month: int | None, day: int | None) -> PublicationDate | None:
    if not MIN_YEAR <= year <= dt.date.today().year + 1:
        return None
    if month is None or not 1 <= month <= 12:
        return PublicationDate(year)
    try:
        dt.date(year, month, day or 1)
    except ValueError:
        return PublicationDate(year, month)
    return PublicationDate(year, month, day)


def _free_text(text: str) -> PublicationDate | None:
    """A date written out ("September 2022", "04 April 2019", "2022 September 19"), by dateutil's
    parser; parsed against two defaults, so a part the text leaves out is told from one it states."""
    from dateutil import parser

    if not _YEAR.search(text):
        return None  # dateutil would supply this year
    try:
        one = parser.parse(text, default=dt.datetime(1, 1, 1))
        two = parser.parse(text, default=dt.datetime(2, 2, 2))
    except (ValueError, OverflowError):
        return None
    if one.year != two.year:
        return None
    month = one.month if one.month == two.month else None
    return _valid(one.year, month, one.day if month is not None and one.day == two.day else None)


def parse_date(raw: Any) -> PublicationDate | None:
    """The date in `raw`: a date or datetime, a year, ISO 8601 (`2017-03-14T09:00:00Z`), a PDF date
    (`D:20170314120000+01'00'`) or written out (`September 2022`); None when it holds none."""
    if isinstance(raw, (dt.date, dt.datetime)):
        return _valid(raw.year, raw.month, raw.day)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return _valid(raw, None, None)
    if not isinstance(raw, str):
        return None
    text = " ".join(raw.split())
    for pattern in (_PDF, _ISO):
        if m := pattern.match(text):
            year, month, day = (int(p) if p else None for p in m.groups())
            assert year is not None
            if month is None and len(text) > 4 and (written := _free_text(text)):
                return written  # "2022 September 19"
            return _valid(year, month, day if month is not None else None)
    return _free_text(text) if len(text) <= 100 else None


@dataclass(frozen=True)
class Claim:
    """One thing a file says: `field` "date" (a raw date) or "authors" (a name or a list of
    names), read at `source` ("pdf:xmp:dc:date", "html:citation_author", "man:.TH")."""

    field: Literal["date", "authors"]
    value: Any
    source: str


def _names(value: Any) -> list[str]:
    """Author names as a list: a string is split at ";" (the rule for every stored author field)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            for name in item.split(";"):
                name = " ".join(name.split())
                if name and name not in out:
                    out.append(name)
    return out


def bibliographic(claims: Iterable[Claim]) -> dict[str, Any]:
    """Metadata from `claims` in order of trust: the first date that parses gives `year` (and
    `date` when it states a month), the first non-empty names give `authors`; `sources` maps each
    field given to its claim's source. Empty when no claim holds a value."""
    meta: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for claim in claims:
        if claim.field == "date" and "year" not in meta:
            date = parse_date(claim.value)
            if date is not None:
                meta["year"] = date.year
                sources["year"] = claim.source
                if date.month is not None:
                    meta["date"] = date.iso()
                    sources["date"] = claim.source
        elif claim.field == "authors" and "authors" not in meta:
            names = _names(claim.value)
            if names:
                meta["authors"] = names
                sources["authors"] = claim.source
    if sources:
        meta[SOURCES_KEY] = sources
    return meta
