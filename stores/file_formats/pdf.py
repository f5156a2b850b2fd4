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
`text.splitlines()`, of page n's first line (see `stores.records.page_of_line`). Reading and
paginating are linear in the pages (`python -m bench.bench_pdf_pages`), and a file is refused as
soon as its text passes `stores.file_formats.file_document.MAX_DOCUMENT_CHARS`.

Running headers and footers ("RFC 9110  HTTP Semantics  June 2022" atop every page of an RFC,
"Fielding, et al.  Standards Track  [Page 12]" below it; "Shared MIME-info Database" and a page
number in the shared-mime-info spec) are not text of the document: repeated on every page they
weigh in BM25 as if each page said them, and split a sentence that runs over a page break.
`drop_running_lines` takes them out: a line among a page's first or last `RUNNING_EDGE_LINES`
non-blank lines that, with its digits normalised (page numbers differ), is among the edge lines
of at least `RUNNING_MIN_SHARE` of the pages and of at least `RUNNING_MIN_PAGES` pages. Only the
lines go; the pages stay, so `page_starts` still gives each page (an emptied page starts where
the next one does).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from stores.file_formats import file_document
from stores.file_formats.file_document import FileDocument, Unreadable, cap_title
from stores.file_formats.file_source import FileSource
from stores.file_formats.metadata_sources import Claim, bibliographic
from stores.file_formats.titles import junk_title, placeholder_title

_SOFT_HYPHEN_EOL = re.compile(r"\x02[ \t]*\n[ \t]*")
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")

# See the module docstring: where a running header or footer sits, and how often it must repeat.
RUNNING_EDGE_LINES = 2
RUNNING_MIN_SHARE = 0.5
RUNNING_MIN_PAGES = 3
_DIGITS = re.compile(r"\d+")


def page_lines(raw: str) -> list[str]:
    """One page's extracted text as clean lines (hyphenation joined, control characters gone)."""
    text = _LINE_BREAKS.sub("\n", raw)
    text = _SOFT_HYPHEN_EOL.sub("", text)
    text = _CONTROL.sub("", text)
    return [line.rstrip() for line in text.split("\n")]


def _running_key(line: str) -> str:
    """A line as compared across pages: digits as "#" (page numbers, "[Page 12]"), whitespace runs
    as one space, case folded."""
    return " ".join(_DIGITS.sub("#", line).split()).casefold()


def _edge_indexes(lines: list[str]) -> list[int]:
    """Indexes of a page's first and last `RUNNING_EDGE_LINES` non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:RUNNING_EDGE_LINES] + filled[-RUNNING_EDGE_LINES:]))


def drop_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages without their running headers and footers (see the module docstring); a document
    of fewer than `RUNNING_MIN_PAGES` pages is returned as it is. Linear in the lines."""
    if len(pages) < RUNNING_MIN_PAGES:
        return pages
    edges = [_edge_indexes(lines) for lines in pages]
    seen: Counter[str] = Counter()
    for lines, idx in zip(pages, edges, strict=True):
        seen.update({_running_key(lines[i]) for i in idx})
    needed = max(RUNNING_MIN_PAGES, RUNNING_MIN_SHARE * len(pages))
    running = {key for key, count in seen.items() if count >= needed}
    if not running:
        return pages
    out = []
    for no, (lines, idx) in enumerate(zip(pages, edges, strict=True)):
        # The first page's head stays: a running header that repeats the document's name is its
        # title there ("Shared MIME-info Database" above the spec's first page was dropped, and the
        # author line below it titled the document).
        drop = {i for i in idx if _running_key(lines[i]) in running and (no or i >= len(lines) / 2)}
        out.append([line for i, line in enumerate(lines) if i not in drop] if drop else lines)
    return out


def paginate(pages: list[list[str]], title: str = "") -> tuple[str, str, tuple[int, ...]]:
    """(title, text, page_starts) from each page's lines. Without a title, the first non-empty
    line is the title and leaves the text (unless it is too long to be one: then it stays, and
    the title is its capped start, see `stores.file_formats.file_document.cap_title`); leading and trailing blank
    lines are dropped, so the text is stable under `strip()` and the page offsets stay true.

    One pass over the lines and one over the pages, whatever their number: finding each page's
    first line by scanning from the top made a 4,000-page file take 19.5 s."""
    nos = [no for no, lines in enumerate(pages, start=1) for _ in lines]
    flat = [line for lines in pages for line in lines]
    lo, hi = 0, len(flat)
    while lo < hi and not flat[lo].strip():
        lo += 1
    while hi > lo and not flat[hi - 1].strip():
        hi -= 1
    if title:
        title = cap_title(title)
    elif lo < hi and not junk_title(flat[lo]):  # a junk first line ("=====") stays text; the file name titles it
        first = flat[lo].strip()
        title = cap_title(first)
        if title == first:  # a title: it leaves the text
            lo += 1
            while lo < hi and not flat[lo].strip():
                lo += 1
    if lo < hi:
        flat[lo] = flat[lo].lstrip()
    starts: list[int] = []
    at = lo
    for page in range(1, len(pages) + 1):
        # The first line on or after this page (an empty page starts where the next one does).
        while at < hi and nos[at] < page:
            at += 1
        starts.append(at - lo)
    return title, "\n".join(flat[lo:hi]), tuple(starts)


def _too_long(chars: int, page: int, pages: int) -> Unreadable:
    limit = file_document.MAX_DOCUMENT_CHARS
    return Unreadable(
        f"more than {limit:,} characters by page {page:,} of {pages:,} ({chars:,} read); Quarry "
        f"indexes documents of up to {limit:,} characters: split it into several documents"
    )


def _xmp_claims(pdf: str | bytes) -> dict[str, Claim]:
    """The date and author claims of the PDF's XMP packet by source (`dc:date`, `xmp:CreateDate`,
    `dc:creator`). pypdf reads XMP (PDFium does not); a packet it cannot parse gives nothing, as
    the text was already read."""
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged packet is not the user's concern here
    try:
        xmp = PdfReader(io.BytesIO(pdf) if isinstance(pdf, bytes) else pdf).xmp_metadata
        if xmp is None:
            return {}
        dates = xmp.dc_date or []
        found = {"dc:date": dates[0] if dates else None, "xmp:CreateDate": xmp.xmp_create_date}
        creators = list(xmp.dc_creator or [])
    except Exception:  # pypdf's own failure on a malformed packet (ValueError, KeyError, PdfReadError …)
        return {}
    claims = {key: Claim("date", value, f"pdf:xmp:{key}") for key, value in found.items() if value}
    claims["dc:creator"] = Claim("authors", creators, "pdf:xmp:dc:creator")
    return claims


def pdf_bibliographic(info: dict[str, str], pdf: str | bytes) -> dict[str, Any]:
    """Year, date and authors of a PDF with their sources (`stores.file_formats.metadata_sources`), in order of
    trust: XMP `dc:date` (the publication date), Info `CreationDate`, XMP `xmp:CreateDate`; XMP
    `dc:creator`, Info `Author`. `ModDate` is when the file was last saved, not a publication date."""
    xmp = _xmp_claims(pdf)
    order = (
        xmp.get("dc:date"),
        Claim("date", info.get("CreationDate", ""), "pdf:info:CreationDate"),
        xmp.get("xmp:CreateDate"),
        xmp.get("dc:creator"),
        Claim("authors", info.get("Author", ""), "pdf:info:Author"),
    )
    return bibliographic(c for c in order if c is not None)


def read_pdf(source: FileSource) -> FileDocument:
    """Title, text, pages and metadata of a PDF; the size limit is checked as pages are read,
    so a 20,000-page file is refused at the page that passes it, not after all of them."""
    import pypdfium2 as pdfium

    pdf: str | bytes = source.read() if source.gzipped else str(source.path)
    try:
        doc = pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise Unreadable("encrypted PDF (password protected); decrypt it first") from exc
        raise Unreadable(f"not a readable PDF ({exc})") from exc
    try:
        pages: list[list[str]] = []
        chars, count = 0, len(doc)
        for i in range(count):
            page = doc[i]
            textpage = page.get_textpage()
            lines = page_lines(textpage.get_text_bounded())
            textpage.close()
            page.close()
            pages.append(lines)
            chars += sum(len(line) + 1 for line in lines)
            if chars > file_document.MAX_DOCUMENT_CHARS:
                raise _too_long(chars, i + 1, count)
        info = doc.get_metadata_dict(skip_empty=True)
    finally:
        doc.close()
    if not any(line.strip() for lines in pages for line in lines):
        raise Unreadable(f"no extractable text in {len(pages)} page(s) (a scanned PDF? OCR it first)")
    title = " ".join(info.get("Title", "").split())
    if placeholder_title(title):
        title = ""  # what tools write when the author gave no title
    title, text, starts = paginate(drop_running_lines(pages), title)
    meta: dict[str, Any] = {"page_count": len(pages), **pdf_bibliographic(info, pdf)}
    if info.get("Keywords", "").strip():
        meta["keywords"] = info["Keywords"].strip()
    return FileDocument(title, text, meta, starts)
