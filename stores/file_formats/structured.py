"""Readers of the structured formats, HTML and DOCX, whose text comes out of markup or a package.

Its own module because these readers depend on their parsers (`stores.file_formats.html` over BeautifulSoup,
python-docx), apart from the text-like formats (`stores.file_formats.text`) and the suffix dispatch
(`stores.file_formats.dispatch`). HTML: the page's main text with inline elements kept inline, its `<title>`/
`<h1>` and citation metadata (why its rules and not a boilerplate remover is measured in
`stores.file_formats.html`). DOCX: paragraphs then table rows, titled by its core properties or its Title /
Heading 1 paragraph, with author and keywords. Either falls back to its first line that is text.
"""

from __future__ import annotations

import re
from typing import Any

from stores.file_formats.file_document import FileDocument, Unreadable
from stores.file_formats.file_source import FileSource
from stores.file_formats.text import first_line_title


def read_html(source: FileSource) -> FileDocument:
    """The page's main text, title and citation metadata (`stores.file_formats.html`)."""
    from stores.file_formats.html import read_html_text

    title, text, meta = read_html_text(source.text())
    if not title:
        title, text = first_line_title(text)
    return FileDocument(title, text, meta)


def read_docx(source: FileSource) -> FileDocument:
    import io

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    package = io.BytesIO(source.read()) if source.gzipped else str(source.path)
    try:
        document = docx.Document(package)
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise Unreadable(f"not a readable DOCX file ({exc})") from exc
    except Exception as exc:  # zipfile.BadZipFile, lxml errors: a damaged file, whatever the cause
        raise Unreadable(f"not a readable DOCX file ({type(exc).__name__}: {exc})") from exc
    props = document.core_properties
    paragraphs = [p for p in document.paragraphs]
    title = (props.title or "").strip()
    if not title:
        styled = next(
            (
                p
                for p in paragraphs
                if p.text.strip() and p.style is not None and p.style.name in ("Title", "Heading 1")
            ),
            None,
        )
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
