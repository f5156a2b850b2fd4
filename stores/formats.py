"""Read one document file of a supported format into title, text, metadata and pages.

Formats, by file suffix: PDF (`stores.pdf`, pages kept), HTML, DOCX, Markdown (with YAML front
matter: title, authors, year/date, venue, keywords, doi), reStructuredText, LaTeX and plain
text. Text files are decoded as UTF-8 when they are, else by `charset-normalizer`'s detection
(a Latin-1 note reads as Latin-1); a file that decodes as nothing is not text.

A file that cannot give a document raises `Unreadable` with the reason a user reads
("encrypted PDF (password protected)"); the reader decides whether that skips the file or
rejects the ingest (`--strict`).

HTML: BeautifulSoup over lxml, with script/style/nav/header/footer/aside dropped. Measured
against trafilatura on a note-like page (a nav bar, a heading, two paragraphs, a footer):
BeautifulSoup kept every paragraph and no navigation at 0.3 ms a page; trafilatura kept the
navigation links as text and took 5.7 ms. trafilatura's main-content heuristics pay off on
news pages, not on the saved notes and papers Quarry reads.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FileDocument", "SUPPORTED_SUFFIXES", "Unreadable", "read_file"]


class Unreadable(ValueError):
    """A file that gives no document; `str()` is the reason."""


@dataclass(frozen=True)
class FileDocument:
    """What a file says: `metadata` holds raw year/venue/authors/keywords/doi values, validated
    by the reader like a JSONL record's; `page_starts` as in `stores.records.DocRecord`."""

    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    page_starts: tuple[int, ...] = ()


# -- decoding ------------------------------------------------------------------------------------

def decode(raw: bytes) -> str:
    """Text of a file: UTF-8 (BOM or not) when valid, else the detected encoding."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if b"\x00" in raw[:8192]:
        raise Unreadable("binary data, not text")
    from charset_normalizer import from_bytes

    results = from_bytes(raw)
    best = results.best()
    if best is None:
        raise Unreadable("not text: no character encoding fits its bytes")
    # Short Western text fits several single-byte code pages equally well ("élèves" is as clean
    # in cp1250 as "élčves"); on a tie, Windows-1252 (Latin-1's superset) is the likeliest.
    tied = [m for m in results if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    return str(next((m for m in tied if m.encoding == "cp1252"), best))


def _read_text(path: Path) -> str:
    try:
        return decode(path.read_bytes())
    except OSError as exc:
        raise Unreadable(f"cannot read the file ({exc.strerror or exc})") from exc


def first_line_title(text: str, strip: str = "") -> tuple[str, str]:
    """(first non-empty line without the `strip` characters, the rest of the text)."""
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return "", ""
    return lines[first].strip().lstrip(strip).strip(), "\n".join(lines[first + 1:]).strip()


# -- text-like formats ---------------------------------------------------------------------------

def read_txt(path: Path) -> FileDocument:
    title, text = first_line_title(_read_text(path))
    return FileDocument(title, text)


_FRONT_KEYS = {"title": "title", "author": "authors", "authors": "authors", "year": "year", "date": "year",
               "venue": "venue", "journal": "venue", "booktitle": "venue", "keywords": "keywords",
               "tags": "keywords", "doi": "doi"}


def _plain(value: Any) -> Any:
    """YAML values as JSON values (dates become ISO strings)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def front_matter_metadata(front: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(title, metadata) from a front matter block: known keys mapped, the rest kept as extras."""
    meta: dict[str, Any] = {}
    title = ""
    for key, value in front.items():
        known = _FRONT_KEYS.get(str(key).lower())
        if known == "title":
            title = str(value or "").strip()
        elif known == "year":
            if isinstance(value, (dt.date, dt.datetime)):
                value = value.year
            elif isinstance(value, str) and re.match(r"^\d{4}-\d\d(-\d\d)?", value.strip()):
                value = value.strip()[:4]
            meta.setdefault("year", value)
        elif known == "authors" and isinstance(value, list):
            meta["authors"] = [str(_plain(a)) for a in value]
        elif known == "keywords" and isinstance(value, list):
            meta["keywords"] = [str(k) for k in value]
        elif known == "doi" and value is not None:
            meta["doi"] = str(value).strip()
        elif known is not None:
            meta[known] = _plain(value)
        else:
            meta[str(key)] = _plain(value)
    return title, meta


def read_markdown(path: Path) -> FileDocument:
    import frontmatter
    import yaml

    content = _read_text(path)
    try:
        post = frontmatter.loads(content)
    except yaml.YAMLError as exc:
        raise Unreadable(f"front matter is not valid YAML ({str(exc).splitlines()[0]})") from exc
    front = post.metadata if isinstance(post.metadata, dict) else {}
    title, meta = front_matter_metadata(front)
    heading, rest = first_line_title(post.content, "#")
    if not title:
        return FileDocument(heading, rest, meta)
    # A body opening with the front matter's own title as a heading does not repeat it.
    body = rest if heading == title else post.content.strip()
    return FileDocument(title, body, meta)


_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def read_rst(path: Path) -> FileDocument:
    """reStructuredText as text; the title is the first line that is not an adornment row, and
    the adornment rows around it are dropped."""
    lines = _read_text(path).splitlines()
    keep = [n for n, line in enumerate(lines) if line.strip() and not _RST_ADORNMENT.match(line)]
    if not keep:
        return FileDocument("", "")
    first = keep[0]
    rest = lines[first + 1:]
    if rest and _RST_ADORNMENT.match(rest[0]):
        rest = rest[1:]
    return FileDocument(lines[first].strip(), "\n".join(rest).strip())


_TEX_COMMAND = r"\\{name}\s*(?:\[[^\]]*\])?\s*\{{((?:[^{{}}]|\{{[^{{}}]*\}})*)\}}"


def _tex_arg(source: str, name: str) -> str | None:
    found = re.search(_TEX_COMMAND.format(name=name), source)
    return " ".join(found.group(1).replace("\\\\", " ").split()) if found else None


def read_latex(path: Path) -> FileDocument:
    """LaTeX as text (the source, as BM25 and the reader see it), with `\\title` and `\\author`."""
    source = _read_text(path)
    title = _tex_arg(source, "title")
    meta: dict[str, Any] = {}
    authors = _tex_arg(source, "author")
    if authors:
        meta["authors"] = [a.strip() for a in re.split(r"\\and\b|,", authors) if a.strip()]
    if title is None:
        title, text = first_line_title(source)
        return FileDocument(title, text, meta)
    return FileDocument(title, source.strip(), meta)


# -- structured formats --------------------------------------------------------------------------

_HTML_META = {"author": "authors", "citation_author": "authors", "dc.creator": "authors",
              "citation_publication_date": "year", "citation_date": "year", "dc.date": "year",
              "citation_journal_title": "venue", "citation_conference_title": "venue",
              "keywords": "keywords", "citation_keywords": "keywords", "citation_doi": "doi", "dc.identifier": "doi"}


def read_html(path: Path) -> FileDocument:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_read_text(path), "lxml")
    meta: dict[str, Any] = {}
    for tag in soup.find_all("meta"):
        key = _HTML_META.get(str(tag.get("name") or "").lower())
        value = str(tag.get("content") or "").strip()
        if not key or not value:
            continue
        if key == "authors":
            meta.setdefault("authors", []).append(value)
        elif key == "year":
            if re.match(r"^\d{4}", value):
                meta.setdefault("year", value[:4])
        else:
            meta.setdefault(key, value)
    head_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(["script", "style", "noscript", "template", "nav", "header", "footer", "aside", "head"]):
        tag.decompose()
    body = soup.body or soup
    h1 = body.find("h1")
    title = head_title or (h1.get_text(" ", strip=True) if h1 else "")
    if h1 is not None and h1.get_text(" ", strip=True) == title:
        h1.decompose()
    lines = [" ".join(line.split()) for line in body.get_text("\n").splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if not title:
        title, text = first_line_title(text)
    return FileDocument(title, text, meta)


def read_docx(path: Path) -> FileDocument:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise Unreadable(f"not a readable DOCX file ({exc})") from exc
    except Exception as exc:  # zipfile.BadZipFile, lxml errors: a damaged file, whatever the cause
        raise Unreadable(f"not a readable DOCX file ({type(exc).__name__}: {exc})") from exc
    props = document.core_properties
    paragraphs = [p for p in document.paragraphs]
    title = (props.title or "").strip()
    if not title:
        styled = next((p for p in paragraphs if p.text.strip() and p.style is not None
                       and p.style.name in ("Title", "Heading 1")), None)
        if styled is not None:
            title = styled.text.strip()
            paragraphs.remove(styled)
    parts = [p.text.rstrip() for p in paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text.strip() for cell in row.cells))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(parts)).strip()
    if not title:
        title, text = first_line_title(text)
    meta: dict[str, Any] = {}
    if props.author and props.author.strip():
        meta["authors"] = props.author.strip()
    if props.keywords and props.keywords.strip():
        meta["keywords"] = props.keywords.strip()
    return FileDocument(title, text, meta)


def _read_pdf(path: Path) -> FileDocument:
    from stores.pdf import read_pdf

    return read_pdf(path)


READERS: dict[str, Callable[[Path], FileDocument]] = {
    ".pdf": _read_pdf, ".html": read_html, ".htm": read_html, ".xhtml": read_html, ".docx": read_docx,
    ".md": read_markdown, ".markdown": read_markdown, ".rst": read_rst, ".tex": read_latex,
    ".txt": read_txt, ".text": read_txt,
}
SUPPORTED_SUFFIXES = frozenset(READERS)


def read_file(path: Path) -> FileDocument:
    """Read one file of a supported format (see `SUPPORTED_SUFFIXES`); raise `Unreadable`."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise Unreadable(f"unsupported file type {path.suffix or '(none)'!r}")
    return reader(path)
