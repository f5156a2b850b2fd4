"""Corpus readers: the three input layouts, and validation that names every bad record by file:line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stores.errors import IngestError, QuarryError
from stores.file_formats.corpus_reader import read_corpus
from tests.fakes import write_beir, write_jsonl


def problems_of(path: Path) -> list[str]:
    with pytest.raises(IngestError) as info:
        read_corpus(path)
    assert info.value.code == "bad_input"
    assert info.value.hint  # every rejection says how to repair it
    return info.value.problems


GOOD = {"_id": "ok1", "title": "A good record", "text": "with some text"}


# -- the three layouts ------------------------------------------------------------------------


def test_beir_folder_reads_documents_queries_qrels_and_citations(tmp_path: Path) -> None:
    folder = write_beir(
        tmp_path / "beir",
        [
            {
                "_id": "d1",
                "title": "First",
                "text": "alpha",
                "metadata": {"year": 1999, "authors": "Ann Lee; Bo Chan", "keywords": "x, y; z", "venue": "CACM"},
            },
            {"_id": 2, "title": "Second", "text": "beta", "metadata": {"authors": ["Cy"], "sentences": ["s1"]}},
        ],
        queries={"q1": "what is alpha", "q2": "beta?"},
        qrels={"test": [("q1", "d1", 1), ("q2", "2", 2)], "dev": [("q1", "2", 0)]},
        citations=[("d1", "2"), ("2", "d1")],
    )
    src = read_corpus(folder)
    assert src.kind == "beir"
    assert [r.docid for r in src.records] == ["d1", "2"]  # ids are strings, in file order
    d1, d2 = src.records
    assert (d1.title, d1.text, d1.year, d1.venue) == ("First", "alpha", 1999, "CACM")
    assert d1.authors == ("Ann Lee", "Bo Chan")
    assert d1.keywords == ("x", "y", "z")
    assert d2.authors == ("Cy",) and d2.extras == {"sentences": ["s1"]}
    assert src.queries == {"q1": "what is alpha", "q2": "beta?"}
    assert src.qrels == {"test": [("q1", "d1", 1), ("q2", "2", 2)], "dev": [("q1", "2", 0)]}
    assert sorted(src.citations) == [("2", "d1"), ("d1", "2")]  # header line skipped
    assert src.warnings == []


def test_jsonl_file_accepts_id_aliases_and_contents(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "a", "contents": "body a"},
            {"docid": "b", "title": "Title b"},
            "",  # blank lines are allowed
            {"_id": "c", "title": "  padded  ", "text": "  t  ", "year": "2020"},
        ],
    )
    src = read_corpus(path)
    assert src.kind == "jsonl"
    assert [(r.docid, r.title, r.text) for r in src.records] == [
        ("a", "", "body a"),
        ("b", "Title b", ""),
        ("c", "padded", "t"),
    ]
    assert list(src.records)[2].year == 2020


def test_text_folder_uses_paths_as_ids_and_first_line_as_title(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub dir").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("\n\n# Heading A\nbody line 1\n\nbody line 2\n", encoding="utf-8")
    (tmp_path / "docs" / "sub dir" / "b.txt").write_text("# not a heading in txt\nbody b\n", encoding="utf-8")
    (tmp_path / "docs" / "ignored.csv").write_text("x,y\n", encoding="utf-8")
    src = read_corpus(tmp_path / "docs")
    assert src.kind == "folder"
    by_id = {r.docid: r for r in src.records}
    assert set(by_id) == {"a", "sub_dir/b"}  # whitespace in paths becomes "_"
    assert src.unsupported == [str(tmp_path / "docs" / "ignored.csv")]  # named, not read
    assert by_id["a"].title == "Heading A"
    assert by_id["a"].text == "body line 1\n\nbody line 2"
    assert by_id["sub_dir/b"].title == "# not a heading in txt"
    assert by_id["sub_dir/b"].text == "body b"


# -- validation: file:line for every problem ----------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ('{"_id": "x", "title": ', r"not valid JSON"),
        ('{"title": "no id here"}', r"missing document id"),
        ('{"_id": true, "title": "bool id"}', r"missing document id"),
        ('{"_id": "x", "title": 42}', r"title must be a string"),
        ('{"_id": "x", "title": "t", "text": ["list"]}', r"text must be a string"),
        ('{"_id": "x", "title": "t", "metadata": {"year": "19x9"}}', r"year must be a whole number"),
        ('{"_id": "x", "title": "t", "year": 5000}', r"year must be a whole number"),
        ('{"_id": "x", "title": "t", "metadata": "not an object"}', r"metadata must be a JSON object"),
        ('{"_id": "x", "title": "t", "metadata": {"authors": 7}}', r"authors must be a string or a list"),
        ('{"_id": "x", "title": "t", "venue": 3}', r"venue must be a string"),
        ('{"_id": "two words", "title": "t"}', r"without spaces"),
        ('{"_id": "tab\\there", "title": "t"}', r"without spaces"),
        ("[1, 2]", r"expected a JSON object"),
    ],
)
def test_jsonl_validation_names_file_and_line(tmp_path: Path, bad_line: str, reason: str) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [GOOD, "", bad_line])
    problems = problems_of(path)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}:3: ")
    assert re.search(reason, problems[0])


def test_empty_documents_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [GOOD, {"_id": "e1", "title": "  ", "text": ""}, {"_id": "e2", "metadata": {"authors": []}}],
    )
    src = read_corpus(path)
    assert [r.docid for r in src.records] == ["ok1"]
    (warning,) = src.warnings
    assert warning.startswith(f"{path}: skipped 2 document(s) with neither title nor text")
    assert "line 2 (e1)" in warning and "line 3 (e2)" in warning


def test_a_corpus_of_only_empty_documents_is_rejected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"_id": "e1", "title": "", "text": " "}])
    assert any("no documents found" in p for p in problems_of(path))


def test_all_problems_are_collected_in_one_pass(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"_id": "a", "title": "t"},
            {"_id": "b", "title": 1},
            "not json",
            {"_id": "a", "title": "again"},
            {"_id": "c", "title": "fine"},
        ],
    )
    problems = problems_of(path)
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:3", f"{path}:4"]


def test_duplicate_id_mentions_the_first_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl", [{"_id": "x", "title": "a"}, {"_id": "y", "title": "b"}, {"_id": "x", "title": "c"}]
    )
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:3: ")
    assert "duplicate" in problem and "'x'" in problem and "first at line 1" in problem


def test_integer_and_string_ids_that_collide_are_duplicates(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"_id": 7, "title": "a"}, {"_id": "7", "title": "b"}])
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:2: ") and "first at line 1" in problem


def test_non_utf8_jsonl_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    good = b'{"_id": "a", "title": "fine"}\n'
    path.write_bytes(good * 400 + b'{"_id": "b", "title": "caf\xe9"}\n' + good.replace(b'"a"', b'"c"'))
    problems = problems_of(path)
    assert any("UTF-8" in p for p in problems)
    # The bad byte is on line 401: the problem must say so, like every other problem does.
    assert any(p.startswith(f"{path}:401: ") for p in problems), problems


def test_latin1_text_file_is_decoded_not_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\nbody\n", encoding="utf-8")
    (folder / "latin.txt").write_bytes(
        "Café society\nLes élèves étudient à l'école près du théâtre.\n".encode("latin-1")
    )
    src = read_corpus(folder)
    by_id = {r.docid: r for r in src.records}
    assert by_id["latin"].title == "Café society"
    assert "élèves" in by_id["latin"].text and src.skipped == []


def test_binary_text_file_is_skipped_with_its_reason(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\nbody\n", encoding="utf-8")
    (folder / "bad.txt").write_bytes(b"\x00\x01\x02\xff\xfe\x00garbage")
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["good"]
    assert src.skipped == [f"{folder / 'bad.txt'}: binary data, not text"]


def test_empty_markdown_file_is_skipped_or_rejected_with_strict(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\nbody\n", encoding="utf-8")
    (folder / "empty.md").write_text("\n   \n", encoding="utf-8")
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["good"]
    assert src.skipped == [f"{folder / 'empty.md'}: empty file (nothing to search)"]
    with pytest.raises(IngestError) as info:
        read_corpus(folder, strict=True)
    (problem,) = info.value.problems
    assert problem.startswith(f"{folder / 'empty.md'}: ") and "empty" in problem


def test_folder_without_readable_files_is_rejected_naming_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "data.csv").write_text("a,b\n", encoding="utf-8")
    (tmp_path / "docs" / "empty.txt").write_text("", encoding="utf-8")
    problems = problems_of(tmp_path / "docs")
    assert problems[0] == f"{tmp_path / 'docs' / 'empty.txt'}: empty file (nothing to search)"
    assert "no readable documents found" in problems[-1] and "data.csv" in problems[-1]


def test_files_differing_only_by_their_suffix_are_both_kept_under_their_whole_names(tmp_path: Path) -> None:
    """ "notes.md" and "notes.txt" would both be "notes": each is read, under its whole name (the id
    says which), and `--strict` has nothing to refuse; a file with no twin keeps its short id."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes in markdown\nbody\n", encoding="utf-8")
    (folder / "notes.txt").write_text("Notes in text\nbody\n", encoding="utf-8")
    (folder / "other.md").write_text("# Other\nbody\n", encoding="utf-8")
    for src in (read_corpus(folder), read_corpus(folder, strict=True)):
        assert sorted((r.docid, r.title) for r in src.records) == [
            ("notes.md", "Notes in markdown"),
            ("notes.txt", "Notes in text"),
            ("other", "Other"),
        ]
        assert src.skipped == [] and src.warnings == []


def test_nonexistent_path(tmp_path: Path) -> None:
    with pytest.raises(QuarryError) as info:
        read_corpus(tmp_path / "nope.jsonl")
    assert info.value.code == "not_found"
    assert str(tmp_path / "nope.jsonl") in info.value.message
    assert "BEIR" in info.value.hint


def test_unsupported_file_type(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text("_id,title\na,b\n", encoding="utf-8")
    with pytest.raises(QuarryError) as info:
        read_corpus(path)
    assert info.value.code == "bad_input"
    assert "'.csv'" in info.value.message and info.value.hint


def test_empty_jsonl_has_no_documents(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", ["", "  "])
    (problem,) = problems_of(path)
    assert "no documents" in problem


# -- BEIR extras -------------------------------------------------------------------------------


def test_citations_and_qrels_naming_unknown_documents_give_warnings(tmp_path: Path) -> None:
    folder = write_beir(
        tmp_path / "beir",
        [{"_id": "d1", "title": "one"}, {"_id": "d2", "title": "two"}],
        queries={"q1": "one"},
        qrels={"test": [("q1", "d1", 1), ("q1", "ghost", 1), ("q1", "phantom", 0)]},
        citations=[("d1", "d2"), ("d1", "ghost"), ("ghost", "d2"), ("d1", "d1"), ("d1", "d2")],
    )
    src = read_corpus(folder)
    assert src.citations == [("d1", "d2")]  # unknown ends, self-citations and repeats are dropped
    assert len(src.warnings) == 2
    cite_warning = next(w for w in src.warnings if "citations.tsv" in w)
    qrels_warning = next(w for w in src.warnings if "test.tsv" in w)
    assert cite_warning.startswith(str(folder / "citations.tsv")) and "2 citation(s)" in cite_warning
    assert "2 judgement(s)" in qrels_warning


def test_bad_qrels_and_queries_rows_name_file_and_line(tmp_path: Path) -> None:
    folder = write_beir(
        tmp_path / "beir",
        [{"_id": "d1", "title": "one"}],
        qrels={"test": [("q1", "d1", 1), ("q1", "d1", "high")]},
        citations=[],
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "one"}\n{"_id": "q2", "text": "  "}\n', encoding="utf-8"
    )
    with (folder / "citations.tsv").open("a", encoding="utf-8") as fh:
        fh.write("d1\td1\textra\n")
    problems = problems_of(folder)
    assert any(p.startswith(f"{folder / 'qrels' / 'test.tsv'}:3: ") and "integer" in p for p in problems)
    assert any(p.startswith(f"{folder / 'queries.jsonl'}:2: ") for p in problems)
    assert any(p.startswith(f"{folder / 'citations.tsv'}:2: ") and "columns" in p for p in problems)


def test_non_utf8_qrels_file_is_an_ingest_error(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "beir", [{"_id": "d1", "title": "one"}], qrels={"test": [("q1", "d1", 1)]})
    with (folder / "qrels" / "test.tsv").open("ab") as fh:
        fh.write(b"q\xe9\td1\t1\n")
    problems = problems_of(folder)  # a typed, repairable error, not a UnicodeDecodeError
    assert any(str(folder / "qrels" / "test.tsv") in p and "UTF-8" in p for p in problems)


# -- files without an extension (README, NEWS, ChangeLog …) --------------------------------------

READERS2 = Path(__file__).parent / "fixtures" / "readers2"
ELF_HEAD = b"\x7fELF\x02\x01\x01\x00" + bytes(56) + b"\x00\x01payload"


def test_extensionless_text_files_are_read_and_binaries_named_unsupported(tmp_path: Path) -> None:
    folder = tmp_path / "wget-1.21"
    folder.mkdir()
    (folder / "README").write_bytes((READERS2 / "wget" / "README").read_bytes())
    (folder / "ChangeLog").write_text(
        "2022-06-05  Tim Rühsen  <tim.ruehsen@gmx.de>\n\n\t* src/http.c: Fix an uninitialized read.\n", encoding="utf-8"
    )
    (folder / "AUTHORS").write_text("Hrvoje Nikšić\nTim Rühsen\n", encoding="utf-8")
    (folder / "wget").write_bytes(ELF_HEAD)  # an executable: not text
    (folder / "NEWS").write_bytes("Änderungen in Latin-1\n".encode("latin-1"))  # not UTF-8: not sniffed as text
    (folder / "EMPTY").write_bytes(b"")
    src = read_corpus(folder)
    by_id = {r.docid: r for r in src.records}
    assert sorted(by_id) == ["AUTHORS", "ChangeLog", "README"]
    assert by_id["README"].title == "GNU Wget"
    assert "non-interactive download of files" in by_id["README"].text
    assert by_id["ChangeLog"].title.startswith("2022-06-05  Tim Rühsen")
    assert by_id["AUTHORS"].title == "Hrvoje Nikšić"
    assert sorted(src.unsupported) == sorted(str(folder / n) for n in ("wget", "NEWS", "EMPTY"))
    assert src.skipped == []


def test_a_single_extensionless_file_is_a_corpus_of_one_unless_binary(tmp_path: Path) -> None:
    (tmp_path / "TODO").write_bytes((READERS2 / "gnupg" / "TODO").read_bytes())
    src = read_corpus(tmp_path / "TODO")
    (rec,) = list(src.records)
    assert rec.docid == "TODO" and rec.title == "* src/base64"  # past "-*- outline -*-"
    (tmp_path / "tool").write_bytes(ELF_HEAD)
    with pytest.raises(QuarryError) as info:
        read_corpus(tmp_path / "tool")
    assert info.value.code == "bad_input"


def test_extensionless_files_keep_the_safety_rules(tmp_path: Path) -> None:
    """Hidden files stay unread, a FIFO is never opened to be sniffed (it would block), a link out
    of the folder is not followed: the same rules as for files with a suffix."""
    import os

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "README").write_text("Notes\nabout lexical retrieval\n", encoding="utf-8")
    (folder / ".envrc").write_text("export OPENAI_API_KEY=secret\n", encoding="utf-8")
    os.mkfifo(folder / "PIPE")
    secret = tmp_path / "SECRET"
    secret.write_text("private words\n", encoding="utf-8")
    (folder / "LINK").symlink_to(secret)
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["README"]
    assert any("hidden" in w and ".envrc" in w for w in src.warnings)
    skipped = "\n".join(src.skipped)
    assert f"{folder / 'PIPE'}: not a regular file (a FIFO)" in skipped
    assert f"{folder / 'LINK'}: link to" in skipped and "outside the folder" in skipped
    assert not any("private words" in r.text for r in src.records)


def test_a_man_page_without_extension_is_titled_and_dehyphenated(tmp_path: Path) -> None:
    (tmp_path / "gzip").write_bytes((READERS2 / "gzip.1.txt").read_bytes())
    (rec,) = list(read_corpus(tmp_path / "gzip").records)
    assert rec.title == "gzip, gunzip, zcat - compress or expand files"
    assert "In particular, it will ignore symbolic links." in rec.text


def test_a_readme_beside_readme_md_is_read_too(tmp_path: Path) -> None:
    """`README` and `README.md` would share the id "README": both are read, each under its whole
    name, and nothing is left out (`--strict` ingests)."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "README").write_text("Plain readme\nold text\n", encoding="utf-8")
    (folder / "README.md").write_text("# Project\nnew text\n", encoding="utf-8")
    (folder / "NEWS").write_text("Release 2.0\nfaster ranking\n", encoding="utf-8")
    src = read_corpus(folder, strict=True)
    by_id = {r.docid: r for r in src.records}
    assert sorted(by_id) == ["NEWS", "README", "README.md"]
    assert (by_id["README.md"].title, by_id["README"].title) == ("Project", "Plain readme")
    assert src.warnings == []


def test_conventional_document_names_with_a_variant_suffix_are_read_as_text(tmp_path: Path) -> None:
    """/usr/share/doc holds README.Debian, NEWS.old, ChangeLog.1 beside README.md: each is read as
    text under its whole name (the suffix names a variant, not a format), while other unknown
    suffixes stay unsupported and a binary README.gz is never taken for text."""
    folder = tmp_path / "doc"
    folder.mkdir()
    (folder / "README.md").write_text(
        "# Git\n\nGit is a fast, scalable, distributed revision control system.\n", encoding="utf-8"
    )
    (folder / "README.Debian").write_text(
        "git for Debian\n--------------\n\nThe git-daemon-run package sets up a git daemon under runit.\n",
        encoding="utf-8",
    )
    (folder / "ChangeLog.1").write_text("2021-01-02  Jane Roe\n\n\t* main.c: fix a leak.\n", encoding="utf-8")
    (folder / "README.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)))
    (folder / "data.log").write_text("a log line\n", encoding="utf-8")
    src = read_corpus(folder)
    by_id = {r.docid: r for r in src.records}
    assert sorted(by_id) == ["ChangeLog.1", "README", "README.Debian"]
    assert "git-daemon-run" in by_id["README.Debian"].text and by_id["README"].title == "Git"
    assert sorted(src.unsupported) == sorted(str(folder / n) for n in ("README.gz", "data.log"))
