"""Readers of the text-like formats: plain text (man pages included), Markdown, reStructuredText
and LaTeX.

Its own module because these formats share one shape (a decoded text file, a title found in the
text or its front matter) apart from the suffix dispatch (`stores.formats`) and the formats whose
text comes out of markup or a package (`stores.structured_formats`). Markdown's YAML front matter
gives title, authors, year/date, venue, keywords and doi. A man page rendered as text has its
line-end hyphenation (U+2010) joined. Titles come from the sources that name a document (front
matter, a man page's NAME line, a reStructuredText section title, `\\title`) before its first line
that is text (`stores.titles`).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from stores.file_document import FileDocument, Unreadable
from stores.text_files import read_text
from stores.titles import man_page_title, rst_title, text_title

# Rendered man pages (`man -P cat`, groff's UTF-8 output) break words at a line end with U+2010
# HYPHEN ("connec‐" / "tions"); a plain "-" there is a real hyphen and stays.
_MAN_HYPHEN_EOL = re.compile(r"(?<=\w)\u2010[ \t]*\n[ \t]*(?=\w)")


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
    content = read_text(path)
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

    content = read_text(path)
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
    title, text = rst_title(read_text(path))
    return FileDocument(title, text)


_TEX_COMMAND = r"\\{name}\s*(?:\[[^\]]*\])?\s*\{{((?:[^{{}}]|\{{[^{{}}]*\}})*)\}}"


def _tex_arg(source: str, name: str) -> str | None:
    found = re.search(_TEX_COMMAND.format(name=name), source)
    return " ".join(found.group(1).replace("\\\\", " ").split()) if found else None


_TEX_MARKUP_LINE = re.compile(r"^\s*(?:%.*|(?:\\[A-Za-z@]+\*?\s*(?:\[[^\]]*\]\s*)*(?:\{[^{}]*\}\s*)*)+(?:%.*)?)$")


def read_latex(path: Path) -> FileDocument:
    """LaTeX as text (the source, as BM25 and the reader see it), with `\\title` and `\\author`."""
    source = read_text(path)
    title = _tex_arg(source, "title")
    meta: dict[str, Any] = {}
    authors = _tex_arg(source, "author")
    if authors:
        meta["authors"] = [a.strip() for a in re.split(r"\\and\b|,", authors) if a.strip()]
    if title is None:  # the first line of prose: never a % comment or a command line (\\documentclass{…})
        title = next(
            (line.strip() for line in source.splitlines() if line.strip() and not _TEX_MARKUP_LINE.match(line)), ""
        )
    return FileDocument(title, source.strip(), meta)
