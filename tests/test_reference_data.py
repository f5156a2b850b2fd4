"""Bibliographic data read from real-format files, with where each field came from, and folders
read as they come: man pages (plain and gzipped), gzipped documents, files that differ only by
their suffix. The fixtures are real formats written here (fpdf2 and pypdf for PDF Info and XMP,
roff, gzip), read through `read_corpus` as an ingest reads them."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from stores.file_formats.corpus_reader import read_corpus
from stores.records import DocRecord
from tests.test_formats import make_pdf

MAN_PAGE = r""".\" Man page for gp, as Debian ships it
.TH GP 1 "12 March 2018" "PARI/GP 2.11" "User Commands"
.SH NAME
gp \- the PARI calculator
.SH SYNOPSIS
.B gp
[\fB\-q\fR] [\fIfile\fR]
.SH DESCRIPTION
.B gp
is an interactive calculator for number theory: it factors integers and computes class groups.
.SH AUTHOR
Written by Karim Belabas and Bill Allombert.
"""

HTML_PAGE = """<html><head><title>Class groups in PARI</title>
<meta name="citation_title" content="Class groups in PARI">
<meta name="citation_author" content="Belabas, Karim">
<meta name="citation_author" content="Henri Cohen">
<meta name="citation_publication_date" content="2019/05/01">
<meta name="author" content="Webmaster">
<meta name="date" content="2001-01-01">
</head><body><h1>Class groups in PARI</h1><p>The bnfinit function computes class groups.</p></body></html>
"""

MARKDOWN = """---
title: Using printf
author: [Ann Lee, Bo Chan]
date: 2021-03-04
---
# Using printf

The printf command formats and prints its arguments.
"""


def pdf_with_metadata(path: Path, *, info: dict[str, str], xmp: bool) -> Path:
    """A one-page PDF with the given Info entries and, with `xmp`, an XMP packet that says
    dc:date 2016-05-01, xmp:CreateDate 2015-01-02 and dc:creator "The PARI Group"."""
    from pypdf import PdfWriter
    from pypdf.xmp import XmpInformation

    make_pdf(path, ["GP is an interactive calculator for number theory."], title="User's Guide to PARI/GP")
    writer = PdfWriter(clone_from=io.BytesIO(path.read_bytes()))
    writer.add_metadata(info)
    if xmp:
        packet = XmpInformation.create()
        packet.dc_creator = ["The PARI Group"]
        packet.dc_date = [dt.datetime(2016, 5, 1)]
        packet.xmp_create_date = dt.datetime(2015, 1, 2)
        writer.xmp_metadata = packet
    buf = io.BytesIO()
    writer.write(buf)
    path.write_bytes(buf.getvalue())
    return path


def _records(folder: Path) -> dict[str, DocRecord]:
    src = read_corpus(folder, home=folder.parent / "home")
    assert src.skipped == [] and src.unsupported == [], (src.skipped, src.unsupported)
    return {r.docid: r for r in src.records}


def test_pdf_year_and_authors_come_from_xmp_before_the_info_dictionary(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    info = {"/Author": "Karim Belabas", "/CreationDate": "D:20170314120000Z", "/ModDate": "D:20240101000000Z"}
    pdf_with_metadata(folder / "both.pdf", info=info, xmp=True)
    pdf_with_metadata(folder / "info.pdf", info=info, xmp=False)
    (folder / "packed.pdf.gz").write_bytes(
        gzip.compress(pdf_with_metadata(tmp_path / "packed.pdf", info=info, xmp=True).read_bytes())
    )
    recs = _records(folder)
    assert recs["packed"].extras["sources"] == recs["both"].extras["sources"]  # gzipped, read as the PDF it holds
    assert recs["packed"].text == recs["both"].text and recs["packed"].page_starts == recs["both"].page_starts
    both, only_info = recs["both"], recs["info"]
    assert (both.year, both.authors) == (2016, ("The PARI Group",))
    assert both.extras["date"] == "2016-05-01"
    assert both.extras["sources"] == {
        "year": "pdf:xmp:dc:date",
        "date": "pdf:xmp:dc:date",
        "authors": "pdf:xmp:dc:creator",
    }
    # Without XMP the Info dictionary gives them; ModDate (when the file was saved) never does.
    assert (only_info.year, only_info.authors) == (2017, ("Karim Belabas",))
    assert only_info.extras["sources"] == {
        "year": "pdf:info:CreationDate",
        "date": "pdf:info:CreationDate",
        "authors": "pdf:info:Author",
    }


def test_html_citation_tags_are_trusted_before_date_and_author_tags(tmp_path: Path) -> None:
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "classgroups.html").write_text(HTML_PAGE, encoding="utf-8")
    (folder / "plain.html").write_text(
        '<html><head><title>Release notes</title><meta name="DC.Date" content="2020-02-03">'
        '<meta name="Author" content="The Debian Project"></head><body><p>Notes.</p></body></html>',
        encoding="utf-8",
    )
    (folder / "blog.html").write_text(
        '<html><head><title>Post</title><meta property="article:published_time" content="2022-07-08T10:00:00Z">'
        '</head><body><p>Posted <time datetime="1999-01-01">long ago</time>.</p></body></html>',
        encoding="utf-8",
    )
    (folder / "timed.html").write_text(
        '<html><head><title>Changes</title></head><body><p>Released <time datetime="2018-11-12">'
        "in November</time>.</p></body></html>",
        encoding="utf-8",
    )
    recs = _records(folder)
    page = recs["classgroups"]
    assert (page.year, page.authors) == (2019, ("Belabas, Karim", "Henri Cohen"))
    assert page.extras["sources"]["year"] == "html:citation_publication_date"
    assert page.extras["sources"]["authors"] == "html:citation_author"
    plain = recs["plain"]
    assert (plain.year, plain.authors) == (2020, ("The Debian Project",))
    assert plain.extras["sources"] == {"year": "html:dc.date", "date": "html:dc.date", "authors": "html:author"}
    assert recs["blog"].year == 2022
    assert recs["blog"].extras["sources"]["year"] == "html:article:published_time"
    assert recs["timed"].year == 2018
    assert recs["timed"].extras["sources"]["year"] == "html:time[datetime]"


def test_man_pages_plain_and_gzipped_are_documents_with_their_th_date(tmp_path: Path) -> None:
    folder = tmp_path / "man"
    (folder / "man1").mkdir(parents=True)
    (folder / "man1" / "gp.1").write_text(MAN_PAGE, encoding="utf-8")
    gzipped = MAN_PAGE.replace("gp \\- the PARI calculator", "gphelp \\- the PARI help browser")
    gzipped = gzipped.replace('"12 March 2018"', '"2023-01-08"')
    (folder / "man1" / "gphelp.1.gz").write_bytes(gzip.compress(gzipped.encode()))
    recs = _records(folder)
    assert sorted(recs) == ["man1/gp.1", "man1/gphelp.1"]
    gp, gphelp = recs["man1/gp.1"], recs["man1/gphelp.1"]
    assert gp.title == "gp - the PARI calculator"
    assert "interactive calculator for number theory" in gp.text and ".SH" not in gp.text
    assert (gp.year, gp.extras["date"]) == (2018, "2018-03-12")
    assert gp.authors == ("Karim Belabas", "Bill Allombert")
    assert gp.extras["sources"] == {"year": "man:.TH", "date": "man:.TH", "authors": "man:AUTHOR"}
    assert (gphelp.title, gphelp.year) == ("gphelp - the PARI help browser", 2023)


# The shape of Tcl's man.macros, copied into every Tcl/Tk man page: pandoc's roff reader cannot parse
# the `.el \}\` inside the box macro and refused 121 of the 122 Tcl command pages of Debian's tcl8.6-doc.
TCL_PAGE = r""".TH after 3tcl 7.5 Tcl "Tcl Built-In Commands"
.de BS
.ie n \l'\\n(^lu\(ul'
.el \{\
.ie !\\n(^b-1 \{\
\h'-1.5n'\L'|\\n(^yu-1v'
.\}
.el \}\
\h'-1.5n'\L'|\\n(^yu-1v'
.\}
.\}
..
.BS
.SH NAME
after \- Execute a command after a time delay
.SH DESCRIPTION
Ms must be an integer giving a time in milliseconds.
A negative number is treated as 0.
"""


def test_a_man_page_whose_macro_definitions_pandoc_cannot_parse_is_read_without_them(tmp_path: Path) -> None:
    from stores.file_formats import manpages

    folder = tmp_path / "tcl"
    folder.mkdir()
    (folder / "after.3tcl.gz").write_bytes(gzip.compress(TCL_PAGE.encode()))
    with pytest.raises(manpages.Unreadable):  # the page as it is: pandoc refuses it
        manpages._render(TCL_PAGE, False)
    recs = _records(folder)
    page = recs["after.3tcl"]
    assert page.title == "after - Execute a command after a time delay"
    assert "A negative number is treated as 0." in page.text and ".de" not in page.text


def test_markdown_front_matter_and_rst_fields_say_where_year_and_authors_came_from(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "printf.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "guide.rst").write_text(
        "=====\nGuide\n=====\n\n:Authors: Ann Lee; Bo Chan\n:Date: 2015-06-07\n\nThe guide's text.\n", encoding="utf-8"
    )
    (folder / "undated.md").write_text("# Undated\n\nNo date here.\n", encoding="utf-8")
    os.utime(folder / "undated.md", (1_000_000_000, 1_000_000_000))  # 2001: a copy's time, never a date
    recs = _records(folder)
    md, rst = recs["printf"], recs["guide"]
    assert (md.year, md.authors) == (2021, ("Ann Lee", "Bo Chan"))
    assert md.extras["sources"] == {
        "year": "markdown:front-matter:date",
        "date": "markdown:front-matter:date",
        "authors": "markdown:front-matter:author",
    }
    assert (rst.year, rst.authors) == (2015, ("Ann Lee", "Bo Chan"))
    assert rst.extras["sources"] == {"year": "rst:field:date", "date": "rst:field:date", "authors": "rst:field:authors"}
    assert recs["undated"].year is None and "sources" not in recs["undated"].extras


def test_read_json_shows_where_the_year_came_from(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_with_metadata(
        folder / "guide.pdf", info={"/CreationDate": "D:20170314120000Z", "/Author": "The PARI Group"}, xmp=False
    )
    (folder / "classgroups.html").write_text(HTML_PAGE, encoding="utf-8")
    (folder / "gp.1").write_text(MAN_PAGE, encoding="utf-8")
    (folder / "printf.md").write_text(MARKDOWN, encoding="utf-8")
    home = tmp_path / "home"
    runner = CliRunner()
    ingest = runner.invoke(app, ["--home", str(home), "ingest", str(folder), "--name", "refs"])
    assert ingest.exit_code == 0, ingest.output
    expected = {
        "guide": (2017, "pdf:info:CreationDate"),
        "classgroups": (2019, "html:citation_publication_date"),
        "gp.1": (2018, "man:.TH"),
        "printf": (2021, "markdown:front-matter:date"),
    }
    for docid, (year, source) in expected.items():
        res = runner.invoke(app, ["--home", str(home), "read", "refs", docid, "--limit", "2", "--json"])
        assert res.exit_code == 0, res.output
        meta = json.loads(res.stdout.strip().splitlines()[-1])["metadata"]
        assert (meta["year"], meta["sources"]["year"]) == (year, source), docid
        assert meta["authors"] and meta["sources"]["authors"].split(":")[0] == source.split(":")[0], docid


def test_files_that_differ_only_by_their_suffix_are_both_kept(tmp_path: Path) -> None:
    folder = tmp_path / "doc"
    folder.mkdir()
    (folder / "manual.html").write_text(HTML_PAGE, encoding="utf-8")
    make_pdf(folder / "manual.pdf", ["The PDF edition of the manual."], title="PARI manual (PDF)")
    (folder / "intro.md").write_text("# Intro\n\nAlone: its id is unchanged.\n", encoding="utf-8")
    (folder / "guide.html.gz").write_bytes(gzip.compress(HTML_PAGE.encode()))
    for strict in (False, True):
        src = read_corpus(folder, strict=strict, home=tmp_path / "home")
        by_id = {r.docid: r for r in src.records}
        assert sorted(by_id) == ["guide", "intro", "manual.html", "manual.pdf"]
        assert by_id["manual.pdf"].title == "PARI manual (PDF)" and by_id["manual.html"].year == 2019
        assert by_id["guide"].authors == ("Belabas, Karim", "Henri Cohen")  # gzipped HTML, read as HTML
        assert src.skipped == [] and src.warnings == []


def test_a_gzip_bomb_a_damaged_gzip_and_a_man_page_pointer_are_skipped_with_reasons(tmp_path: Path) -> None:
    from stores.file_formats.gzipped import MAX_GUNZIPPED_BYTES

    folder = tmp_path / "doc"
    folder.mkdir()
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip container
    zeros = bytes(16 * 1024 * 1024)
    with (folder / "bomb.txt.gz").open("wb") as out:
        for _ in range(MAX_GUNZIPPED_BYTES // len(zeros) + 2):
            out.write(packer.compress(zeros))
        out.write(packer.flush())
    assert (folder / "bomb.txt.gz").stat().st_size < MAX_GUNZIPPED_BYTES // 500
    (folder / "broken.html.gz").write_bytes(b"\x1f\x8b\x08\x00 not a deflate stream")
    (folder / "zcat.1").write_text(".so man1/gzip.1\n", encoding="utf-8")
    (folder / "ok.md").write_text("# Fine\n\nRead.\n", encoding="utf-8")
    src = read_corpus(folder, home=tmp_path / "home")
    assert [r.docid for r in src.records] == ["ok"]
    reasons = dict(s.split(": ", 1) for s in src.skipped)
    assert reasons[str(folder / "bomb.txt.gz")].startswith(f"expands to more than {MAX_GUNZIPPED_BYTES:,} bytes")
    assert reasons[str(folder / "broken.html.gz")].startswith("not a valid gzip file")
    assert reasons[str(folder / "zcat.1")].startswith("a pointer to another man page (.so man1/gzip.1)")


def test_without_pandoc_a_man_page_is_skipped_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pypandoc

    def no_pandoc() -> str:
        raise OSError("No pandoc was found")

    monkeypatch.setattr(pypandoc, "get_pandoc_path", no_pandoc)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    folder = tmp_path / "doc"
    folder.mkdir()
    (folder / "gp.1").write_text(MAN_PAGE, encoding="utf-8")
    (folder / "ok.md").write_text("# Fine\n\nRead.\n", encoding="utf-8")
    src = read_corpus(folder, home=tmp_path / "home")
    assert [r.docid for r in src.records] == ["ok"]
    assert src.skipped == [
        f"{folder / 'gp.1'}: a man page, and pandoc (which reads roff) is not installed: pip install pypandoc-binary"
    ]


@pytest.mark.parametrize(
    ("section", "names"),
    [
        (["Written by Richard M. Stallman and David MacKenzie."], ["Richard M. Stallman", "David MacKenzie"]),
        (
            ["Written by David MacKenzie, Jim Meyering, and Paul Eggert."],
            ["David MacKenzie", "Jim Meyering", "Paul Eggert"],
        ),
        (
            ["This manual page was written by Christer Andersson <klamm@comhem.se> for the Debian project."],
            ["Christer Andersson"],
        ),
        (
            ["Eric S. Raymond <esr@snark.thyrsus.com> and", "Thomas E. Dickey <dickey@invisible-island.net>"],
            ["Eric S. Raymond", "Thomas E. Dickey"],
        ),
        (
            [
                "Josef Weidendorfer <Josef.Weidendorfer@gmx.de>.",
                "This manual page was written by Philipp Frauenfelder.",
            ],
            ["Josef Weidendorfer"],
        ),
        (
            ["Wilf. (G.Wilford@ee.surrey.ac.uk).", "Fabrizio Polacco (fpolacco@debian.org)."],
            [],
        ),  # not every part a name
        (["There are multiple hardlink implementations. The very first one is from Jakub Jelinek."], []),
    ],
)
def test_a_man_pages_author_section_gives_names_only_when_it_states_names(section: list[str], names: list[str]) -> None:
    """AUTHOR sections as Debian's man pages write them (coreutils, bash, ncurses, valgrind, man-db,
    util-linux): prose gives no names rather than wrong ones."""
    from stores.file_formats.manpages import author_names

    assert author_names(section) == names


def test_an_xhtml_manual_is_read_without_a_warning(tmp_path: Path) -> None:
    """XHTML manuals (libxslt's gtk-doc pages in /usr/share/doc) start with an XML declaration: such
    a page is read as the HTML browsers show, and nothing is printed about parsing XML as HTML."""
    import warnings

    folder = tmp_path / "doc"
    folder.mkdir()
    (folder / "index.html").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<html>\n<head>'
        '<title>APT User Guide</title><meta name="DC.Date" content="2021-08-01"/></head>'
        "<body><p>apt installs packages.</p>" + "<p>Its options are described below.</p>" * 20 + "</body></html>",
        encoding="utf-8",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec = _records(folder)["index"]
    assert (rec.title, rec.year) == ("APT User Guide", 2021) and rec.text.startswith("apt installs packages.")
