"""An HTML page's bibliographic metadata: dates and authors (with where each was read), venue,
keywords and DOI, from its `<meta>` tags and `<time datetime>`.

Its own module, apart from the text extraction (`stores.file_formats.html`), because it is a different rule
set: which tags a page's publisher fills in and which of them to trust first. Dates, most trusted
first: Highwire Press `citation_*` tags (what Google Scholar reads), Dublin Core (`DC.*`,
`dcterms.*`), `<meta name="date">`, Open Graph's `article:published_time`, schema.org's
`datePublished`, then the page's first `<time datetime>`. Authors: `citation_author`, Dublin
Core's creator, `<meta name="author">`. A tag is matched by `name`, `property` or `itemprop`,
case-insensitively.
"""

from __future__ import annotations

from typing import Any

from stores.file_formats.metadata_sources import Claim, bibliographic

__all__ = ["html_metadata"]

DATE_TAGS = (
    "citation_publication_date",
    "citation_date",
    "citation_online_date",
    "dc.date.issued",
    "dcterms.issued",
    "dc.date",
    "dcterms.date",
    "dcterms.created",
    "dc.date.created",
    "date",
    "article:published_time",
    "datepublished",
)
AUTHOR_TAGS = ("citation_author", "dc.creator", "dcterms.creator", "author")
_OTHER_TAGS = {
    "citation_journal_title": "venue",
    "citation_conference_title": "venue",
    "keywords": "keywords",
    "citation_keywords": "keywords",
    "citation_doi": "doi",
    "dc.identifier": "doi",
}


def _tags(soup: Any) -> dict[str, list[str]]:
    """Every `<meta>` value by its lower-cased name (or property, or itemprop), in page order."""
    found: dict[str, list[str]] = {}
    for tag in soup.find_all("meta"):
        key = next((str(tag.get(a)).strip().lower() for a in ("name", "property", "itemprop") if tag.get(a)), "")
        value = " ".join(str(tag.get("content") or "").split())
        if key and value:
            found.setdefault(key, []).append(value)
    return found


def html_metadata(soup: Any) -> dict[str, Any]:
    """The page's metadata (see the module docstring): year/date/authors with `sources`, and
    venue, keywords and DOI as the first tag that names each gives them."""
    tags = _tags(soup)
    claims = [Claim("date", tags[key][0], f"html:{key}") for key in DATE_TAGS if key in tags]
    time = soup.find("time", attrs={"datetime": True})
    if time is not None:
        claims.append(Claim("date", str(time.get("datetime") or ""), "html:time[datetime]"))
    claims += [Claim("authors", tags[key], f"html:{key}") for key in AUTHOR_TAGS if key in tags]
    meta: dict[str, Any] = {}
    for key, field in _OTHER_TAGS.items():
        if key in tags:
            meta.setdefault(field, tags[key][0])
    return meta | bibliographic(claims)
