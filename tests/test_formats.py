"""Document formats: one test per format (fixtures built here), pages of a PDF, single files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stores.errors import IngestError, QuarryError
from stores.file_formats.corpus_reader import read_corpus
from stores.file_formats.file_document import Unreadable
from stores.file_formats.text_files import decode
from stores.records import DocRecord, document_lines, line_pages, page_of_line


def make_pdf(path: Path, pages: list[str], *, title: str = "", author: str = "", password: str = "") -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    if title:
        pdf.set_title(title)
    if author:
        pdf.set_author(author)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    data = bytes(pdf.output())
    if password:
        from pypdf import PdfWriter

        writer = PdfWriter(clone_from=io.BytesIO(data))
        writer.encrypt(password, algorithm="RC4-128")
        buf = io.BytesIO()
        writer.write(buf)
        data = buf.getvalue()
    path.write_bytes(data)
    return path


def one(path: Path) -> DocRecord:
    src = read_corpus(path)
    assert src.skipped == [] and len(src.records) == 1, src.skipped
    return next(iter(src.records))


PAGE_TEXT = [
    "Lexical retrieval with BM25 over scanned proceedings. " * 4,
    "",  # an empty page keeps its number
    "Dense retrieval with zeppelin embeddings on the third page. " * 4,
]


def test_pdf_text_metadata_and_pages(tmp_path: Path) -> None:
    rec = one(make_pdf(tmp_path / "paper.pdf", PAGE_TEXT, title="Paged Retrieval", author="Ann Lee; Bo Chan"))
    assert (rec.docid, rec.title, rec.authors) == ("paper", "Paged Retrieval", ("Ann Lee", "Bo Chan"))
    assert "BM25" in rec.text and "zeppelin" in rec.text
    assert rec.extras["page_count"] == 3
    assert len(rec.page_starts) == 3
    lines = document_lines(rec)
    pages = line_pages(rec)
    assert len(pages) == len(lines)
    assert not any(p == 2 and line.strip() for p, line in zip(pages, lines, strict=True))  # page 2 is empty
    assert pages[0] == 1  # the title line
    for no, line in enumerate(lines, start=1):
        if "BM25" in line:
            assert page_of_line(rec, no) == 1
        if "zeppelin" in line:
            assert page_of_line(rec, no) == 3
    assert pages == sorted(pages)  # pages never go backwards
    assert page_of_line(rec, len(lines) + 1) is None and page_of_line(rec, 0) is None


def test_pdf_without_a_title_takes_its_first_line(tmp_path: Path) -> None:
    rec = one(make_pdf(tmp_path / "untitled.pdf", ["Sparse Models Revisited\nThe body follows on the next line."]))
    assert rec.title == "Sparse Models Revisited"
    assert rec.text.startswith("The body follows")
    assert rec.page_starts == (0,)


def test_page_of_line_is_none_without_pages() -> None:
    rec = DocRecord(docid="x", title="t", text="a\nb")
    assert line_pages(rec) == [] and page_of_line(rec, 2) is None


def test_page_map_survives_the_corpus_store(tmp_path: Path) -> None:
    from stores.collection import Collection, ingest

    folder = tmp_path / "pdfs"
    folder.mkdir()
    make_pdf(folder / "paper.pdf", PAGE_TEXT, title="Paged Retrieval")
    ingest(folder, "paged", home=tmp_path / "home", build_lucene=False)
    stored = Collection("paged", tmp_path / "home").corpus.get("paper")
    assert stored == next(iter(read_corpus(folder).records))
    assert line_pages(stored)[-1] == 3


def test_document_files_are_parsed_once_into_a_spool_that_leaves_with_the_source(tmp_path: Path) -> None:
    """A folder of files is parsed once; its records (pages included) come back from a spool of
    records on every pass, fingerprint as the records do, and the spool is removed with the source."""
    import gc
    from dataclasses import replace as with_records

    from stores.corpus import source_fingerprint
    from stores.file_formats.corpus_reader import RecordStream

    folder = tmp_path / "mixed"
    folder.mkdir()
    make_pdf(folder / "paper.pdf", PAGE_TEXT, title="Paged Retrieval")
    (folder / "notes.md").write_text("# Notes\n\nDense retrieval with dual encoders.\n", encoding="utf-8")
    src = read_corpus(folder)
    assert isinstance(src.records, RecordStream) and list(src.records.ids) == ["notes", "paper"]
    first, second = list(src.records), list(src.records)
    assert first == second and [r.docid for r in first] == ["notes", "paper"]
    assert line_pages(first[1])[-1] == 3, "the page map survives the spool"
    assert source_fingerprint(src) == source_fingerprint(with_records(src, records=first))
    spool = src.records.path
    assert spool.is_file()
    del src, first, second
    gc.collect()
    assert not spool.exists() and not spool.parent.exists()


def test_encrypted_and_broken_pdfs_are_skipped_with_their_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make_pdf(folder / "good.pdf", ["Readable text."])
    make_pdf(folder / "locked.pdf", ["Secret text."], password="s3cret")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    make_pdf(folder / "blank.pdf", [""])
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["good"]
    reasons = dict(s.split(": ", 1) for s in src.skipped)
    assert reasons[str(folder / "locked.pdf")].startswith("encrypted PDF (password protected)")
    assert reasons[str(folder / "broken.pdf")].startswith("not a readable PDF")
    assert reasons[str(folder / "blank.pdf")].startswith("no extractable text in 1 page(s)")


def test_markdown_front_matter_gives_title_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text(
        "---\ntitle: Learned Sparse Retrieval\nauthors: [Ann Lee, Bo Chan]\ndate: 2021-03-04\n"
        "venue: SIGIR\nkeywords: [bm25, splade]\ndoi: 10.1145/3404835\nstatus: draft\n---\n"
        "# Learned Sparse Retrieval\n\nWe expand documents.\n",
        encoding="utf-8",
    )
    rec = one(path)
    assert rec.title == "Learned Sparse Retrieval"
    assert (rec.year, rec.venue, rec.authors, rec.keywords) == (
        2021,
        "SIGIR",
        ("Ann Lee", "Bo Chan"),
        ("bm25", "splade"),
    )
    sources = {k: f"markdown:front-matter:{v}" for k, v in (("year", "date"), ("date", "date"), ("authors", "authors"))}
    assert rec.extras == {
        "doi": "10.1145/3404835",
        "status": "draft",
        "date": "2021-03-04",
        "sources": sources,
        "source_path": str(path),
    }
    assert rec.text == "We expand documents."  # the repeated heading is not body text
    assert "---" not in rec.text


def test_markdown_without_front_matter_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("\n# Heading\nbody\n", encoding="utf-8")
    rec = one(path)
    assert (rec.title, rec.text, rec.year) == ("Heading", "body", None)


def test_markdown_with_bad_front_matter_is_skipped_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ok.md").write_text("# Fine\nbody\n", encoding="utf-8")
    (folder / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    (folder / "year.md").write_text("---\ntitle: T\nyear: soon\n---\nbody\n", encoding="utf-8")
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["ok"]
    reasons = dict(s.split(": ", 1) for s in src.skipped)
    assert reasons[str(folder / "bad.md")].startswith("front matter is not valid YAML")
    assert reasons[str(folder / "year.md")].startswith("year must be a whole number")


def test_html_drops_scripts_and_navigation_and_reads_citation_meta(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Web Note</title><meta name='citation_author' content='Ann Lee'>"
        "<meta name='citation_publication_date' content='2019/05/01'>"
        "<meta name='citation_doi' content='10.1/x'><style>p{}</style></head><body>"
        "<nav>Home | About</nav><h1>Web Note</h1><p>First paragraph.</p><p>Second one.</p>"
        "<script>var tracking = 1;</script><footer>Copyright</footer></body></html>",
        encoding="utf-8",
    )
    rec = one(path)
    assert (rec.title, rec.authors, rec.year, rec.extras) == (
        "Web Note",
        ("Ann Lee",),
        2019,
        {
            "doi": "10.1/x",
            "date": "2019-05-01",
            "sources": {
                k: f"html:citation_{v}"
                for k, v in (("year", "publication_date"), ("date", "publication_date"), ("authors", "author"))
            },
            "source_path": str(path),
        },
    )
    # Paragraphs are separated by a blank line (issue 20): sentence splitting ends a sentence there,
    # so a heading cannot run into the next paragraph's first sentence.
    assert rec.text == "First paragraph.\n\nSecond one."


def test_docx_paragraphs_tables_and_properties(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.author = "Cy Dee"
    document.core_properties.keywords = "ranking; fusion"
    document.add_heading("Fusion Notes", 0)
    document.add_paragraph("Reciprocal rank fusion combines rankings.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "k", "60"
    document.save(str(tmp_path / "fusion.docx"))
    rec = one(tmp_path / "fusion.docx")
    assert (rec.title, rec.authors, rec.keywords) == ("Fusion Notes", ("Cy Dee",), ("ranking", "fusion"))
    assert rec.text == "Reciprocal rank fusion combines rankings.\nk | 60"


def test_damaged_docx_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "ok.txt").write_text("Fine\nbody", encoding="utf-8")
    (folder / "bad.docx").write_bytes(b"PK\x03\x04 not a zip really")
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["ok"]
    assert src.skipped[0].startswith(f"{folder / 'bad.docx'}: not a readable DOCX file")


def test_rst_and_latex_read_as_text_with_their_titles(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "guide.rst").write_text("=========\nThe Guide\n=========\n\nSome *rst* text.\n", encoding="utf-8")
    (tmp_path / "d" / "paper.tex").write_text(
        "\\documentclass{article}\n\\title{Query Expansion}\n"
        "\\author{Ann Lee \\and Bo Chan}\n\\begin{document}\nWe expand.\n"
        "\\end{document}\n",
        encoding="utf-8",
    )
    by_id = {r.docid: r for r in read_corpus(tmp_path / "d").records}
    assert (by_id["guide"].title, by_id["guide"].text) == ("The Guide", "Some *rst* text.")
    assert by_id["paper"].title == "Query Expansion" and by_id["paper"].authors == ("Ann Lee", "Bo Chan")
    assert "We expand." in by_id["paper"].text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("naïve café".encode(), "naïve café"),
        ("\ufeffbom first".encode("utf-8"), "bom first"),
        ("utf-16 text".encode("utf-16"), "utf-16 text"),
        (
            "Les élèves étudient à l'école près du théâtre.".encode("cp1252"),
            "Les élèves étudient à l'école près du théâtre.",
        ),
        ("naïve café résumé".encode("latin-1"), "naïve café résumé"),
        ("日本語の文書検索".encode("utf-16"), "日本語の文書検索"),
        # 8-bit text that begins with the bytes of a UTF-16 mark but cannot be UTF-16 (odd length)
        ("ÿþ café près retrievals".encode("cp1252"), "ÿþ café près retrievals"),
    ],
)
def test_encodings_are_detected(raw: bytes, expected: str) -> None:
    assert decode(raw) == expected


def test_utf16_cut_mid_character_is_refused_with_a_reason() -> None:
    with pytest.raises(Unreadable, match="cut short"):
        decode("utf-16 text".encode("utf-16") + b"x")


def test_a_single_file_is_a_corpus_of_one(tmp_path: Path) -> None:
    path = tmp_path / "Reading List.md"
    path.write_text("# Reading list\n- BM25\n", encoding="utf-8")
    src = read_corpus(path)
    assert src.kind == "file" and [r.docid for r in src.records] == ["Reading_List"]


def test_a_single_bad_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(IngestError) as info:
        read_corpus(path)
    assert info.value.problems[0] == f"{path}: empty file (nothing to search)"


def test_a_single_file_of_unsupported_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "slides.pptx"
    path.write_bytes(b"PK")
    with pytest.raises(QuarryError) as info:
        read_corpus(path)
    assert info.value.code == "bad_input" and "'.pptx'" in info.value.message and ".pdf" in info.value.hint


def test_recursive_folder_of_mixed_formats_names_unsupported_and_hidden(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / ".git").mkdir()
    make_pdf(folder / "a" / "b" / "deep.pdf", ["Deep down."])
    (folder / "a" / "note.md").write_text("# Note\nx\n", encoding="utf-8")
    (folder / "slides.pptx").write_bytes(b"PK")
    (folder / ".git" / "HEAD").write_text("ref: x\n", encoding="utf-8")
    src = read_corpus(folder)
    assert sorted(r.docid for r in src.records) == ["a/b/deep", "a/note"]
    assert src.unsupported == [str(folder / "slides.pptx")]
    assert any("1 hidden file(s) not read" in w for w in src.warnings)


# -- running headers and footers of PDFs; man page hyphenation -----------------------------------

RFC_HEADER = "RFC 9110                     HTTP Semantics                    June 2022"
RFC_FOOTER = "Fielding, et al.             Standards Track                   [Page {n}]"
RFC_BODY = [  # RFC 9110's own sentences, one page each
    (
        "Internet Engineering Task Force (IETF)                  R. Fielding, Ed.\n\nHTTP Semantics\n\nAbstract\n\n"
        "The Hypertext Transfer Protocol (HTTP) is a stateless application-level protocol for distributed, "
        "collaborative, hypertext information systems."
    ),
    (
        "1.1. Purpose\n\nThe Hypertext Transfer Protocol (HTTP) is a family of stateless, application-level, "
        "request/response protocols that share a generic interface, extensible semantics, and self-descriptive "
        "messages to enable flexible interaction with network-based hypertext information systems."
    ),
    (
        "3. Terminology and Core Concepts\n\nHTTP was created for the World Wide Web (WWW) architecture and has "
        "evolved over time to support the scalability needs of a worldwide hypertext system."
    ),
    (
        '3.1. Resources\n\nThe target of an HTTP request is called a "resource". HTTP does not limit the nature '
        "of a resource; it merely defines an interface that might be used to interact with resources."
    ),
    (
        '3.2. Representations\n\nA "representation" is information that is intended to reflect a past, current, '
        "or desired state of a given resource, in a format that can be readily communicated via the protocol."
    ),
]


def rfc_pages(count: int) -> list[str]:
    return [
        (RFC_HEADER + "\n\n" if n > 1 else "") + RFC_BODY[n - 1] + "\n\n" + RFC_FOOTER.format(n=n)
        for n in range(1, count + 1)
    ]


def test_pdf_running_headers_and_footers_are_dropped_and_pages_kept(tmp_path: Path) -> None:
    rec = one(make_pdf(tmp_path / "rfc9110.pdf", rfc_pages(5)))
    assert "June 2022" not in rec.text and "Standards Track" not in rec.text and "[Page" not in rec.text
    assert "Internet Engineering Task Force (IETF)" in rec.title  # page 1's own first line: not repeated
    for sentence in (
        "a stateless application-level protocol",
        "self-descriptive",
        "scalability needs",
        "merely defines an interface",
        "readily communicated via the protocol",
    ):
        assert sentence in " ".join(rec.text.split())
    assert len(rec.page_starts) == 5
    lines = document_lines(rec)
    for no, line in enumerate(lines, start=1):  # every page's text still on its page
        for page, heading in (
            (2, "1.1. Purpose"),
            (3, "3. Terminology"),
            (4, "3.1. Resources"),
            (5, "3.2. Representations"),
        ):
            if line.startswith(heading):
                assert page_of_line(rec, no) == page


def test_pdf_lines_repeated_on_few_pages_or_in_short_files_stay(tmp_path: Path) -> None:
    two = one(make_pdf(tmp_path / "two.pdf", rfc_pages(2)))  # fewer than 3 pages: nothing is running
    assert "Standards Track" in two.text and "June 2022" in two.text
    pages = rfc_pages(5)
    pages[1] = pages[1].replace(RFC_BODY[1], "Note well.\n\n" + RFC_BODY[1])
    pages[2] = pages[2].replace(RFC_BODY[2], "Note well.\n\n" + RFC_BODY[2])  # 2 of 5 pages: not half
    rec = one(make_pdf(tmp_path / "five.pdf", pages))
    assert rec.text.count("Note well.") == 2 and "Standards Track" not in rec.text


def test_drop_running_lines_rule() -> None:
    from stores.file_formats.pdf import drop_running_lines

    words = ["alpha", "beta", "gamma", "delta"]
    pages = [["Shared MIME-info Database", words[n - 1], "", str(n)] for n in range(1, 5)]
    pages[0] = ["X Desktop Group", "alpha", "1"]
    assert drop_running_lines(pages) == [["X Desktop Group", "alpha"], ["beta", ""], ["gamma", ""], ["delta", ""]]
    assert drop_running_lines(pages[:2]) == pages[:2]
    # Atop the first page the running header is the document's name: it stays there (as its title).
    pages[0] = ["Shared MIME-info Database", "X Desktop Group", "alpha", "1"]
    assert drop_running_lines(pages)[0] == ["Shared MIME-info Database", "X Desktop Group", "alpha"]


@pytest.mark.skipif(
    not Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf").is_file(),
    reason="the shared-mime-info spec (Debian's shared-mime-info) is not installed",
)
def test_a_real_manual_loses_its_running_header_and_page_numbers() -> None:
    from stores.file_formats.dispatch import read_file

    doc = read_file(Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"))
    lines = doc.text.splitlines()
    assert len(doc.page_starts) == 17
    assert "Shared MIME-info Database" not in lines  # atop all 17 pages
    assert doc.title == "Shared MIME-info Database"  # kept atop the first page, where it names the spec
    assert not [line for line in lines if line.strip().isdigit() and int(line) <= 17]  # the page numbers
    assert "The source XML files" in doc.text


MAN_PAGE = Path(__file__).parent / "fixtures" / "readers2" / "gzip.1.txt"


def test_man_page_line_end_hyphenation_is_joined(tmp_path: Path) -> None:
    from stores.file_formats.dispatch import read_file

    raw = MAN_PAGE.read_text(encoding="utf-8")
    assert "In par\u2010\n       ticular" in raw  # as man renders it
    for name, content in (("gzip.1.txt", raw), ("headless.txt", raw.split("\n", 1)[1])):
        (tmp_path / name).write_text(content, encoding="utf-8")
        doc = read_file(tmp_path / name)
        assert doc.title == "gzip, gunzip, zcat - compress or expand files"
        assert "In particular, it will ignore symbolic links." in doc.text
        assert "gzip truncates  it." in doc.text or "gzip truncates it." in " ".join(doc.text.split())
        assert "\u2010\n" not in doc.text
    plain = tmp_path / "note.txt"
    plain.write_text("Notes\nwell-\nknown and co\u2010\nowner stay as written\n", encoding="utf-8")
    assert read_file(plain).text == "well-\nknown and co\u2010\nowner stay as written"  # not a man page
