"""HTML pages as documents: the page's main text, with inline elements kept inline, its title and
its citation metadata (`stores.file_formats.html_meta`).

Why its own rules and not a boilerplate remover: measured on five real pages of five generators
(mdBook, Sphinx/Furo, MkDocs Material, Javadoc 8, a static blog) with hand-marked main text
(`python -m evals.html_extraction`, tests/fixtures/html, docs/eval/html.md), these rules kept every
marked sentence whole on one line, no marked chrome, and all the main text's words, on every
page. trafilatura kept the source's line breaks inside sentences (0 of 7 whole on mdBook) and half
of the Javadoc page; readability-lxml kept one block (31% of the Javadoc words, 51% of the Sphinx
page's); resiliparse kept mdBook's theme list and lost the Javadoc page — and each would be a new
dependency. Documentation generators mark their structure well, so structure (landmarks, roles,
chrome classes) beats text-density heuristics made for news pages.

What the rules do:
- The main content is `<main>` / `[role=main]` when the page has one, else its `<article>`s,
  else `<body>`. Inside it, page chrome goes: what is chrome (navigation, sidebars, hidden
  elements, a page-level `<header>`/`<footer>`, texinfo node navigation) is `stores.file_formats.html_chrome`.
- Text: inline elements (`<code>`, `<a>`, `<em>`, unknown tags) stay inline and whitespace runs
  (source newlines included) are one space, so a sentence that had `<code>drop</code>` on a
  line end is one line. Each block (p, h1-h6, pre, blockquote, div, table, list, ...) is its own
  paragraph, separated by a blank line (what sentence and paragraph splitting in
  `nodes.evidence.sentences` relies on: a heading never runs into the next sentence); list items, table
  rows and definition terms end a line; table cells are joined by " | "; `<br>` breaks the line;
  `<pre>` keeps its lines.
- Title: see `stores.file_formats.titles.html_title` (a heading of the page when `<title>` is that heading
  plus a site name, else `<title>`); the heading that gave it leaves the text.

The tree is BeautifulSoup's over lxml (as the reader always was), walked with an explicit stack: lxml's
own tree stops at 2,048 levels of nesting and silently drops the rest of the page (checked), and a
recursive walk would exhaust Python's stack on a page nested a few thousand deep.
"""

from __future__ import annotations

import re
from typing import Any

from stores.file_formats.html_chrome import is_chrome, never_text, tag_name
from stores.file_formats.html_meta import html_metadata
from stores.file_formats.titles import html_title

__all__ = ["extract", "html_text", "parse", "read_html_text", "render_html"]

# Paragraph-level blocks: a blank line before and after.
_PARAGRAPH_TAGS = frozenset(
    {
        "address",
        "article",
        "blockquote",
        "center",
        "details",
        "div",
        "dl",
        "fieldset",
        "figure",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "legend",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "ul",
        "listing",
        "xmp",
        "plaintext",
        "body",
        "html",
    }
)
# Line-level blocks: a line of their own, no blank line.
_LINE_TAGS = frozenset({"li", "tr", "dt", "dd", "caption", "figcaption", "summary", "thead", "tbody", "tfoot"})
_CELL_TAGS = frozenset({"td", "th"})
_PRE_TAGS = frozenset({"pre", "listing", "xmp", "plaintext"})
# A `<pre>` block (an example, a listing, a shell session) is written between Markdown fences, so
# the evidence rules (`nodes.evidence.quotable`) know it as code, as in a Markdown file: texinfo's
# "texi2any --fill-column=68 bison.texinfo" example was quoted as the evidence for a default.
CODE_FENCE = "```"


_WHITESPACE = re.compile(r"[ \t\n\r\f\v\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_INVISIBLE = re.compile(r"[\u00ad\u200b\u200c\u200d\u2060\ufeff]")


class _Writer:
    """Text out of a stream of inline text and block boundaries."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending = 0  # newlines owed before the next text: 1 line, 2 paragraph
        self.space = False  # a space owed before the next inline text
        self.line_start = True
        self.separator = ""  # " | " between table cells

    def brk(self, level: int) -> None:
        self.pending = max(self.pending, level)
        self.separator = ""

    def _flush(self) -> None:
        if self.pending and self.parts:
            self.parts.append("\n" * self.pending)
            self.line_start = True
        self.pending = 0
        self.space = False

    def inline(self, raw: str) -> None:
        raw = _INVISIBLE.sub("", raw)
        if not raw:
            return
        core = _WHITESPACE.sub(" ", raw)
        words = core.strip()
        if not words:
            self.space = True
            return
        lead = core[0] == " "
        if self.pending:
            self._flush()
        if not self.line_start:
            if self.separator:
                self.parts.append(self.separator)
            elif self.space or lead:
                self.parts.append(" ")
        self.separator = ""
        self.parts.append(words)
        self.line_start = False
        self.space = core[-1] == " "

    def verbatim(self, raw: str) -> None:
        raw = _INVISIBLE.sub("", raw).replace("\r\n", "\n").replace("\r", "\n")
        if not raw:
            return
        if self.pending:
            self._flush()
        self.parts.append(raw)
        self.line_start = raw.endswith("\n")
        self.space = False

    def text(self) -> str:
        lines = [line.rstrip() for line in "".join(self.parts).split("\n")]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


# Long: one iterative tree walk; its opening and closing cases share the counters pre and cells.
def _render(roots: list[Any], skip: set[int], *, page_level: bool, chrome: bool = True) -> str:
    """The text of `roots` (tags), leaving out the tags whose id() is in `skip` and, with
    `chrome`, page chrome (`is_chrome`)."""
    from bs4 import CData, NavigableString, Tag

    dropped = is_chrome if chrome else never_text
    out = _Writer()
    for root in roots:
        out.brk(2)
        pre = cells = 0
        pre_opened = False
        stack = [(root, iter(root.contents))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                if node is root:
                    continue
                tag = tag_name(node)
                if tag in _PRE_TAGS:
                    pre -= 1
                    if not pre and not cells:  # the example's closing fence
                        out.verbatim("\n" + CODE_FENCE if not out.line_start else CODE_FENCE)
                if tag in _CELL_TAGS:
                    cells -= 1
                elif cells and tag not in _PRE_TAGS and (tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS):
                    out.space = True
                elif tag in _PARAGRAPH_TAGS:
                    out.brk(2)
                elif tag in _LINE_TAGS:
                    out.brk(1)
                continue
            if isinstance(child, Tag):
                if id(child) in skip or dropped(child, page_level=page_level):
                    continue
                tag = tag_name(child)
                if tag == "math":  # MathML: its TeX alt text, not a soup of <mi>/<mo> leaves
                    out.inline(str(child.get("alttext") or child.get_text(" ")))  # bs4 types attributes as str or list
                    continue
                if tag in _CELL_TAGS:
                    cells += 1
                    if not out.line_start:
                        out.separator = " | "
                elif cells and tag not in _PRE_TAGS and (tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS or tag == "br"):
                    out.space = True  # a table row stays one line, whatever its cells hold
                elif tag in _PARAGRAPH_TAGS:
                    out.brk(2)
                elif tag in _LINE_TAGS or tag == "br":
                    out.brk(1)
                if tag in _PRE_TAGS:
                    if not pre and not cells:  # an example is code: fenced as Markdown would (see CODE_FENCE)
                        out.brk(2)
                        out.verbatim(CODE_FENCE + "\n")
                    pre += 1
                    pre_opened = True
                stack.append((child, iter(child.contents)))
            elif isinstance(child, NavigableString) and type(child) in (NavigableString, CData):
                text = str(child)
                if pre:
                    if pre_opened and text.startswith("\n"):
                        text = text[1:]  # a newline right after <pre> is not content (HTML's rule)
                    out.verbatim(text)
                else:
                    out.inline(text)
                pre_opened = False
        out.brk(2)
    return out.text()


def html_text(element: Any) -> str:
    """The text of one element as the page shows it (chrome inside it dropped), on one line."""
    return " ".join(_render([element], set(), page_level=False).split())


def _outermost(elements: list[Any]) -> list[Any]:
    chosen = {id(el) for el in elements}
    return [el for el in elements if not any(id(p) in chosen for p in el.parents)]


def _landmarks(soup: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """(`<main>`/`[role=main]` tags, `<article>` tags, `<h1>`/`<h2>` tags) of a page, in page order,
    found in one pass (a 3 MB page has some 180,000 tags)."""
    from bs4 import Tag

    mains, articles, headings = [], [], []
    for el in soup.descendants:
        if not isinstance(el, Tag):
            continue
        name = el.name
        if name == "main" or (el.get("role") and str(el.get("role")).strip().lower() == "main"):
            mains.append(el)
        elif name == "article":
            articles.append(el)
        if name in ("h1", "h2"):
            headings.append(el)
    return mains, articles, headings


def _main_roots(soup: Any, mains: list[Any], articles: list[Any]) -> tuple[list[Any], bool]:
    """(the main content's tags in page order, whether they are landmarks rather than the body)."""
    if mains:
        return _outermost(mains), True
    if articles:
        return _outermost(articles), True
    return [soup.body or soup], False


def parse(source: str) -> Any:
    """BeautifulSoup's tree (over lxml) of a page."""
    import warnings

    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        # XHTML manuals (DocBook output in /usr/share/doc) are read as the HTML browsers show; the
        # warning printed a screenful per file during an ingest.
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(source, "lxml")


def render_html(source: str, *, chrome: bool = True) -> str:
    """The text of a whole HTML fragment or page; `chrome=False` keeps page chrome (only script,
    style and the like go)."""
    soup = parse(source)
    return _render([soup.body or soup], set(), page_level=False, chrome=chrome)


def _within(el: Any, root_ids: set[int], *, page_level: bool) -> bool:
    """Whether `el` is inside one of the roots and outside any chrome there (itself included)."""
    if is_chrome(el, page_level=page_level):
        return False
    for ancestor in el.parents:
        if id(ancestor) in root_ids:
            return True
        if is_chrome(ancestor, page_level=page_level):
            return False
    return False


# The title is one of a page's first headings; looking further costs time on hostile pages (each
# heading is checked up its ancestors) and finds nothing on real ones.
_TITLE_HEADINGS = 200


def extract(soup: Any) -> tuple[str, str]:
    """(title, main text) of a parsed page; the title is "" when the page names none."""
    title_tag = soup.head.find("title") if soup.head is not None else None
    if title_tag is None:
        title_tag = soup.find("title")
    head_title = " ".join(title_tag.get_text(" ").split()) if title_tag is not None else ""
    mains, articles, all_headings = _landmarks(soup)
    roots, landmarks = _main_roots(soup, mains, articles)
    page_level = not landmarks
    # The main content's headings first (not those in its chrome), then the rest of the page's.
    root_ids = {id(r) for r in roots}
    all_headings = all_headings[:_TITLE_HEADINGS]
    inside = [h for h in all_headings if _within(h, root_ids, page_level=page_level)]
    inside_ids = {id(h) for h in inside}
    headings = inside + [h for h in all_headings if id(h) not in inside_ids]
    title, used = html_title(head_title, [(tag_name(h), html_text(h)) for h in headings])
    skip = {id(headings[used])} if used is not None and id(headings[used]) in inside_ids else set()
    return title, _render(roots, skip, page_level=page_level)


def read_html_text(source: str) -> tuple[str, str, dict[str, Any]]:
    """(title, text, metadata) of an HTML page's source."""
    soup = parse(source)
    title, text = extract(soup)
    return title, text, html_metadata(soup)
