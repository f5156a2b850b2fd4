"""Titles from the sources that name a document, never from a comment or markup (issue 20, item 5).

Table-driven: each row is a file as a user has it and the title Quarry must give it; then the
rules one by one (`stores.titles`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from stores.formats import read_file
from stores.titles import html_title, man_page_title, placeholder_title, rst_title, text_title

GREP_MAN = """GREP(1)                          User Commands                         GREP(1)

NAME
       grep - print lines that match patterns

SYNOPSIS
       grep [OPTION...] PATTERNS [FILE...]

DESCRIPTION
       grep searches for PATTERNS in each FILE.
"""

CMAKE_RST = """.. cmake-manual-description: CMake Compile Features Reference

cmake-compile-features(7)
*************************

.. only:: html

   .. contents::

Introduction
============

Project source code may depend on, or be conditional on, the availability of certain features.
"""

FILES = [
    # (file name, content, title)
    ("front.md", "---\ntitle: Dense Retrieval Notes\n---\n# Another heading\nbody\n", "Dense Retrieval Notes"),
    ("comment.md", "<!-- markdownlint-disable MD041 -->\n\n# Quarry\n\nA search engine.\n", "Quarry"),
    ("multiline-comment.md", "<!--\n  generated file, do not edit\n-->\nReal Title\n===========\n\nbody\n", "Real Title"),
    ("badges.md", "[![CI](https://x/badge.svg)](https://x/ci) ![PyPI](https://x/pypi.svg)\n\n# Fusion Toolkit\n\nbody\n",
     "Fusion Toolkit"),
    ("centered.md", '<p align="center">\n  <img src="logo.png" width="200">\n</p>\n<h1 align="center">Pi-Serini</h1>\n\ntext\n',
     "Pi-Serini"),
    ("closing-hashes.md", "## Installation ##\n\nrun it\n", "Installation"),
    ("rust-book.html", "<html><head><title>Running Code on Cleanup with the Drop Trait - The Rust Programming Language</title>"
     "</head><body><nav><h1 class='menu-title'>The Rust Programming Language</h1></nav><main><h2>Running Code on "
     "Cleanup with the <code>Drop</code> Trait</h2><p>Body.</p></main></body></html>",
     "Running Code on Cleanup with the Drop Trait"),
    ("sphinx.html", "<title>Working With Safe Text &#8212; MarkupSafe Documentation (3.0.x)</title>"
     "<div role='main'><h1>Working With Safe Text<a class='headerlink' href='#w'>¶</a></h1><p>Body.</p></div>",
     "Working With Safe Text"),
    ("blog.html", "<title>Help test Cargo's new index protocol | Inside Rust Blog</title><body><header><h2>Help test "
     "Cargo's new index protocol</h2></header><div class='post'><p>Body.</p></div></body>",
     "Help test Cargo's new index protocol"),
    ("javadoc.html", "<title>Instrumentation (AppDynamics SDK for Connected Devices)</title><body><div class='header'>"
     "<h2>Class Instrumentation</h2></div><div class='block'>Body.</div></body>",
     "Instrumentation (AppDynamics SDK for Connected Devices)"),
    ("h1-only.html", "<html><body><!-- a comment --><main><h1>Only a Heading</h1><p>Body.</p></main></body></html>",
     "Only a Heading"),
    ("grep.1.txt", GREP_MAN, "grep - print lines that match patterns"),
    ("overstruck.txt", "LS(1)  User Commands  LS(1)\n\nN\bNA\bAM\bME\bE\n       ls - list directory contents\n",
     "ls - list directory contents"),
    ("notes.txt", "<!-- exported -->\nMeeting notes\nbody\n", "Meeting notes"),
    ("cmake-compile-features.7.rst", CMAKE_RST, "cmake-compile-features(7)"),
    ("no-title.tex", "% !TEX program = pdflatex\n\\documentclass[11pt]{article}\n\\usepackage{amsmath}\n"
     "\\begin{document}\n\\section{Intro}\nFusion of rankings helps.\n\\end{document}\n", "Fusion of rankings helps."),
    ("titled.tex", "\\documentclass{article}\n\\title{Rank Fusion}\n\\begin{document}x\\end{document}\n", "Rank Fusion"),
    ("overline.rst", ":orphan:\n\n.. _label:\n\n=========\n Overview\n=========\n\nText.\n", "Overview"),
]


@pytest.mark.parametrize(("name", "content", "title"), FILES, ids=[row[0] for row in FILES])
def test_each_title_source(tmp_path: Path, name: str, content: str, title: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    doc = read_file(path)
    assert doc.title == title
    assert not doc.title.startswith(("<", "..", "[!", "![", "%", "\\"))


def test_the_title_line_leaves_the_text_and_nothing_else_does(tmp_path: Path) -> None:
    (tmp_path / "c.rst").write_text(CMAKE_RST, encoding="utf-8")
    doc = read_file(tmp_path / "c.rst")
    assert doc.text.startswith(".. cmake-manual-description: CMake Compile Features Reference")  # still searchable
    assert "*****" not in doc.text and "cmake-compile-features(7)" not in doc.text
    assert "Introduction\n============" in doc.text
    (tmp_path / "g.txt").write_text(GREP_MAN, encoding="utf-8")
    assert read_file(tmp_path / "g.txt").text == GREP_MAN.strip()  # a man page keeps every line
    (tmp_path / "m.md").write_text("<!-- note -->\n# Title\n\nbody\n", encoding="utf-8")
    assert read_file(tmp_path / "m.md").text == "<!-- note -->\n\nbody"


def test_pdf_metadata_title_and_placeholders(tmp_path: Path) -> None:
    from tests.test_formats import make_pdf

    text = ["First line of the page.\nSecond line."]
    assert read_file(make_pdf(tmp_path / "a.pdf", text, title="Reciprocal Rank Fusion")).title == "Reciprocal Rank Fusion"
    assert read_file(make_pdf(tmp_path / "b.pdf", text, title="Microsoft Word - draft3.docx")).title == "First line of the page."
    assert read_file(make_pdf(tmp_path / "c.pdf", text, title="Untitled")).title == "First line of the page."


@pytest.mark.parametrize(("head", "headings", "title", "used"), [
    ("Running Code - The Rust Programming Language", [("h1", "The Rust Programming Language"), ("h2", "Running Code")],
     "Running Code", 1),
    ("Introduction - Slack Machine", [("h1", "Introduction")], "Introduction", 0),
    ("Web Note", [("h1", "Web Note")], "Web Note", 0),
    ("Working With Safe Text — MarkupSafe", [("h1", "Working  With Safe Text")], "Working With Safe Text", 0),
    ("Instrumentation (AppDynamics SDK)", [("h2", "Class Instrumentation")], "Instrumentation (AppDynamics SDK)", None),
    ("Dense: A Study", [("h1", "Dense")], "Dense: A Study", None),  # a colon is part of a title, not a suffix
    ("", [("h2", "Section"), ("h1", "Page Heading")], "Page Heading", 1),
    ("", [("h2", "Only h2")], "", None),
])
def test_html_title_rule(head: str, headings: list[tuple[str, str]], title: str, used: int | None) -> None:
    assert html_title(head, headings) == (title, used)


@pytest.mark.parametrize(("text", "title"), [
    ("<!-- c -->\n# T\n", "T"),
    ("<!--\nmulti\nline\n-->\n\nT2\n", "T2"),
    ("<div align=center><img src=x></div>\n<h1>Name</h1>\n", "Name"),
    ("[![a](b)](c)\n\n# Badge Free\n", "Badge Free"),
    ("Title\n=====\nbody\n", "Title"),
    ("", ""),
    ("<!-- only a comment -->\n", ""),
])
def test_markdown_title_rule(text: str, title: str) -> None:
    assert text_title(text, "#")[0] == title


@pytest.mark.parametrize(("text", "title"), [
    (CMAKE_RST, "cmake-compile-features(7)"),
    (".. comment\n   continued comment line\n\nPlain First Line\n\nmore\n", "Plain First Line"),
    ("Short\n---\n", "Short"),
    (".. only a directive::\n", ""),
])
def test_rst_title_rule(text: str, title: str) -> None:
    assert rst_title(text)[0] == title


@pytest.mark.parametrize(("text", "title"), [
    (GREP_MAN, "grep - print lines that match patterns"),
    ("GIT-COMMIT(1)   Git Manual   GIT-COMMIT(1)\n\nNAME\n       git-commit - Record changes to the\n       repository\n\n",
     "git-commit - Record changes to the repository"),
    ("GREP(1) is a man page\n\nNAME\n  x\n", None),       # not a man page header
    ("Just text\nNAME\n  x\n", None),
])
def test_man_page_rule(text: str, title: str | None) -> None:
    assert man_page_title(text) == title


@pytest.mark.parametrize(("title", "placeholder"), [
    ("Untitled", True), ("Microsoft Word - paper.docx", True), ("main.tex", True), ("slides.pdf", True),
    ("Reciprocal Rank Fusion", False), ("A Study of .docx Files in the Wild", False),
])
def test_pdf_placeholder_titles(title: str, placeholder: bool) -> None:
    assert placeholder_title(title) is placeholder


@pytest.mark.parametrize("line", ["![" * 50_000 + "](", "[![" * 30_000, "a" + " " * 200_000 + "x",
                                  "A(1) " + " " * 100_000 + "B", "# " + "#" * 100_000 + " x", "<a" * 100_000])
def test_title_rules_are_linear_on_hostile_lines(line: str) -> None:
    import time

    start = time.perf_counter()
    text_title(line, "#"), rst_title(line + "\n" + line), man_page_title(line + "\nNAME\n  x\n")
    assert time.perf_counter() - start < 2
