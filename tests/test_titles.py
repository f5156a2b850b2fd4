"""Titles from the sources that name a document, never from a comment or markup (issue 20, item 5).

Table-driven: each row is a file as a user has it and the title Quarry must give it; then the
rules one by one (`stores.file_formats.titles`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.file_formats.dispatch import read_file
from stores.file_formats.titles import html_title, junk_title, man_page_title, placeholder_title, rst_title, text_title

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
    (
        "multiline-comment.md",
        "<!--\n  generated file, do not edit\n-->\nReal Title\n===========\n\nbody\n",
        "Real Title",
    ),
    (
        "badges.md",
        "[![CI](https://x/badge.svg)](https://x/ci) ![PyPI](https://x/pypi.svg)\n\n# Fusion Toolkit\n\nbody\n",
        "Fusion Toolkit",
    ),
    (
        "centered.md",
        '<p align="center">\n  <img src="logo.png" width="200">\n</p>\n<h1 align="center">Pi-Serini</h1>\n\ntext\n',
        "Pi-Serini",
    ),
    ("closing-hashes.md", "## Installation ##\n\nrun it\n", "Installation"),
    (
        "rust-book.html",
        "<html><head><title>Running Code on Cleanup with the Drop Trait - The Rust Programming Language</title>"
        "</head><body><nav><h1 class='menu-title'>The Rust Programming Language</h1></nav><main><h2>Running Code on "
        "Cleanup with the <code>Drop</code> Trait</h2><p>Body.</p></main></body></html>",
        "Running Code on Cleanup with the Drop Trait",
    ),
    (
        "sphinx.html",
        "<title>Working With Safe Text &#8212; MarkupSafe Documentation (3.0.x)</title>"
        "<div role='main'><h1>Working With Safe Text<a class='headerlink' href='#w'>¶</a></h1><p>Body.</p></div>",
        "Working With Safe Text",
    ),
    (
        "blog.html",
        "<title>Help test Cargo's new index protocol | Inside Rust Blog</title><body><header><h2>Help test "
        "Cargo's new index protocol</h2></header><div class='post'><p>Body.</p></div></body>",
        "Help test Cargo's new index protocol",
    ),
    (
        "javadoc.html",
        "<title>Instrumentation (AppDynamics SDK for Connected Devices)</title><body><div class='header'>"
        "<h2>Class Instrumentation</h2></div><div class='block'>Body.</div></body>",
        "Instrumentation (AppDynamics SDK for Connected Devices)",
    ),
    (
        "h1-only.html",
        "<html><body><!-- a comment --><main><h1>Only a Heading</h1><p>Body.</p></main></body></html>",
        "Only a Heading",
    ),
    ("grep.1.txt", GREP_MAN, "grep - print lines that match patterns"),
    (
        "overstruck.txt",
        "LS(1)  User Commands  LS(1)\n\nN\bNA\bAM\bME\bE\n       ls - list directory contents\n",
        "ls - list directory contents",
    ),
    ("notes.txt", "<!-- exported -->\nMeeting notes\nbody\n", "Meeting notes"),
    ("cmake-compile-features.7.rst", CMAKE_RST, "cmake-compile-features(7)"),
    (
        "no-title.tex",
        "% !TEX program = pdflatex\n\\documentclass[11pt]{article}\n\\usepackage{amsmath}\n"
        "\\begin{document}\n\\section{Intro}\nFusion of rankings helps.\n\\end{document}\n",
        "Fusion of rankings helps.",
    ),
    (
        "titled.tex",
        "\\documentclass{article}\n\\title{Rank Fusion}\n\\begin{document}x\\end{document}\n",
        "Rank Fusion",
    ),
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
    assert (
        read_file(make_pdf(tmp_path / "a.pdf", text, title="Reciprocal Rank Fusion")).title == "Reciprocal Rank Fusion"
    )
    assert (
        read_file(make_pdf(tmp_path / "b.pdf", text, title="Microsoft Word - draft3.docx")).title
        == "First line of the page."
    )
    assert read_file(make_pdf(tmp_path / "c.pdf", text, title="Untitled")).title == "First line of the page."


@pytest.mark.parametrize(
    ("head", "headings", "title", "used"),
    [
        (
            "Running Code - The Rust Programming Language",
            [("h1", "The Rust Programming Language"), ("h2", "Running Code")],
            "Running Code",
            1,
        ),
        ("Introduction - Slack Machine", [("h1", "Introduction")], "Introduction", 0),
        ("Web Note", [("h1", "Web Note")], "Web Note", 0),
        ("Working With Safe Text — MarkupSafe", [("h1", "Working  With Safe Text")], "Working With Safe Text", 0),
        (
            "Instrumentation (AppDynamics SDK)",
            [("h2", "Class Instrumentation")],
            "Instrumentation (AppDynamics SDK)",
            None,
        ),
        ("Dense: A Study", [("h1", "Dense")], "Dense: A Study", None),  # a colon is part of a title, not a suffix
        ("", [("h2", "Section"), ("h1", "Page Heading")], "Page Heading", 1),
        ("", [("h2", "Only h2")], "", None),
    ],
)
def test_html_title_rule(head: str, headings: list[tuple[str, str]], title: str, used: int | None) -> None:
    assert html_title(head, headings) == (title, used)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("<!-- c -->\n# T\n", "T"),
        ("<!--\nmulti\nline\n-->\n\nT2\n", "T2"),
        ("<div align=center><img src=x></div>\n<h1>Name</h1>\n", "Name"),
        ("[![a](b)](c)\n\n# Badge Free\n", "Badge Free"),
        ("Title\n=====\nbody\n", "Title"),
        ("", ""),
        ("<!-- only a comment -->\n", ""),
    ],
)
def test_markdown_title_rule(text: str, title: str) -> None:
    assert text_title(text, "#")[0] == title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        (CMAKE_RST, "cmake-compile-features(7)"),
        (".. comment\n   continued comment line\n\nPlain First Line\n\nmore\n", "Plain First Line"),
        ("Short\n---\n", "Short"),
        (".. only a directive::\n", ""),
    ],
)
def test_rst_title_rule(text: str, title: str) -> None:
    assert rst_title(text)[0] == title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        (GREP_MAN, "grep - print lines that match patterns"),
        (
            "GIT-COMMIT(1)   Git Manual   GIT-COMMIT(1)\n\nNAME\n       git-commit - Record changes to the\n       repository\n\n",
            "git-commit - Record changes to the repository",
        ),
        ("GREP(1) is a man page\n\nNAME\n  x\n", None),  # not a man page header
        ("Just text\nNAME\n  x\n", None),
    ],
)
def test_man_page_rule(text: str, title: str | None) -> None:
    assert man_page_title(text) == title


@pytest.mark.parametrize(
    ("title", "placeholder"),
    [
        ("Untitled", True),
        ("Microsoft Word - paper.docx", True),
        ("main.tex", True),
        ("slides.pdf", True),
        ("Reciprocal Rank Fusion", False),
        ("A Study of .docx Files in the Wild", False),
    ],
)
def test_pdf_placeholder_titles(title: str, placeholder: bool) -> None:
    assert placeholder_title(title) is placeholder


@pytest.mark.parametrize(
    "line",
    [
        "![" * 50_000 + "](",
        "[![" * 30_000,
        "a" + " " * 200_000 + "x",
        "A(1) " + " " * 100_000 + "B",
        "# " + "#" * 100_000 + " x",
        "<a" * 100_000,
        " " * 200_000 + "x",
        "-*- " + " " * 200_000 + "-*-" + " " * 200_000 + "x",
        "| " + "-" * 100_000 + " |" + " " * 100_000 + "x",
        "|" * 200_000 + "x",
        ".. " + " " * 200_000 + "-*- x",
        "NAME\n" + " " * 200_000 + "x",
    ],
)
def test_title_rules_are_linear_on_hostile_lines(line: str) -> None:
    import time

    start = time.perf_counter()
    text_title(line, "#"), rst_title(line + "\n" + line), man_page_title(line + "\nNAME\n  x\n")
    junk_title(line), man_page_title(line), text_title(f"{line}\n|---|---|\n", "")
    assert time.perf_counter() - start < 2


# -- junk titles (walkthrough of 146 real documents, second round) ---------------------------------

READERS2 = Path(__file__).parent / "fixtures" / "readers2"


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("libsodium-README.markdown", "libsodium"),  # badges, then "![libsodium](logo.png)" over "============"
        ("wget/README", "GNU Wget"),  # "-*- text -*-" above the setext title
        (
            "numpy-ma-API_CHANGES.txt",
            "API changes in the new masked array implementation",
        ),  # ".. -*- rest -*-", over-line
        ("nnapi_supported_ops.md", "nnapi supported ops"),  # a comment and a table only: the file name
        ("gzip.1.txt", "gzip, gunzip, zcat - compress or expand files"),
    ],
)
def test_real_files_are_titled_by_their_real_title(name: str, title: str) -> None:
    from stores.file_formats.titles import junk_title

    doc = read_file(READERS2 / name)
    assert doc.title == title
    assert junk_title(doc.title) is None


def test_the_frame_of_a_text_title_leaves_the_text_and_the_mode_line_stays() -> None:
    doc = read_file(READERS2 / "numpy-ma-API_CHANGES.txt")
    assert doc.text.startswith(".. -*- rest -*-\n")  # every line but the title's stays searchable
    assert "=====" not in doc.text and "API changes in the new masked" not in doc.text
    assert "Masked arrays are subclasses of ndarray\n-----" in doc.text  # the next section keeps its underline
    sodium = read_file(READERS2 / "libsodium-README.markdown")
    assert "============" not in sodium.text and sodium.text.startswith("[![Build Status]")
    assert "Sodium is a new, easy-to-use software library" in sodium.text


@pytest.mark.parametrize(
    "title",
    [
        "============",
        "---",
        "* * *",
        "| Option | Default |",
        "|Operator|Note|",
        "|---|:---:|",
        ".. -*- rest -*-",
        "-*- coding: utf-8 -*-",
        "# -*- mode: python; coding: utf-8 -*-",
        "-*- outline -*-",
        "<!--",
        "<!-- markdownlint-disable -->",
        "#!/bin/sh",
        "#! /usr/bin/env python3",
        "[![Build Status](https://travis-ci.org/jedisct1/libsodium.svg?branch=master)](https://travis-ci.org/jedisct1/libsodium)",
        "![libsodium](https://raw.github.com/jedisct1/libsodium/master/logo.png)",
    ],
)
def test_junk_is_never_a_title(title: str) -> None:
    from stores.file_formats.titles import junk_title

    assert junk_title(title)


@pytest.mark.parametrize(
    "title", ["GNU Wget", "C++", "Using <T> in Rust", "A | B testing", "Q&A", "Über -*- nichts", "-*- not a mode line"]
)
def test_real_titles_are_not_junk(title: str) -> None:
    from stores.file_formats.titles import junk_title

    assert junk_title(title) is None


@pytest.mark.parametrize(
    ("text", "strip", "title"),
    [
        ("============\nReal Title\n============\n\nbody\n", "", "Real Title"),
        ("============\nReal Title\n============\n\nbody\n", "#", "Real Title"),
        ("| Option | Default |\n|--------|---------|\n| k1 | 0.9 |\n\n# BM25 settings\n", "#", "BM25 settings"),
        ("Option | Default\n--- | ---\nk1 | 0.9\n\nSettings for BM25\n", "#", "Settings for BM25"),
        ("-*- coding: utf-8 -*-\nNotes on fusion\nbody\n", "", "Notes on fusion"),
        ("                  -*- text -*-\nGNU Wget\n========\n", "", "GNU Wget"),
        ("[![CI](https://x/b.svg)](https://x)\n\n![Logo](logo.png)\n=====\n\nText.\n", "#", "Logo"),
        ("| a | b |\n|---|---|\n", "#", ""),
        ("=====\n-----\n", "", ""),
        (
            "#! /bin/sh\n# Guess values for system-dependent variables and create Makefiles.\n",
            "",
            "# Guess values for system-dependent variables and create Makefiles.",
        ),
    ],
)
def test_text_title_passes_over_junk_lines(text: str, strip: str, title: str) -> None:
    assert text_title(text, strip)[0] == title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        (".. -*- rest -*-\n\n+-----+-----+\n| a   | b   |\n+-----+-----+\n", ""),
        ("-*- coding: utf-8 -*-\nPlain first line\n", "Plain first line"),
    ],
)
def test_rst_title_passes_over_mode_lines_and_tables(text: str, title: str) -> None:
    assert rst_title(text)[0] == title


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("nnapi_supported_ops.md", "nnapi supported ops"),
        ("README", "README"),
        ("ChangeLog", "ChangeLog"),
        ("release-notes.html", "release notes"),
        ("v1.2-notes.txt", "v1.2 notes"),
        ("a - b.md", "a - b"),
    ],
)
def test_file_name_titles(name: str, title: str) -> None:
    from stores.file_formats.titles import file_name_title

    assert file_name_title(name) == title


@pytest.mark.parametrize(
    ("name", "content", "title"),
    [
        ("options.md", "| Option | Default |\n|---|---|\n| k1 | 0.9 |\n", "options"),
        ("rule.txt", "=============\n\n-------------\n", "rule"),
        ("release-notes.html", "<title>============</title><p>Fixed the ranking.</p>", "release notes"),
        ("mode.rst", ".. -*- rest -*-\n\n+-----+-----+\n| k1  | 0.9 |\n+-----+-----+\n", "mode"),
        ("html-comment.rst", "<!--\n", "html comment"),
    ],
)
def test_files_without_a_real_title_are_titled_by_their_name(
    tmp_path: Path, name: str, content: str, title: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    doc = read_file(path)
    assert doc.title == title


def test_a_junk_title_goes_back_to_the_text(tmp_path: Path) -> None:
    path = tmp_path / "release-notes.html"
    path.write_text("<title>| Option | Default |</title><p>Fixed the ranking.</p>", encoding="utf-8")
    doc = read_file(path)
    assert doc.title == "release notes" and doc.text == "| Option | Default |\n\nFixed the ranking."


def test_a_pdf_opening_with_a_junk_line_is_titled_by_its_name(tmp_path: Path) -> None:
    from tests.test_formats import make_pdf

    doc = read_file(make_pdf(tmp_path / "fusion_notes.pdf", ["==========\nReciprocal rank fusion works."]))
    assert doc.title == "fusion notes"
    assert doc.text.splitlines()[0] == "=========="  # the page offsets index the text as extracted


def test_man_page_title_with_and_without_its_header() -> None:
    page = (READERS2 / "gzip.1.txt").read_text(encoding="utf-8")
    assert page.startswith("GZIP(1)")
    assert man_page_title(page) == "gzip, gunzip, zcat - compress or expand files"
    headless = page.split("\n", 1)[1]
    assert man_page_title(headless) == "gzip, gunzip, zcat - compress or expand files"
    assert man_page_title("NAME\n       x\n") is None  # a bare NAME heading without "name - what it does"
    assert man_page_title("NAME: Jane\nAddress - here\n") is None


def test_a_myst_target_label_is_not_a_title(tmp_path) -> None:
    """pip's docs open each page with a MyST target, "(SSL Certificate Verification)=", above
    "# HTTPS Certificates": the label titled the page and was shown above every quote."""
    from stores.file_formats.dispatch import read_file
    from stores.file_formats.titles import junk_title

    page = tmp_path / "https-certificates.md"
    page.write_text(
        "(SSL Certificate Verification)=\n\n# HTTPS Certificates\n\n```{versionadded} 1.3\n\n```\n\n"
        "By default, pip will perform SSL certificate verification for network\nconnections it makes "
        "over HTTPS.\n",
        encoding="utf-8",
    )
    doc = read_file(page)
    assert doc.title == "HTTPS Certificates"
    assert "(SSL Certificate Verification)=" in doc.text  # the label's words stay searchable
    assert junk_title("(repeatability)=") and not junk_title("(Optional) Settings")
