"""PDF text with its pages, through pypdfium2 (Google's PDFium).

Why PDFium (`python -m bench.bench_pdf`, docs/performance.md): on a generated three-page PDF of
known text (two justified pages, one two-column page) pypdf, PyMuPDF and pypdfium2 all returned
every word in reading order (recall, precision and order 1.000); on the two real manuals found
on this machine (libtasn1, 36 pages; shared-mime-info spec, 17 pages) all three gave the same
10,803 and 5,508 words with no glued words. Speed decided: pypdfium2 ~1,000 pages/s, PyMuPDF
~1,000–1,100, pypdf ~80 (pure Python). PyMuPDF is AGPL-licensed, which would bind Quarry;
PDFium is Apache/BSD. PDFium marks a soft hyphen at a line end with U+0002, which is used here
to join the word again ("man-\\nagement" → "management"), what BM25 wants.

Pages: the text is the pages' lines in order; `page_starts[n - 1]` is the index, in
`text.splitlines()`, of page n's first line (see `stores.records.page_of_line`).
"""
from __future__ import annotations

import re
from pathlib import Path

from stores.formats import FileDocument, Unreadable

_SOFT_HYPHEN_EOL = re.compile(r"\x02[ \t]*\n[ \t]*")
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_YEAR = re.compile(r"^D?:?(\d{4})")


def page_lines(raw: str) -> list[str]:
    """One page's extracted text as clean lines (hyphenation joined, control characters gone)."""
    text = _LINE_BREAKS.sub("\n", raw)
    text = _SOFT_HYPHEN_EOL.sub("", text)
    text = _CONTROL.sub("", text)
    return [line.rstrip() for line in text.split("\n")]


def paginate(pages: list[list[str]], title: str = "") -> tuple[str, str, tuple[int, ...]]:
    """(title, text, page_starts) from each page's lines. Without a title, the first non-empty
    line is the title and leaves the text; leading and trailing blank lines are dropped, so the
    text is stable under `strip()` and the page offsets stay true."""
    flat: list[tuple[int, str]] = [(no, line) for no, lines in enumerate(pages, start=1) for line in lines]
    while flat and not flat[0][1].strip():
        flat.pop(0)
    while flat and not flat[-1][1].strip():
        flat.pop()
    if not title and flat:
        title = flat.pop(0)[1].strip()
        while flat and not flat[0][1].strip():
            flat.pop(0)
    if flat:
        flat[0] = (flat[0][0], flat[0][1].lstrip())
    starts: list[int] = []
    for page in range(1, len(pages) + 1):
        # The first line on or after this page (an empty page starts where the next one does).
        starts.append(next((i for i, (no, _) in enumerate(flat) if no >= page), len(flat)))
    return title, "\n".join(line for _, line in flat), tuple(starts)


def read_pdf(path: Path) -> FileDocument:
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise Unreadable("encrypted PDF (password protected); decrypt it first") from exc
        raise Unreadable(f"not a readable PDF ({exc})") from exc
    try:
        pages = []
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            pages.append(page_lines(textpage.get_text_bounded()))
            textpage.close()
            page.close()
        info = doc.get_metadata_dict(skip_empty=True)
    finally:
        doc.close()
    if not any(line.strip() for lines in pages for line in lines):
        raise Unreadable(f"no extractable text in {len(pages)} page(s) (a scanned PDF? OCR it first)")
    title = " ".join(info.get("Title", "").split())
    if title.lower() in {"untitled", "microsoft word", "title"} or title.lower().endswith((".doc", ".docx", ".pdf", ".tex")):
        title = ""  # what tools write when the author gave no title
    title, text, starts = paginate(pages, title)
    meta: dict = {"page_count": len(pages)}
    if info.get("Author", "").strip():
        meta["authors"] = info["Author"].strip()
    if info.get("Keywords", "").strip():
        meta["keywords"] = info["Keywords"].strip()
    return FileDocument(title, text, meta, starts)
