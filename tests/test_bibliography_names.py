"""The rules behind names and titles in exported references (quarry.exports.names and
quarry.exports.titles), table by table: which names are organisations, how a person's name
splits, what a title loses (markup, labels, broken hyphens) and which of its words keep their case."""

from __future__ import annotations

import pytest

from quarry.exports.names import Name, is_organisation, parse_name
from quarry.exports.titles import clean_title


@pytest.mark.parametrize(
    "name, organisation",
    [
        ("The PARI Group", True),  # "The …" and an organisation word
        ("Python Software Foundation", True),
        ("Free Software Foundation, Inc.", True),  # a comma does not make it a person
        ("The Rust Project Developers", True),
        ("GNOME Documentation Team", True),
        ("Debian Developers", True),
        ("Apache Software Foundation", True),
        ("W3C", True),  # digits
        ("Smith & Wesson", True),
        ("GNU", True),  # nameparser finds no first and last name
        ("Stanford University", True),
        ("Ludwig van der Rohe Jr.", False),
        ("Knuth, Donald E.", False),
        ("Sparck Jones, Karen", False),
        ("William H. Press", False),  # "Press" is no organisation word: a surname
        ("Guido van Rossum", False),
        ("Linus Torvalds", False),
    ],
)
def test_organisations(name: str, organisation: bool) -> None:
    assert is_organisation(name) is organisation


@pytest.mark.parametrize(
    "raw, parsed",
    [
        ("Ludwig van der Rohe Jr.", Name(family="Rohe", given="Ludwig", particle="van der", suffix="Jr.")),
        ("van der Rohe, Jr., Ludwig", Name(family="Rohe", given="Ludwig", particle="van der", suffix="Jr.")),
        ("Martin Luther King, Jr.", Name(family="King", given="Martin Luther", suffix="Jr.")),
        ("Jean-Paul de la Fontaine III", Name(family="Fontaine", given="Jean-Paul", particle="de la", suffix="III")),
        ("Knuth, Donald E.", Name(family="Knuth", given="Donald E.")),
        ("Sparck Jones, Karen", Name(family="Sparck Jones", given="Karen")),
        ("Linus Torvalds <torvalds@osdl.org>", Name(family="Torvalds", given="Linus")),  # a man page's AUTHORS line
        ("The PARI Group", Name(literal="The PARI Group")),
        ("  ", None),
    ],
)
def test_names_split_into_parts(raw: str, parsed: Name | None) -> None:
    assert parse_name(raw) == parsed


@pytest.mark.parametrize(
    "raw, text, protected",
    [
        ("printf - format and print data", "printf - format and print data", ("printf",)),  # a man page's NAME
        ("gzip, gunzip, zcat - compress or expand files", None, ("gzip", "gunzip", "zcat")),
        ("`printf` and ``ls``", "printf and ls", ("printf", "ls")),
        (":func:`os.path.join` explained", "os.path.join explained", ("os.path.join",)),
        ("**`printf`** in [`bash`](https://x/bash)", "printf in bash", ("printf", "bash")),
        (".. _tut-classes: Classes", "Classes", ()),
        ("# Using **SQLite** over HTTP/2 {#sqlite}", "Using SQLite over HTTP/2", ("SQLite", "HTTP/2")),
        ("[The *Rust* Book](https://doc.rust-lang.org/book/)", "The Rust Book", ()),
        ("Classes =======", "Classes", ()),
        ("`Link text <https://x>`_ and a reference_", "Link text and a reference", ()),
        ("Rust 1.75 <br> release notes", "Rust 1.75 release notes", ()),
        ("A lan\u2010 guage", "A language", ()),  # a PDF's hyphen at a line break
        ("Lan- guage and hy\u00adphen", "Language and hyphen", ()),  # and a soft hyphen
        ("Read-only and pre- and post-processing", "Read-only and pre- and post-processing", ()),
        ("os.path — Common pathname manipulations", None, ("os.path",)),
        ("std::vec::Vec, read_file() and x86", None, ("std::vec::Vec", "read_file()", "x86")),
        ("Time sharing systems for IBM 7090", None, ("IBM",)),
        ("grep", "grep", ("grep",)),  # a title that is one command
        ("pip check", "pip check", ("pip check",)),  # a short title all in lower case: a command
        ("gcloud sql users list - lists Cloud SQL users", None, ("gcloud sql users list", "SQL")),  # NAME line
        ("adduser in Debian", None, ("adduser",)),  # a first word in lower case is a name
        ("Reference Manual for libxslt", None, ("libxslt",)),  # title case: its lower-case word is a name
        ("Reporting bugs and getting help", None, ()),  # sentence case: nothing to protect
        ("WebAssembly System Interface (WASI)", None, ("WebAssembly", "WASI")),
        (
            "Algorithm::Diff - Compute `intelligent' differences",
            "Algorithm::Diff - Compute \u2018intelligent\u2019 differences",
            ("Algorithm::Diff",),
        ),
        ("__init__ and __strong words__", "__init__ and strong words", ("__init__",)),  # a dunder is no emphasis
        ("__ppc_set_ppr_med, __ppc_set_ppr_low - Set the Priority", None, ("__ppc_set_ppr_med", "__ppc_set_ppr_low")),
        ("The C++ Programming Language", None, ()),
    ],
)
def test_titles_are_cleaned_and_code_names_kept(raw: str, text: str | None, protected: tuple[str, ...]) -> None:
    title = clean_title(raw)
    assert title.text == (raw if text is None else text)
    assert title.protected == protected
