"""Read one document file of a supported format into title, text, metadata and pages.

Formats, by file suffix: PDF (`stores.pdf`, pages kept), HTML, DOCX, Markdown (with YAML front
matter: title, authors, year/date, venue, keywords, doi), reStructuredText, LaTeX and plain
text; a file without a suffix (README, NEWS, ChangeLog, INSTALL, AUTHORS, TODO …) is plain text
when its first bytes are UTF-8 text (`sniff_text`), else of an unsupported type like any other.
A man page rendered as text has its line-end hyphenation (U+2010) joined. Text files are
decoded as UTF-8 when they are, else by `charset-normalizer`'s detection (a Latin-1 note reads
as Latin-1); a file that decodes as nothing is not text.

`FileDocument`, `Unreadable`, `cap_title` and the size and title limits live in
`stores.file_document` (re-exported here), which the format readers import without importing
this module. A file that cannot give a document raises `Unreadable` with the reason a user reads
("encrypted PDF (password protected)"); the reader decides whether that skips the file or
rejects the ingest (`--strict`). Text is read only from a regular file, opened without blocking
(a FIFO renamed `notes.txt` would otherwise hang the ingest for ever).

Titles: a title is at most `TITLE_MAX_CHARS`. A longer one (a one-line 5 MB HTML page has
nothing but a "first line") is a paragraph, not a title: its text goes back to the top of the
body, so every word stays searchable, and the title shown is its start cut at a word boundary
with an ellipsis (`cap_title`).

HTML: `stores.html` (the page's main text with inline elements kept inline; why its rules and
not a boilerplate remover is measured there). Titles come from the sources that name a document
(front matter, `<title>`/`<h1>`, PDF metadata, a man page's NAME line, a reStructuredText
section title) before its first line, and never from a comment, markup or junk (a "=====" rule,
a table row, a mode line): `stores.titles`. A document nothing names is titled by its file name.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stores.file_document import MAX_DOCUMENT_CHARS, TITLE_MAX_CHARS, FileDocument, Unreadable, cap_title
from stores.titles import file_name_title, junk_title, man_page_title, rst_title, text_title

__all__ = ["MAX_DOCUMENT_CHARS", "SUPPORTED_SUFFIXES", "TITLE_MAX_CHARS", "FileDocument", "Unreadable",
           "cap_title", "is_supported", "read_file", "sniff_text"]

# Extension-less files (README, NEWS, ChangeLog, INSTALL, AUTHORS, TODO …) are read as plain text
# when their first SNIFF_BYTES look like UTF-8 text: no NUL byte, valid UTF-8 (a character cut at
# the sniff's end allowed) and at least TEXT_PRINTABLE_SHARE of the characters printable or
# whitespace. Anything else (an executable, a compressed blob) is a file of an unsupported type,
# named and not read, like a .pptx.
SNIFF_BYTES = 8192
TEXT_PRINTABLE_SHARE = 0.95
# Rendered man pages (`man -P cat`, groff's UTF-8 output) break words at a line end with U+2010
# HYPHEN ("connec‐" / "tions"); a plain "-" there is a real hyphen and stays.
_MAN_HYPHEN_EOL = re.compile(r"(?<=\w)\u2010[ \t]*\n[ \t]*(?=\w)")


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


def read_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file. Opened non-blocking and checked on the open
    descriptor, so a FIFO or device put in the file's place after the folder was listed is
    refused without ever waiting for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise Unreadable(f"cannot read the file ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable("not a regular file")
        try:
            return fh.read()
        except OSError as exc:
            raise Unreadable(f"cannot read the file ({exc.strerror or exc})") from exc


def _read_text(path: Path) -> str:
    return decode(read_regular(path))


def first_line_title(text: str, strip: str = "") -> tuple[str, str]:
    """(first line that is text, without the `strip` characters; the rest of the text): see
    `stores.titles.text_title` (comments, markup-only and badge-only lines are never titles)."""
    return text_title(text, strip)


# -- text-like formats ---------------------------------------------------------------------------

def join_man_hyphens(text: str) -> str:
    """A rendered man page's words split at a line end with U+2010 joined again ("connec‐\\n
    tions" → "connections", the rest of the next line following), so BM25 sees the word."""
    return _MAN_HYPHEN_EOL.sub("", text)


def read_txt(path: Path) -> FileDocument:
    """Plain text; a man page saved as text ("GREP(1) User Commands GREP(1)", or its NAME section
    first) is titled by its NAME line and kept whole, its line-end hyphenation joined."""
    content = _read_text(path)
    name = man_page_title(content)
    if name:
        return FileDocument(name, join_man_hyphens(content).strip())
    title, text = first_line_title(content)
    return FileDocument(title, text)


def sniff_text(path: Path) -> bool:
    """Whether a file without a suffix is text to read (see `SNIFF_BYTES`). Opened non-blocking,
    like `read_regular`; a file that cannot be opened is not text here (reading it would say why)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            head = fh.read(SNIFF_BYTES)
        except OSError:
            return False
    if not head or b"\x00" in head:
        return False
    try:
        sample = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3 or exc.reason != "unexpected end of data":
            return False
        sample = head[:exc.start].decode("utf-8-sig")
    printable = sum(ch.isprintable() or ch in "\t\n\r\f\v" for ch in sample)
    return printable >= TEXT_PRINTABLE_SHARE * len(sample)


# Conventional names of a project's plain-text documents. After them a suffix names a variant, not a
# format (README.Debian, NEWS.old, ChangeLog.1, INSTALL.unix: /usr/share/doc is full of them), so
# such a file is read as text when it is text, like a file without a suffix. Other unknown suffixes
# stay unsupported: sniffing every `.log`, `.csv` or source file would index what nobody asked for.
TEXT_DOCUMENT_NAMES = frozenset({
    "README", "NEWS", "CHANGES", "CHANGELOG", "INSTALL", "AUTHORS", "COPYING", "LICENSE", "TODO", "THANKS",
    "HACKING", "CONTRIBUTING", "NOTICE", "BUGS", "FAQ", "HISTORY", "RELEASE-NOTES", "UPGRADING"})


def format_suffix(path: Path) -> str:
    """The suffix that names `path`'s format ("" when none does: `README`, `README.Debian`)."""
    suffix = path.suffix.lower()
    return suffix if suffix in SUPPORTED_SUFFIXES else ""


def plain_text_candidate(path: Path) -> bool:
    """Whether `path` is read as plain text if it is text: no format suffix and either no suffix
    at all or a conventional document name before it (`TEXT_DOCUMENT_NAMES`)."""
    if format_suffix(path):
        return False
    return path.suffix == "" or path.name.split(".", 1)[0].upper() in TEXT_DOCUMENT_NAMES


def is_supported(path: Path) -> bool:
    """Whether Quarry reads `path`: a supported suffix, or a plain-text candidate that is text
    (`sniff_text`). Call it only on a path `stores.document_files.unsafe_reason` accepts: it opens the file."""
    return bool(format_suffix(path)) or (plain_text_candidate(path) and sniff_text(path))


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


def read_rst(path: Path) -> FileDocument:
    """reStructuredText as text; the title is the first section title (`stores.titles.rst_title`:
    past `..` comments and directives), and the adornment rows around it are dropped."""
    title, text = rst_title(_read_text(path))
    return FileDocument(title, text)


_TEX_COMMAND = r"\\{name}\s*(?:\[[^\]]*\])?\s*\{{((?:[^{{}}]|\{{[^{{}}]*\}})*)\}}"


def _tex_arg(source: str, name: str) -> str | None:
    found = re.search(_TEX_COMMAND.format(name=name), source)
    return " ".join(found.group(1).replace("\\\\", " ").split()) if found else None


_TEX_MARKUP_LINE = re.compile(r"^\s*(?:%.*|(?:\\[A-Za-z@]+\*?\s*(?:\[[^\]]*\]\s*)*(?:\{[^{}]*\}\s*)*)+(?:%.*)?)$")


def read_latex(path: Path) -> FileDocument:
    """LaTeX as text (the source, as BM25 and the reader see it), with `\\title` and `\\author`."""
    source = _read_text(path)
    title = _tex_arg(source, "title")
    meta: dict[str, Any] = {}
    authors = _tex_arg(source, "author")
    if authors:
        meta["authors"] = [a.strip() for a in re.split(r"\\and\b|,", authors) if a.strip()]
    if title is None:  # the first line of prose: never a % comment or a command line (\\documentclass{…})
        title = next((line.strip() for line in source.splitlines()
                      if line.strip() and not _TEX_MARKUP_LINE.match(line)), "")
    return FileDocument(title, source.strip(), meta)


# -- structured formats --------------------------------------------------------------------------

def read_html(path: Path) -> FileDocument:
    """The page's main text, title and citation metadata (`stores.html`)."""
    from stores.html import read_html_text

    title, text, meta = read_html_text(_read_text(path))
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
    """Read one file of a supported format (see `SUPPORTED_SUFFIXES`; a file without a suffix is
    plain text when `sniff_text` says so); raise `Unreadable`.
    A title over `TITLE_MAX_CHARS` goes back to the top of the text (see the module docstring;
    a paged reader caps its own, as its page offsets index the text). A document nothing names,
    or whose title is junk (`stores.titles.junk_title`: "=====", a table row, a mode line), is
    titled by its file name; a junk title's words go back to the top of the text."""
    suffix = path.suffix.lower()
    reader = READERS.get(suffix)
    if reader is None and plain_text_candidate(path) and sniff_text(path):
        reader = read_txt
    if reader is None:
        raise Unreadable(f"unsupported file type {path.suffix or '(none)'!r}")
    doc = reader(path)
    if not doc.title.strip() or junk_title(doc.title):
        text = doc.text
        if doc.title.strip() and not doc.page_starts:
            text = f"{doc.title.strip()}\n\n{doc.text}" if doc.text else doc.title.strip()
        if not text.strip():
            return doc  # nothing to search: the reader says "empty file"
        return FileDocument(file_name_title(path.name), text, doc.metadata, doc.page_starts)
    if len(doc.title) <= TITLE_MAX_CHARS or doc.page_starts:
        return doc
    text = f"{doc.title}\n\n{doc.text}" if doc.text else doc.title
    return FileDocument(cap_title(doc.title), text, doc.metadata)
