"""Input that slipped past the earlier guards: invisible format characters (Unicode category Cf)
that hid words from BM25, on the query side and inside indexed documents, and a BEIR dataset's
files linked out of its folder (`corpus.jsonl → /proc/self/environ`), which were opened while the
same link in a folder of documents was refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from stores.collection import Collection, ingest
from stores.errors import IngestError
from stores.file_formats.corpus_reader import read_corpus
from stores.file_formats.jsonl_corpus import BEIR_FILES
from tests.fakes import filler, write_beir, write_jsonl

NAME = "invisible"
# Unicode category Cf, as pasted from web pages, RTL text and word processors.
FORMAT_CHARS = {
    "soft-hyphen": "\u00ad",
    "zero-width-space": "\u200b",
    "zwnj": "\u200c",
    "zwj": "\u200d",
    "lrm": "\u200e",
    "rtl-mark": "\u200f",
    "rlo": "\u202e",
    "word-joiner": "\u2060",
    "pop-isolate": "\u2069",
    "bom": "\ufeff",
    "tag-a": "\U000e0041",
}
DOCS = [
    {"_id": "plain", "title": "Trade notes", "text": f"lexical retrieval {filler(1, 12)}"},
    {"_id": "other", "title": "Harbor notes", "text": f"retrieval retrieval of {filler(2, 20)}"},
    # Hyphenated by a word processor, joined by a zero-width joiner, cut by a zero-width space:
    # a reader sees "international", "cooperation" and "bibliography".
    {"_id": "soft", "title": "Inter\u00adnational co\u200doperation", "text": f"biblio\u200bgraphy {filler(3, 15)}"},
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("invisible-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("invisible-src") / "c.jsonl", DOCS), NAME, home=home)
    return home


def ranking(home: Path, query: str) -> list[tuple[str, float]]:
    return [(h.docid, h.score) for h in Collection(NAME, home).lucene.search(query)]


@pytest.mark.parametrize("char", FORMAT_CHARS.values(), ids=FORMAT_CHARS.keys())
def test_a_format_character_in_the_query_finds_what_the_plain_query_finds(home: Path, char: str) -> None:
    """After the words (pasted from an RTL page), before them, and inside them: the same
    documents with the same scores as the plain query."""
    plain = "lexical retrieval"
    expected = ranking(home, plain)
    assert [d for d, _ in expected] == ["plain", "other"]
    for query in (plain + char, char + plain, f"lexi{char}cal{char} retri{char}eval{char}"):
        assert ranking(home, query) == expected, repr(query)


@pytest.mark.parametrize("word", ["international", "cooperation", "bibliography"])
def test_a_document_with_a_format_character_inside_a_word_is_found_by_the_plain_word(home: Path, word: str) -> None:
    assert [d for d, _ in ranking(home, word)] == ["soft"]


def test_every_door_searches_through_the_same_rule(home: Path) -> None:
    """The command line (the search tool, as MCP, HTTP and the agents call it) with an RTL mark
    pasted after the words: the same hits as without it."""

    def hits(query: str) -> list[str]:
        result = CliRunner().invoke(app, ["--home", str(home), "search", NAME, query, "--json"])
        assert result.exit_code == 0, result.output
        return [h["docid"] for h in json.loads(result.output)["hits"]]

    found = hits("international retrieval")
    assert sorted(found) == ["other", "plain", "soft"]
    assert hits("international retrieval\u200f") == found
    result = CliRunner().invoke(app, ["--home", str(home), "search", NAME, "\u200f\u00ad\u2069"])
    assert result.exit_code != 0 and "(empty_query)" in result.output and "Traceback" not in result.output


# -- BEIR datasets: links out of the folder --------------------------------------------------------


def dataset(folder: Path) -> Path:
    """A small BEIR folder holding every file Quarry reads from one."""
    docs = [{"_id": f"d{i}", "title": f"Doc {i}", "text": f"retrieval {filler(i, 10)}"} for i in range(3)]
    write_beir(folder, docs, queries={"q1": "retrieval"}, qrels={"test": [("q1", "d1", 1)]}, citations=[("d0", "d1")])
    write_jsonl(folder / "answers.jsonl", [{"_id": "q1", "answer": "d1"}])
    return folder


def links_out(folder: Path, name: str, target: Path | str) -> Path:
    """Replace `name` in the dataset by a link to `target`."""
    (folder / name).unlink()
    os.symlink(target, folder / name)
    return folder / name


@pytest.mark.parametrize("name", [*BEIR_FILES, "qrels/test.tsv"])
def test_a_dataset_file_linked_out_of_its_folder_is_refused_before_it_is_opened(tmp_path: Path, name: str) -> None:
    """The link leads to a well-formed copy of the same file outside the folder: refused for
    where it leads, not for what it holds."""
    outside = dataset(tmp_path / "elsewhere")
    folder = dataset(tmp_path / "data")
    link = links_out(folder, name, outside / name)
    with pytest.raises(IngestError) as info:
        read_corpus(folder)
    assert info.value.problems == [f"{link}: link to {outside / name}, outside the folder being read: not followed"], (
        info.value.problems
    )
    assert "copy the files named into the dataset folder" in info.value.hint


def test_a_corpus_linked_to_the_environment_is_one_message_and_no_collection(tmp_path: Path) -> None:
    folder = dataset(tmp_path / "data")
    links_out(folder, "corpus.jsonl", "/proc/self/environ")
    links_out(folder, "queries.jsonl", "/etc/passwd")
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["--home", str(home), "ingest", str(folder), "--name", "leak"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        "error (bad_input): ingest rejected 2 problem(s); nothing was changed:"
    ], result.output
    assert "corpus.jsonl: link to /proc/" in result.output and "queries.jsonl: link to /etc/passwd" in result.output
    assert not (home / "collections" / "leak").exists()


def test_links_that_stay_inside_the_dataset_are_followed_and_only_the_link_out_is_named(tmp_path: Path) -> None:
    folder = dataset(tmp_path / "data")
    (folder / "v2").mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (folder / name).rename(folder / "v2" / name)
        os.symlink(Path("v2") / name, folder / name)
    (folder / "qrels" / "test.tsv").rename(folder / "judged.tsv")
    os.symlink(folder / "judged.tsv", folder / "qrels" / "test.tsv")
    (tmp_path / "cites.tsv").write_text("citing\tcited\nd0\td2\n", encoding="utf-8")
    link = links_out(folder, "citations.tsv", tmp_path / "cites.tsv")
    with pytest.raises(IngestError) as info:
        read_corpus(folder)
    assert info.value.problems == [
        f"{link}: link to {tmp_path / 'cites.tsv'}, outside the folder being read: not followed"
    ]
    link.unlink()
    src = read_corpus(folder)
    assert [r.docid for r in src.records] == ["d0", "d1", "d2"]
    assert src.queries == {"q1": "retrieval"} and src.qrels == {"test": [("q1", "d1", 1)]}
