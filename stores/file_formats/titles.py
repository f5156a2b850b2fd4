"""Titles from the sources that name a document, before its first line.

A title is what a bibliography entry and a result line show, so a comment, a directive, a badge
or a man page's running header must never be one (".. cmake-manual-description: …",
"GREP(1) User Commands GREP(1)" and "<!--" were). Sources, by format:

- Markdown: front matter `title` (read in `stores.file_formats.dispatch`), else the first line that is text —
  HTML comments, markup-only lines (`<p align="center">`, `<img …>`) and badge-only lines are
  passed over; `<h1 align="center">Name</h1>` gives "Name"; a setext underline goes with it.
- reStructuredText: the first section title (a line under-, or over- and underlined, by one
  punctuation character), past `..` comments and directives with their indented blocks and
  leading field lists (":orphan:"). Hand-written, not docutils: docutils would have to know every
  Sphinx or CMake directive a file uses (it reports the rest as errors), and Quarry keeps the
  reStructuredText source as the text anyway; the title needs only the adornment rule.
- HTML: `html_title` — the page's heading when `<title>` is that heading plus a site name
  ("Running Code on Cleanup with the Drop Trait - The Rust Programming Language" → the heading),
  else `<title>`, else the first `<h1>`. The heading is preferred because the site suffix is the
  same on every page of a site and says nothing about this one; a `<title>` that is not a
  heading plus a suffix (Javadoc's "Instrumentation (AppDynamics SDK for Connected Devices)")
  is kept whole, as the author wrote it.
- Man pages saved as text ("GREP(1) User Commands GREP(1)" as first line, or the NAME section
  first when the header was cut off): the NAME section's line ("grep - print lines that match
  patterns").
- LaTeX: `\\title{…}`, else the first line of prose — never a `%` comment or a command line
  such as `\\documentclass{article}` (`stores.file_formats.text.read_latex`).
- PDF: the metadata title (`stores.file_formats.pdf`), unless it is a placeholder a tool wrote
  (`placeholder_title`: "untitled", "Microsoft Word - x.docx").
- Anything else: the first line that is text, as for Markdown.

Never a title, whatever the format (`junk_title`; the 146-document walkthrough found each one):
a punctuation-only line (the "============" over-line above libsodium's README title), a Markdown
table row ("| Option | Default |"), an Emacs mode line (".. -*- rest -*-", "-*- coding: utf-8 -*-"),
a script's "#!/bin/sh" line, an HTML comment ("<!--") and a badge-only line. Text-like files pass
over such lines (and a whole table) to the line an over/underline frames, or to a setext heading
made only of an image (its alt text: libsodium's "![libsodium](logo.png)" over "====="); when
nothing real names the document, `stores.file_formats.dispatch.read_file` titles it by its file name
(`file_name_title`: "nnapi_supported_ops.md" → "nnapi supported ops").
"""

from __future__ import annotations

import re

__all__ = [
    "file_name_title",
    "first_text_line",
    "html_title",
    "junk_title",
    "man_page_title",
    "placeholder_title",
    "rst_title",
    "text_title",
]

# What joins a page's heading to its site's name in `<title>`: "A - Site", "A — Site", "A | Site".
_SITE_SEPARATORS = (" - ", " – ", " — ", " | ", " · ", " :: ", " » ", " ‹ ", " › ")


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def html_title(head_title: str, headings: list[tuple[str, str]]) -> tuple[str, int | None]:
    """(title, index in `headings` of the heading it is, or None) from `<title>`'s text and the
    page's ("h1" | "h2", text) headings, the main content's first. See the module docstring."""
    head = " ".join(head_title.split())
    if head:
        wanted = _norm(head)
        for level in ("h1", "h2"):
            for n, (tag, text) in enumerate(headings):
                heading = _norm(text)
                if (
                    tag == level
                    and heading
                    and (wanted == heading or any(wanted.startswith(heading + sep) for sep in _SITE_SEPARATORS))
                ):
                    return " ".join(text.split()), n
        return head, None
    for n, (tag, text) in enumerate(headings):
        if tag == "h1" and text.strip():
            return " ".join(text.split()), n
    return "", None


_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<![A-Za-z][^<>]*>")
# Bracket and parenthesis classes exclude their own openers, so each match attempt stops at the
# next one: linear on a line of "![![![…".
_MD_IMAGE = re.compile(r"!\[[^\[\]]*\]\([^()]*\)|!\[[^\[\]]*\]\[[^\[\]]*\]")
_MD_EMPTY_LINK = re.compile(r"\[\s*\]\([^()]*\)|\[\s*\]\[[^\[\]]*\]")


# An Emacs file-variables line, alone on its line, behind any comment leader (".. -*- rest -*-",
# "# -*- coding: utf-8 -*-", "-*- outline -*-" in GnuPG's TODO, "-*- text -*-" in Wget's README).
_MODE_LINE = re.compile(r"^\s*(?:(?:\.\.|#+|%+|;+|//|/\*|<!--|\"|--)\s*)?-\*-[^\n]*?-\*-\s*(?:(?:\*/|-->)\s*)?$")
# A script's interpreter line ("#!/bin/sh" atop `configure`, an extension-less file read as text).
_SHEBANG = re.compile(r"^#!\s*/")
# A MyST (Sphinx Markdown) target line, "(ssl-certificate-verification)=": a label for the
# heading below it, not a title (pip's docs open every page with one).
_MYST_TARGET = re.compile(r"^\([^()\n]+\)=$")
# A Markdown table's delimiter row ("|---|:---:|", "--- | ---"). Neither pattern lets two
# whitespace runs meet, so a failing match on a long line is linear, not quadratic.
_TABLE_DELIMITER = re.compile(r"^\s*(?:\|\s*)?:?-+:?\s*(?:\|\s*:?-+:?\s*)+(?:\|\s*)?$")
# A Markdown image's alt text, for a setext heading made of an image.
_MD_IMAGE_ALT = re.compile(r"!\[([^\[\]]*)\]")


def table_row(line: str, following: str = "") -> bool:
    """A Markdown table row: between pipes ("| Option | Default |"), or any row over a
    delimiter row (tables without outer pipes)."""
    core = line.strip()
    if core.startswith("|") and core.count("|") >= 2:
        return True
    return "|" in core and bool(_TABLE_DELIMITER.match(following))


def table_delimiter(line: str) -> bool:
    """A Markdown table's delimiter row ("|---|:---:|", "--- | ---")."""
    return bool(_TABLE_DELIMITER.match(line))


def junk_title(title: str) -> str | None:
    """Why `title` cannot name a document (None: it can): punctuation only, a table row, an
    Emacs mode line, an HTML comment, or markup/badges without words. See the module docstring."""
    core = " ".join(title.split())
    if not core:
        return None  # no title at all is the caller's fallback, not a junk title
    if _MODE_LINE.match(core):
        return "an editor mode line"
    if _SHEBANG.match(core):
        return "a script's interpreter line"
    if _MYST_TARGET.match(core):
        return "a MyST target label"
    if core.startswith("<!--"):
        return "an HTML comment"
    if table_row(core) or _TABLE_DELIMITER.match(core):
        return "a table row"
    if not _line_text(core):
        return "markup or badges only"
    if not any(ch.isalnum() for ch in core):
        return "punctuation only"
    return None


_NAME_SEPARATORS = re.compile(r"[_\s]+|(?<=[^\W_])-(?=[^\W_])")


def file_name_title(name: str) -> str:
    """A title made of a file name, for a document nothing else names: without its suffix,
    "_" and word-joining "-" as spaces ("nnapi_supported_ops.md" → "nnapi supported ops";
    "README" stays "README")."""
    stem = name.rsplit("/", 1)[-1]
    if "." in stem.lstrip("."):
        stem = stem[: stem.rfind(".")] or stem
    return " ".join(_NAME_SEPARATORS.sub(" ", stem).split()) or stem


def _line_text(line: str) -> str:
    """A line's words with HTML tags, comments and Markdown images taken out."""
    text = _COMMENT.sub(" ", line)
    text = _TAG.sub(" ", text)
    text = _MD_EMPTY_LINK.sub(" ", _MD_IMAGE.sub(" ", text))
    return " ".join(text.split())


def _skipped_line(lines: list[str], n: int, text: str) -> bool:
    """Whether line `n` (whose words are `text`) is passed over when looking for a title: a mode
    line, an interpreter line ("#!/bin/sh"), a MyST target label or a punctuation-only line (an adornment, a rule).
    Table rows: `first_text_line`."""
    return (
        bool(_MODE_LINE.match(lines[n]))
        or bool(_SHEBANG.match(lines[n]))
        or bool(_MYST_TARGET.match(lines[n].strip()))
        or not any(ch.isalnum() for ch in text)
    )


def _starts_table(lines: list[str], n: int) -> bool:
    """Whether line `n` is a Markdown table row (see `table_row`) or delimiter row."""
    following = lines[n + 1] if n + 1 < len(lines) else ""
    return table_row(lines[n], following) or bool(_TABLE_DELIMITER.match(lines[n]))


def _image_heading(lines: list[str], n: int) -> str:
    """The alt text of line `n` when it is a setext heading made only of images
    ("![libsodium](logo.png)" over "====="), else ""."""
    following = lines[n + 1] if n + 1 < len(lines) else ""
    if not _SETEXT.match(following) or _line_text(lines[n]):
        return ""
    return " ".join(" ".join(_MD_IMAGE_ALT.findall(lines[n])).split())


def first_text_line(lines: list[str]) -> tuple[int, str] | None:
    """(index, title text) of the first line that says something: past blank lines, HTML comments
    (also over several lines), markup-only and badge-only lines, mode lines, punctuation-only
    lines and tables (a table is content, not its document's name: from a row that `_starts_table`
    to the next blank line, every line with a "|"). A setext heading made of an image gives its
    alt text. None when there is none."""
    in_comment = in_table = False
    for n, line in enumerate(lines):
        if not line.strip():
            in_table = False
        elif not in_comment and ((in_table and "|" in line) or _starts_table(lines, n)):
            in_table = True
            continue
        if in_comment:
            if "-->" not in line:
                continue
            in_comment = False
            line = line.split("-->", 1)[1]
        if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
            in_comment = True
            line = line.split("<!--", 1)[0]
        text = _line_text(line)
        if not text:
            alt = _image_heading(lines, n) if "![" in line else ""
            if alt:
                return n, alt
            continue
        if not _skipped_line(lines, n, text):
            return n, text
    return None


_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def text_title(text: str, strip: str = "") -> tuple[str, str]:
    """(title, the rest of the text) for a text-like file: the first line that is text (see
    `first_text_line`) without the `strip` characters (Markdown's "#") and the adornment rows
    framing it (a setext underline, a reStructuredText-style over- and underline in a .txt) leave
    the text; lines before it (a comment, a badge row) stay in it, every word searchable."""
    lines = text.splitlines()
    found = first_text_line(lines)
    if found is None:
        return "", text.strip()
    n, title = found
    rest = lines[n + 1 :]
    before = lines[:n]
    under = _SETEXT.match(rest[0]) or _ADORNMENT.match(rest[0]) if rest else None
    if under:
        rest = rest[1:]
        over = before[-1] if before else ""
        if _ADORNMENT.match(over) and over.strip()[0] == under.group(1)[0]:
            before = before[:-1]
    raw = lines[n].strip()
    if not (raw.startswith("<") or "<!--" in raw or "-->" in raw or "![" in raw):
        title = raw  # no markup taken out: the line as written ("Using <T> in Rust" in a .txt)
    if strip:
        title = title.lstrip(strip).strip()
        core = title.rstrip("#")
        if core != title and (not core or core[-1].isspace()):
            title = core.rstrip()  # and a closing "##" of an ATX heading
    return title, "\n".join([*before, *rest]).strip()


# -- reStructuredText ----------------------------------------------------------------------------

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_EXPLICIT = re.compile(r"^\.\.(?:\s|$)")
_FIELD = re.compile(r"^:[\w][\w -]*:(?:\s|$)")


def _rst_skippable(lines: list[str]) -> list[bool]:
    """Per line: blank, an adornment row, or part of a `..` comment or directive (with its
    indented block), or a leading field (":orphan:")."""
    out: list[bool] = []
    in_block = False
    for line in lines:
        if not line.strip():
            out.append(True)
            continue
        if in_block and line[:1].isspace():
            out.append(True)
            continue
        in_block = bool(_EXPLICIT.match(line))
        out.append(
            in_block
            or bool(_ADORNMENT.match(line))
            or bool(_FIELD.match(line))
            or bool(_MODE_LINE.match(line))
            or table_row(line)
            or not any(ch.isalnum() for ch in line)
        )
    return out


def rst_title(text: str) -> tuple[str, str]:
    """(title, rest of the text) of a reStructuredText source: the first section title, its
    adornment rows dropped; the lines before it (comments, directives) stay in the text. Without
    a section title, the first line that is not markup."""
    lines = text.splitlines()
    skippable = _rst_skippable(lines)
    fallback = None
    for n, line in enumerate(lines):
        if skippable[n]:
            continue
        fallback = n if fallback is None else fallback
        under = lines[n + 1] if n + 1 < len(lines) else ""
        over = lines[n - 1] if n > 0 else ""
        m = _ADORNMENT.match(under)
        if m and len(under.strip()) >= min(len(line.strip()), 3):
            drop = {n, n + 1}
            if _ADORNMENT.match(over) and over.strip()[0] == m.group(1):
                drop.add(n - 1)
            rest = [ln for i, ln in enumerate(lines) if i not in drop]
            return line.strip(), "\n".join(rest).strip()
    if fallback is None:
        return "", text.strip()
    rest = lines[:fallback] + lines[fallback + 1 :]
    return lines[fallback].strip(), "\n".join(rest).strip()


# -- man pages -----------------------------------------------------------------------------------

_OVERSTRIKE = re.compile(r".\x08")
_MAN_HEADER = re.compile(r"^\s*([\w.:+\-\[\]]+)\((\d\w*)\)\s+(?:.*\s)?\1\(\2\)\s*$")
_MAN_SECTION = re.compile(r"^[A-Z][A-Z0-9 /&-]*$")


_MAN_NAME_HEADINGS = ("NAME", "Name", "NOM", "NOMBRE")
# A NAME line says "name[, name…] - what it does" (groff renders "\-" as "-", some pages "—").
_MAN_NAME_LINE = re.compile(r"\S\s+[-\u2010\u2013\u2014]\s+\S")


def man_name_line(line: str, previous: str) -> bool:
    """Whether `line` is a man page's NAME line ("gzip, gunzip, zcat - compress or expand files"):
    "name - what it does" right under the NAME heading (`previous`). The title of the page, which
    `man_page_title` takes and the evidence rules (`nodes.evidence.quotable`) never quote."""
    return previous.strip() in _MAN_NAME_HEADINGS and bool(_MAN_NAME_LINE.search(line))


def man_page_title(text: str) -> str | None:
    """The NAME line of a man page saved as text ("grep - print lines that match patterns"), or
    None when `text` does not open like one: its running header ("GREP(1) User Commands GREP(1)"),
    or, when the header was cut off, its NAME section heading with a "name - what it does" line
    under it (a bare "NAME" opening a note is not enough)."""
    lines = _OVERSTRIKE.sub("", text).splitlines()
    first_at = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first_at is None:
        return None
    first = lines[first_at]
    if len(first) <= 200 and _MAN_HEADER.match(first):  # a header line is short; a long one is not one
        try:
            at = next(n for n, line in enumerate(lines) if line.strip() in _MAN_NAME_HEADINGS)
        except StopIteration:
            return None
    elif first.rstrip() in _MAN_NAME_HEADINGS:
        at = first_at
        following = next((line for line in lines[at + 1 :] if line.strip()), "")
        if not (following[:1].isspace() and _MAN_NAME_LINE.search(following)):
            return None
    else:
        return None
    name: list[str] = []
    for line in lines[at + 1 :]:
        if not line.strip():
            if name:
                break
            continue
        if _MAN_SECTION.match(line.rstrip()) and not line[:1].isspace():
            break
        name.append(line.strip())
    return " ".join(" ".join(name).split()) or None


# -- PDF -----------------------------------------------------------------------------------------

_PLACEHOLDERS = {"untitled", "microsoft word", "title", "no title", "document", "slide 1", "layout 1"}


def placeholder_title(title: str) -> bool:
    """Whether a file's metadata title is what a tool writes when the author gave none
    ("Untitled", "Microsoft Word - draft.docx", "paper.pdf")."""
    low = " ".join(title.split()).lower()
    return (
        low in _PLACEHOLDERS
        or low.startswith("microsoft word - ")
        or low.endswith((".doc", ".docx", ".pdf", ".tex", ".dvi", ".odt", ".rtf", ".indd", ".ps"))
    )
