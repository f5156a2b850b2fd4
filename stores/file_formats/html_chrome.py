"""Which parts of an HTML page are page chrome (navigation, menus, sidebars, hidden elements,
page headers and footers, node navigation bars) and so never text of the document.

Its own module because these rules are judged on their own (tests/fixtures/html, docs/eval/html.md)
and grow with every documentation generator met, apart from the writer that turns the kept
tree into text (`stores.file_formats.html`, which also picks the main content: `<main>`, else the
`<article>`s, else `<body>`).

Inside the main content, chrome goes: navigation, asides, forms' controls, menus, popups and
sidebars by tag, ARIA role or class/id token (`CHROME_ROLES`, `_CHROME_PARTS`), hidden elements,
Sphinx/MkDocs heading permalinks ("¶"). A page-level `<header>`/`<footer>` goes too (one
inside the main content is the article's own heading and stays; its footer goes). So does a
node navigation block, whatever its class (`_navigation_block`): makeinfo writes "Next: Foo,
Previous: Bar, Up: Top [Contents][Index]" above every node of a texinfo manual (and older
versions below it too), in a plain `<div class="header"><p>` (6.x) or `<div class="nav-panel">`
(7.x); the walkthrough found it indexed on every page of GNU manuals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

__all__ = ["CHROME_ROLES", "NAV_LINK_WORDS", "NAV_MAX_CHILDREN", "is_chrome", "never_text", "tag_name"]

# Never text of the page, wherever they are.
_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "meta",
        "link",
        "base",
        "nav",
        "aside",
        "button",
        "select",
        "option",
        "optgroup",
        "datalist",
        "input",
        "textarea",
        "svg",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "canvas",
        "audio",
        "video",
        "source",
        "track",
        "img",
        "picture",
        "map",
        "area",
        "menu",
        "dialog",
    }
)
CHROME_ROLES = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "search",
        "menu",
        "menubar",
        "toolbar",
        "complementary",
        "dialog",
        "alertdialog",
        "tablist",
        "tooltip",
    }
)
# Class or id tokens naming page chrome: navigation bars and lists, sidebars, menus, breadcrumbs,
# tables of contents, popups, skip links, heading permalinks. A token is chrome when one of its
# "-"/"_"-separated parts is one of these words ("md-sidebar--primary", "topNav", "nav-wrapper"), or
# two neighbouring parts are ("theme-popup"), so a word inside a longer name does not count
# ("navigator", "tocsin", "shared-memory"). Parts, not a regular expression: linear in the token.
_CHROME_PARTS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "navlist",
        "topnav",
        "subnav",
        "bottomnav",
        "skipnav",
        "sidebar",
        "sphinxsidebar",
        "sphinxsidebarwrapper",
        "sidebarwrapper",
        "menu",
        "menubar",
        "breadcrumb",
        "breadcrumbs",
        "toc",
        "headerlink",
        "skip",
        "skiplink",
        "cookies",
        "share",
        "social",
    }
)
_CHROME_PAIRS = frozenset({"theme-popup", "cookie-banner", "related-posts", "skip-link", "menu-bar"})
_PART_SPLIT = re.compile(r"[-_]+")

# A navigation block (`_navigation_block`): only links, and between them only these labels (with
# their colon) and punctuation ("Next: <a>Foo</a>, Previous: <a>Bar</a>, Up: <a>Top</a> &nbsp; [<a>Contents</a>]
# [<a>Index</a>]"). Checked on blocks of at most NAV_MAX_CHILDREN children: linear on any page.
_NAV_LABEL = re.compile(r"\b(?:Next|Previous|Prev|Up|Forward|Back)[ \t\u00a0]*:", re.IGNORECASE)
# Links that navigate whatever labels surround them: makeinfo's "[Contents][Index]", and texi2html's
# button bar ("[ < ]", "[ > ]", "[ << ]", "[ Up ]", "[ >> ]", "[Top]", "[ ? ]" for "About").
NAV_LINK_WORDS = frozenset({"contents", "index", "top", "up", "about", "<", ">", "<<", ">>", "?"})
NAV_MAX_CHILDREN = 40
_NAV_BLOCK_TAGS = frozenset({"p", "div", "td", "th", "tr", "table", "span"})
_NAV_PUNCTUATION = re.compile(r"^[\s\u00a0,;|\[\]()<>«»]*$")


def _chrome_token(token: str) -> bool:
    if len(token) > 200:
        return False
    parts = _PART_SPLIT.split(token)
    return any(part in _CHROME_PARTS for part in parts) or any(f"{a}-{b}" in _CHROME_PAIRS for a, b in pairwise(parts))


# Hidden by a stylesheet, exactly these names ("hidden-xs" is hidden only on a phone: it stays).
_HIDDEN_TOKENS = frozenset({"hidden", "d-none", "is-hidden", "hide", "visually-hidden", "sr-only"})


def tag_name(el: Any) -> str:
    from bs4 import Tag

    return el.name.lower() if isinstance(el, Tag) and el.name else ""


def _tokens(el: Any) -> Iterable[str]:
    for name in ("class", "id"):
        value = el.get(name)
        if isinstance(value, str):
            value = value.split()
        for token in value or ():
            yield token.lower()


def _short_text(el: Any, limit: int = 20) -> str | None:
    """The text of `el` when it has at most `limit` nodes (a link's few words), else None."""
    from bs4 import NavigableString

    parts = []
    for n, node in enumerate(el.descendants):
        if n >= limit:
            return None
        if type(node) is NavigableString:
            parts.append(str(node))
    return " ".join(" ".join(parts).split())


def _navigation_block(el: Any) -> bool:
    """Whether the block `el` holds nothing but node navigation (see `_NAV_LABEL`): its children are
    links and text made of the labels and punctuation, with at least one link, and a label before
    the links or every link being "Contents"/"Index"/"Top". Direct children only (and a link's
    first few nodes), so a block with prose inside is never one and the check is linear."""
    from bs4 import NavigableString, Tag

    if tag_name(el) not in _NAV_BLOCK_TAGS or len(el.contents) > NAV_MAX_CHILDREN:
        return False
    labels = 0
    anchors = []
    for child in el.contents:
        if isinstance(child, Tag):
            name = tag_name(child)
            if name == "a":
                anchors.append(child)
            elif name != "br":
                return False
        elif type(child) is NavigableString:  # a comment is not text of the block
            text, found = _NAV_LABEL.subn(" ", str(child))
            if not _NAV_PUNCTUATION.match(text):
                return False
            labels += found
    if not anchors:
        return False
    if labels:
        return True
    texts = [_short_text(a) for a in anchors]
    if None in texts:  # a link of many nodes holds prose, not a navigation label
        return False
    words = [
        t.lower() for t in texts if t is not None and t != ""
    ]  # an anchor without text (`<a name="x">`) is no link
    return bool(words) and all(t in NAV_LINK_WORDS for t in words)


def is_chrome(el: Any, *, page_level: bool) -> bool:
    """Whether the tag `el` is page chrome (see the module docstring); `page_level`: a `<header>`
    counts too (outside an article's own main content)."""
    tag = tag_name(el)
    if tag in _DROP_TAGS or (page_level and tag == "header") or tag == "footer":
        return True
    if el.has_attr("hidden") or str(el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if str(el.get("role") or "").strip().lower() in CHROME_ROLES:
        return True
    if _navigation_block(el):
        return True
    style = str(el.get("style") or "").replace(" ", "").lower()
    if "display:none" in style or "visibility:hidden" in style:
        return True
    return any(token in _HIDDEN_TOKENS or _chrome_token(token) for token in _tokens(el))


def never_text(el: Any, *, page_level: bool) -> bool:
    return tag_name(el) in {"script", "style", "noscript", "template", "head", "title", "svg"}
