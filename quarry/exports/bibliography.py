"""The bibliography entry model behind `quarry job export`: one reference per ranked document,
with its type, citation key, title, date and location decided once, here, for every format.

Why one model: BibTeX, RIS, CSL-JSON, CSV and Markdown used to decide these things each on
their own, so one document was `rust-book_ch17-01` in BibTeX (cut at 60 characters) and
`rust-book/ch17-01` in CSL-JSON, a conference paper was a journal article, and a man page's
header line was cited as a title. The writers (quarry.exports.formats for BibTeX, RIS and
CSL-JSON; quarry.exports.job_export for CSV and Markdown) only spell a `Reference` in their format.

- Type: `venue_kind` (quarry.exports.rules) maps a venue to conference / journal / report /
  book / arXiv; an arXiv id anywhere in the metadata makes a preprint.
- Key: `firstauthorYYYYfirstword` (ASCII), a/b/c suffixes for clashes, given by sorted docid so
  the key depends on the job's documents, not on their rank or on the format.
- Title: a title that is markup or a directive, not a title, becomes the docid's last segment;
  markup inside a title is removed and code names marked (quarry.exports.titles).
- Authors: people parsed into their parts, organisations kept whole (quarry.exports.names).
- Location: a document read from a local file or folder gets a `file://` URL (absolute and
  percent-encoded) from where the collection says it was ingested (`corpus.meta()`); the
  exporter never opens the file itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from quarry.exports.names import Name, parse_names
from quarry.exports.rules import Kind, arxiv_id, cited_title, institution, is_arxiv_venue, venue_kind
from quarry.exports.titles import Title
from stores.file_formats.corpus_reader import SOURCE_PATH
from stores.records import DocRecord

# --- keys -------------------------------------------------------------------------------------

_STOPWORDS = frozenset("a an the of on in for and to with from by at as is are via using towards toward".split())


def _ascii_slug(text: str) -> str:
    """Lower-case ASCII letters and digits of `text` ("Oğuz" -> "oguz", "Sparck Jones" -> "sparckjones")."""
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower())


def base_key(family: str | None, year: int | None, title: str, docid: str) -> str:
    """`firstauthorYYYYfirstword` ("lin2021pyserini"); without an author `firstwordsecondwordYYYY`;
    from the docid when the title has no word. ASCII letters and digits only, never empty."""
    words = [w for w in (_ascii_slug(w) for w in re.split(r"[\s\-–—:/]+", title)) if w and w not in _STOPWORDS]
    name = _ascii_slug(family or "")[:20]
    # Without an author: the title's first two words, then the year ("mynotes2023").
    key = f"{name}{year or ''}{''.join(words[:1])[:24]}" if name else f"{''.join(words[:2])[:32]}{year or ''}"
    if not re.search(r"[a-z]", key):
        key = (_ascii_slug(PurePosixPath(docid).name)[:32] or "doc") + (str(year) if year else "")
    return key


def _suffix(n: int) -> str:
    """a, b, …, z, aa, ab, … for the n-th (0-based) document sharing a base key."""
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(97 + r) + out
    return out


def assign_keys(bases: Mapping[str, str]) -> dict[str, str]:
    """Unique keys for docid -> base key: a base shared by several documents gets a, b, c … in
    docid order (so a key depends only on which documents share it, never on rank or format)."""
    groups: dict[str, list[str]] = {}
    for docid, base in bases.items():
        groups.setdefault(base, []).append(docid)
    keys: dict[str, str] = {}
    taken = {base for base, ids in groups.items() if len(ids) == 1}
    for base, ids in sorted(groups.items()):
        if len(ids) == 1:
            keys[ids[0]] = base
            continue
        n = 0
        for docid in sorted(ids):
            while (key := base + _suffix(n)) in taken:
                n += 1
            taken.add(key)
            keys[docid] = key
            n += 1
    return keys


# --- names, dates, locations ------------------------------------------------------------------


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")


def date_parts(year: int | None, extras: Mapping[str, Any]) -> list[int] | None:
    """[Y], [Y, M] or [Y, M, D] from the record's year or a `date` in its metadata (front matter).
    A file's modification time is never used: it says when the copy was saved, not published."""
    raw = extras.get("date")
    if isinstance(raw, str) and (m := _ISO_DATE.match(raw.strip())):
        parts = [int(p) for p in m.groups() if p]
        if year is None or parts[0] == year:
            if len(parts) < 2 or 1 <= parts[1] <= 12:
                return parts if len(parts) < 3 or 1 <= parts[2] <= 31 else parts[:2]
            return parts[:1]
    return [year] if year else None


@dataclass(frozen=True)
class Origin:
    """Where a collection was ingested from, as its corpus meta records it: `kind` "folder" or
    "file" (document files), "beir" or "jsonl" (records); `source` an absolute path."""

    kind: str
    source: str


def collection_origin(name: Any) -> Origin | None:
    """The origin of collection `name` read through the stores API, or None when it is gone."""
    if not isinstance(name, str) or not name:
        return None
    from stores.collection import Collection
    from stores.errors import QuarryError

    try:
        meta = Collection(name).corpus.meta()
    except QuarryError:
        return None
    return Origin(meta.get("kind", ""), meta.get("source", "")) if meta.get("source") else None


def file_url(path: str) -> str:
    """`file://` URL of an absolute path, percent-encoded (spaces, braces, `%`, `#` …), so it is
    one token in every format and a `}` in a file name cannot end a BibTeX field."""
    try:
        return "file://" + quote(path, safe="/", errors="surrogateescape")  # a name os.fsdecode kept as bytes
    except UnicodeEncodeError:
        return "file://" + quote(path, safe="/", errors="surrogatepass")


def local_location(docid: str, extras: Mapping[str, Any], origin: Origin | None) -> tuple[str, bool] | None:
    """(file URL, exact) for a document read from local files, None otherwise. Exact: the file
    itself (the `SOURCE_PATH` every document file's record carries since ingest recorded it, or a
    single-file collection); for a document stored before that, the folder the collection was
    ingested from (the file's suffix is not stored: the docid is its path without suffix), which
    `howpublished` completes with the docid."""
    if origin is None or origin.kind not in ("folder", "file") or not origin.source.startswith("/"):
        return None
    recorded = extras.get(SOURCE_PATH)
    if isinstance(recorded, str) and recorded:
        base = origin.source if origin.kind == "folder" else str(PurePosixPath(origin.source).parent)
        path = recorded if recorded.startswith("/") else f"{base.rstrip('/')}/{recorded}"
        return file_url(path), True
    if origin.kind == "file":  # the one file ingested, unless this document was added later
        source = PurePosixPath(origin.source)
        return (file_url(origin.source), True) if docid == re.sub(r"\s+", "_", source.stem) else None
    return file_url(origin.source.rstrip("/") + "/"), False


def web_url(value: Any) -> str | None:
    """An http(s) URL from metadata, with characters that are not URL characters (spaces,
    braces, backslashes, quotes) percent-encoded; anything else (javascript:, junk) is dropped."""
    if not isinstance(value, str) or not re.match(r"^https?://\S", value.strip(), re.I):
        return None
    return quote(value.strip(), safe=":/?#[]@!$&'()*+,;=%~")


_DOI = re.compile(r"^10\.\d{4,9}/[^\s{}\\\"<>]+$")


def doi(value: Any) -> str | None:
    """A DOI ("10.1145/…", also from a doi.org URL), or None when it is not one."""
    if not isinstance(value, str):
        return None
    value = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:\s*)", "", value.strip(), flags=re.I)
    return value if _DOI.match(value) else None


# --- the entry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """One ranked document as every format cites it."""

    rank: int
    docid: str
    key: str
    kind: Kind
    title: str  # cleaned: no markup, hyphenation repaired
    title_parts: Title  # the same title with its code names and acronyms marked for case protection
    authors: tuple[Name, ...]
    date: tuple[int, ...]  # (), (Y,), (Y, M) or (Y, M, D)
    venue: str | None  # proceedings, journal, institution or publisher; None for arXiv/local/misc
    keywords: tuple[str, ...]
    url: str | None
    doi: str | None
    eprint: str | None  # the arXiv id
    howpublished: str | None  # "Local file …" for local documents
    item: Mapping[str, Any]  # the ranked item (scores, evidence) for the note

    @property
    def year(self) -> int | None:
        return self.date[0] if self.date else None


def references(result: Mapping[str, Any], records: Mapping[str, DocRecord], origin: Origin | None) -> list[Reference]:
    """The result's ranked documents as references, keys assigned across all of them."""
    drafts = [_draft(rank, item, records, origin) for rank, item in enumerate(result.get("ranked", []), start=1)]
    keys = assign_keys(
        {
            d["docid"]: base_key(
                d["authors"][0].surname if d["authors"] else None,
                d["date"][0] if d["date"] else None,
                d["title"],
                d["docid"],
            )
            for d in drafts
        }
    )
    return [Reference(key=keys[d["docid"]], **d) for d in drafts]


def _draft(
    rank: int, item: Mapping[str, Any], records: Mapping[str, DocRecord], origin: Origin | None
) -> dict[str, Any]:
    """One ranked document's reference fields, all but its key."""
    docid = str(item["docid"])
    rec = records.get(docid)
    extras: Mapping[str, Any] = rec.extras if rec else {}
    cited = cited_title((rec.title if rec else "") or item.get("title") or "", docid)
    year = (rec.year if rec else None) or (item.get("year") if isinstance(item.get("year"), int) else None)
    venue = rec.venue if rec else None
    url = web_url(extras.get("url"))
    the_doi = doi(extras.get("doi"))
    eprint = arxiv_id(
        extras.get("arxiv"),
        extras.get("eprint"),
        extras.get("arxiv_id"),
        url,
        the_doi,
        venue if is_arxiv_venue(venue) else None,
    )
    kind: Kind = "arxiv" if eprint else venue_kind(venue)
    howpublished = None
    local = local_location(docid, extras, origin) if url is None and the_doi is None else None
    if local and kind == "misc":  # a document that is only a local file
        url, exact = local
        kind = "local"
        howpublished = "Local file" if exact else f"Local file {docid} (in the folder at the URL)"
    # A paper (it has a venue) is cited as the paper: the path of the reader's own copy is
    # private and means nothing to whoever reads the bibliography, so it gets no file URL.
    if kind == "arxiv" and eprint and url is None:
        url = f"https://arxiv.org/abs/{eprint}"
    elif kind == "arxiv" and not eprint:
        howpublished = venue  # "arXiv" with no id recorded: say where, cite no number
    container = venue if kind in ("conference", "journal", "report", "book") else None
    if kind == "report" and venue:
        container = institution(venue)
    authors = tuple(parse_names(rec.authors)) if rec else ()
    return dict(
        rank=rank,
        docid=docid,
        kind=kind,
        title=cited.text,
        title_parts=cited,
        authors=authors,
        date=tuple(date_parts(year, extras) or ()),
        venue=container,
        keywords=tuple(rec.keywords) if rec else (),
        url=url,
        doi=the_doi,
        eprint=eprint,
        howpublished=howpublished,
        item=item,
    )
