"""Read one document file of a supported format into title, text, metadata and pages: the
dispatch by file suffix and the title policy every format shares.

Formats, by file suffix: PDF (`stores.file_formats.pdf`, pages kept), HTML and DOCX
(`stores.file_formats.structured`), Markdown (with YAML front matter), reStructuredText, LaTeX and
plain text (`stores.file_formats.text`), man pages (roff under a section suffix such as `.1` or
`.3pm`, or `.man`: `stores.file_formats.manpages`); a file without a suffix (README, NEWS,
ChangeLog, INSTALL, AUTHORS, TODO …) is plain text when its first bytes are UTF-8 text
(`stores.file_formats.text_files.looks_like_text`), else of an unsupported type like any other. A
gzipped file (`ls.1.gz`, `changelog.Debian.gz`, `manual.html.gz`) is read as what it holds, by its
name without `.gz` (`stores.file_formats.gzipped`, `stores.file_formats.file_source`). Reading and
decoding a file's bytes is `stores.file_formats.text_files`. Dates and authors come with where they
were read (`stores.file_formats.metadata_sources`).

`FileDocument`, `Unreadable`, `cap_title` and the size and title limits live in
`stores.file_formats.file_document` (re-exported here), which the format readers import without
importing this module. A file that cannot give a document raises `Unreadable` with the reason a user
reads ("encrypted PDF (password protected)"); the reader decides whether that skips the file or
rejects the ingest (`--strict`).

Titles: a title is at most `TITLE_MAX_CHARS`. A longer one (a one-line 5 MB HTML page has
nothing but a "first line") is a paragraph, not a title: its text goes back to the top of the
body, so every word stays searchable, and the title shown is its start cut at a word boundary
with an ellipsis (`cap_title`). Titles come from the sources that name a document (front matter,
`<title>`/`<h1>`, PDF metadata, a man page's NAME line, a reStructuredText section title) before
its first line, and never from a comment, markup or junk (a "=====" rule, a table row, a mode
line): `stores.file_formats.titles`. A document nothing names is titled by its file name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stores.file_formats.file_document import MAX_DOCUMENT_CHARS, TITLE_MAX_CHARS, FileDocument, Unreadable, cap_title
from stores.file_formats.file_source import FileSource, file_source
from stores.file_formats.manpages import is_man_name, looks_like_roff, read_man
from stores.file_formats.structured import read_docx, read_html
from stores.file_formats.text import read_latex, read_markdown, read_rst, read_txt
from stores.file_formats.text_files import looks_like_text
from stores.file_formats.titles import file_name_title, junk_title

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "SUPPORTED_SUFFIXES",
    "TITLE_MAX_CHARS",
    "FileDocument",
    "Unreadable",
    "cap_title",
    "is_supported",
    "read_file",
]

# Conventional names of a project's plain-text documents. After them a suffix names a variant, not a
# format (README.Debian, NEWS.old, ChangeLog.1, INSTALL.unix: /usr/share/doc is full of them), so
# such a file is read as text when it is text, like a file without a suffix. Other unknown suffixes
# stay unsupported: sniffing every `.log`, `.csv` or source file would index what nobody asked for.
TEXT_DOCUMENT_NAMES = frozenset(
    {
        "README",
        "NEWS",
        "CHANGES",
        "CHANGELOG",
        "INSTALL",
        "AUTHORS",
        "COPYING",
        "LICENSE",
        "TODO",
        "THANKS",
        "HACKING",
        "CONTRIBUTING",
        "NOTICE",
        "BUGS",
        "FAQ",
        "HISTORY",
        "RELEASE-NOTES",
        "UPGRADING",
    }
)


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


def _reader(path: Path) -> tuple[FileSource, Callable[[FileSource], FileDocument]] | None:
    """The file as a reader gets it and the reader of its format, or None for an unsupported file.
    A `.gz` file is what it holds (`stores.file_formats.gzipped`); a man page is roff under a section suffix
    (`stores.file_formats.manpages`); a plain-text candidate is text by its first bytes. Reads only the first
    bytes, and only of a file whose name does not already say its format."""
    source = file_source(path)
    reader = READERS.get(source.suffix)
    if reader is not None:
        return source, reader
    head: bytes | None = None
    if is_man_name(source.name):
        head = source.head()
        if looks_like_roff(head):
            return source, read_man
    if plain_text_candidate(Path(source.name)):
        head = source.head() if head is None else head
        if head is not None and looks_like_text(head):
            return source, read_txt
    return None


def is_supported(path: Path) -> bool:
    """Whether Quarry reads `path` (see `_reader`). Call it only on a path
    `stores.file_formats.document_files.unsafe_reason` accepts: it may open the file."""
    return _reader(path) is not None


def _read_pdf(source: FileSource) -> FileDocument:
    from stores.file_formats.pdf import read_pdf

    return read_pdf(source)


READERS: dict[str, Callable[[FileSource], FileDocument]] = {
    ".pdf": _read_pdf,
    ".html": read_html,
    ".htm": read_html,
    ".xhtml": read_html,
    ".docx": read_docx,
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".rst": read_rst,
    ".tex": read_latex,
    ".txt": read_txt,
    ".text": read_txt,
}
SUPPORTED_SUFFIXES = frozenset(READERS)


def read_file(path: Path) -> FileDocument:
    """Read one file of a supported format (see `SUPPORTED_SUFFIXES`; a file without a suffix is
    plain text when `sniff_text` says so); raise `Unreadable`.
    A title over `TITLE_MAX_CHARS` goes back to the top of the text (see the module docstring;
    a paged reader caps its own, as its page offsets index the text). A document nothing names,
    or whose title is junk (`stores.file_formats.titles.junk_title`: "=====", a table row, a mode line), is
    titled by its file name; a junk title's words go back to the top of the text."""
    found = _reader(path)
    if found is None:
        raise Unreadable(f"unsupported file type {path.suffix or '(none)'!r}")
    source, reader = found
    doc = reader(source)
    if not doc.title.strip() or junk_title(doc.title):
        text = doc.text
        if doc.title.strip() and not doc.page_starts:
            text = f"{doc.title.strip()}\n\n{doc.text}" if doc.text else doc.title.strip()
        if not text.strip():
            return doc  # nothing to search: the reader says "empty file"
        return FileDocument(file_name_title(source.name), text, doc.metadata, doc.page_starts)
    if len(doc.title) <= TITLE_MAX_CHARS or doc.page_starts:
        return doc
    text = f"{doc.title}\n\n{doc.text}" if doc.text else doc.title
    return FileDocument(cap_title(doc.title), text, doc.metadata)
