"""Readers of the text-like formats: plain text (man pages included), Markdown, reStructuredText
and LaTeX.

Its own module because these formats share one shape (a decoded text file, a title found in the text
or its front matter) apart from the suffix dispatch (`stores.file_formats.dispatch`) and the formats
whose text comes out of markup or a package (`stores.file_formats.structured`). Markdown's YAML
front matter gives title, authors, year/date, venue, keywords and doi; reStructuredText's
bibliographic fields (`:Author:`, `:Date:`) give authors and year, each with its source
(`stores.file_formats.metadata_sources`). A man page rendered as text has its line-end hyphenation
(U+2010) joined. Titles come from the sources that name a document (front matter, a man page's NAME
line, a reStructuredText section title, `\\title`) before its first line that is text
(`stores.file_formats.titles`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from stores.file_formats.file_document import FileDocument, Unreadable
from stores.file_formats.file_source import FileSource
from stores.file_formats.metadata_sources import Claim, bibliographic
from stores.file_formats.titles import man_page_title, rst_title, text_title

# Rendered man pages (`man -P cat`, groff's UTF-8 output) break words at a line end with U+2010
# HYPHEN ("connec‐" / "tions"); a plain "-" there is a real hyphen and stays.
_MAN_HYPHEN_EOL = re.compile(r"(?<=\w)\u2010[ \t]*\n[ \t]*(?=\w)")


def first_line_title(text: str, strip: str = "") -> tuple[str, str]:
    """(first line that is text, without the `strip` characters; the rest of the text): see
    `stores.file_formats.titles.text_title` (comments, markup-only and badge-only lines are never titles)."""
    return text_title(text, strip)


# -- text-like formats ---------------------------------------------------------------------------


def join_man_hyphens(text: str) -> str:
    """A rendered man page's words split at a line end with U+2010 joined again ("connec‐\\n
    tions" → "connections", the rest of the next line following), so BM25 sees the word."""
    return _MAN_HYPHEN_EOL.sub("", text)


def read_txt(source: FileSource) -> FileDocument:
    """Plain text; a man page saved as text ("GREP(1) User Commands GREP(1)", or its NAME section
    first) is titled by its NAME line and kept whole, its line-end hyphenation joined."""
    content = source.text()
    name = man_page_title(content)
    if name:
        return FileDocument(name, join_man_hyphens(content).strip())
    title, text = first_line_title(content)
    return FileDocument(title, text)


_FRONT_KEYS = {
    "title": "title",
    "author": "authors",
    "authors": "authors",
    "year": "year",
    "date": "year",
    "venue": "venue",
    "journal": "venue",
    "booktitle": "venue",
    "keywords": "keywords",
    "tags": "keywords",
    "doi": "doi",
}


def _plain(value: Any) -> Any:
    """YAML values as JSON values (dates become ISO strings)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def front_matter_metadata(front: dict[str, Any], origin: str = "markdown:front-matter") -> tuple[str, dict[str, Any]]:
    """(title, metadata) from a front matter block: known keys mapped, the rest kept as extras.
    Year and authors come with their sources (`stores.file_formats.metadata_sources`): a `date` before a
    `year`, keys named `{origin}:{key}`."""
    meta: dict[str, Any] = {}
    title = ""
    dates: list[Claim] = []
    authors: list[Claim] = []
    for key, value in front.items():
        name = str(key).lower()
        known = _FRONT_KEYS.get(name)
        if known == "title":
            title = str(value or "").strip()
        elif known == "year":
            dates.insert(0 if name == "date" else len(dates), Claim("date", value, f"{origin}:{key}"))
        elif known == "authors":
            names = [str(_plain(a)) for a in value] if isinstance(value, list) else value
            authors.append(Claim("authors", names, f"{origin}:{key}"))
        elif known == "keywords" and isinstance(value, list):
            meta["keywords"] = [str(k) for k in value]
        elif known == "doi" and value is not None:
            meta["doi"] = str(value).strip()
        elif known is not None:
            meta[known] = _plain(value)
        else:
            meta[str(key)] = _plain(value)
    found = bibliographic(dates + authors)
    if dates and "year" not in found:
        found["year"] = dates[0].value  # no date in it: validated as a year, so the file is refused saying why
    return title, meta | found


def read_markdown(source: FileSource) -> FileDocument:
    import frontmatter
    import yaml

    content = source.text()
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


# reStructuredText's bibliographic fields (docutils' "docinfo"): a field list near the top.
_RST_FIELD = re.compile(r"^:(author|authors|date):[ \t]*(\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_RST_DOCINFO_LINES = 60


def rst_field_claims(text: str) -> list[Claim]:
    """Date and author claims of a reStructuredText document's bibliographic fields (`:Date:`,
    `:Author:`, `:Authors:` among its first lines; several authors are separated by ";", else by
    ",", as docutils reads them)."""
    head = "\n".join(text.splitlines()[:_RST_DOCINFO_LINES])
    claims = []
    for m in _RST_FIELD.finditer(head):
        key, value = m.group(1).lower(), m.group(2)
        if key == "date":
            claims.append(Claim("date", value, "rst:field:date"))
        else:
            names = value.split(";") if ";" in value or key == "author" else value.split(",")
            claims.append(Claim("authors", names, f"rst:field:{key}"))
    return claims


def read_rst(source: FileSource) -> FileDocument:
    """reStructuredText as text; the title is the first section title (`stores.file_formats.titles.rst_title`:
    past `..` comments and directives), and the adornment rows around it are dropped. Year and
    authors come from its bibliographic fields (`rst_field_claims`)."""
    content = source.text()
    title, text = rst_title(content)
    return FileDocument(title, text, bibliographic(rst_field_claims(content)))


_TEX_COMMAND = r"\\{name}\s*(?:\[[^\]]*\])?\s*\{{((?:[^{{}}]|\{{[^{{}}]*\}})*)\}}"


def _tex_arg(source: str, name: str) -> str | None:
    found = re.search(_TEX_COMMAND.format(name=name), source)
    return " ".join(found.group(1).replace("\\\\", " ").split()) if found else None


_TEX_MARKUP_LINE = re.compile(r"^\s*(?:%.*|(?:\\[A-Za-z@]+\*?\s*(?:\[[^\]]*\]\s*)*(?:\{[^{}]*\}\s*)*)+(?:%.*)?)$")


def read_latex(source: FileSource) -> FileDocument:
    """LaTeX as text (the source, as BM25 and the reader see it), with `\\title` and `\\author`."""
    tex = source.text()
    title = _tex_arg(tex, "title")
    meta: dict[str, Any] = {}
    authors = _tex_arg(tex, "author")
    if authors:
        meta["authors"] = [a.strip() for a in re.split(r"\\and\b|,", authors) if a.strip()]
    if title is None:  # the first line of prose: never a % comment or a command line (\\documentclass{…})
        title = next(
            (line.strip() for line in tex.splitlines() if line.strip() and not _TEX_MARKUP_LINE.match(line)), ""
        )
    return FileDocument(title, tex.strip(), meta)
