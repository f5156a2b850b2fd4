"""The BM25 index fed through pipes as an ingest stores each document (`stores.lucene_build`):
the index is the one files would give, every document given is indexed (also those given before
the JVM opened its pipes), and an indexer that fails to start, dies mid-feed or is abandoned by
its caller ends the build with one clear error — never a hang, an orphan JVM or a stray folder."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import stores.lucene_build as lucene_build
from stores.anserini_run import run_index_collection
from stores.collection import Collection, ingest
from stores.errors import QuarryError
from stores.lucene import META_FILE, LuceneIndex
from stores.lucene_build import IndexFeed, build_index, index_line, write_json_collection
from stores.records import DocRecord
from tests.fakes import topic_docs, write_jsonl

QUERIES = ("retrieval", "retrieval notes", "filler words")


def records(n: int) -> list[DocRecord]:
    return [DocRecord(docid=d["_id"], title=d["title"], text=d["text"]) for d in topic_docs(n)]


def test_an_ingest_indexes_in_one_pass_what_files_would_give(tmp_path: Path) -> None:
    """The one-pass ingest's index ranks exactly as Anserini over an export of the same documents."""
    home = tmp_path / "home"
    ingest(write_jsonl(tmp_path / "docs.jsonl", topic_docs(300)), "feed", home=home)
    col = Collection("feed", home)
    assert col.lucene.meta.documents == 300
    export = tmp_path / "export"
    assert write_json_collection(col.corpus.iter_records(), export, 1) == 300
    assert run_index_collection(export, tmp_path / "reference", 1) == 300
    shutil.copy(col.paths.lucene_dir / META_FILE, tmp_path / "reference")  # the same k1/b
    reference = LuceneIndex(tmp_path / "reference")
    for query in QUERIES:
        assert col.lucene.ranking(query, 1000) == reference.ranking(query, 1000), query


def pipe_folders(*beside: Path) -> set[str]:
    return {p.name for where in (Path(tempfile.gettempdir()), *beside) for p in where.glob("quarry-lucene-*")}


def test_documents_given_before_the_indexer_started_are_all_indexed(tmp_path: Path) -> None:
    """Everything is added before the JVM can have opened its pipes (a 20-document feed takes
    microseconds), so every line goes through the early buffer; the count must still match."""
    before = pipe_folders(tmp_path)
    with IndexFeed(tmp_path / "idx", threads=2) as feed:
        for rec in records(20):
            feed.add(rec)
        assert feed.finish() == 20
    assert pipe_folders(tmp_path) == before, "the pipes' folder is removed"


def test_a_lone_surrogate_is_written_escaped() -> None:
    line = index_line(DocRecord(docid="s", title="t", text="a\ud800b"))
    assert json.loads(line) == {"id": "s", "contents": "t\na\ud800b"} and line.endswith(b"\n")


def test_an_incomplete_index_names_the_documents_without_text(tmp_path: Path) -> None:
    """Anserini skips a document with nothing to index and only counts it: the error names it."""
    blank = [DocRecord(docid=f"blank{i}", title="", text=" \n\t ") for i in range(7)]
    with pytest.raises(QuarryError) as err:
        build_index([*records(5), *blank], tmp_path / "idx", fingerprint="x")
    message = err.value.message
    assert err.value.code == "index_incomplete" and "indexed 5 of 12 documents" in message
    assert "7 had no text to index" in message and "'blank0'" in message and "'blank4'" in message
    assert "and 2 more" in message and "'blank5'" not in message and "title or text" in err.value.hint


def fake_indexer(monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Run `script` (given the pipes' folder) in place of Anserini."""
    monkeypatch.setattr(
        lucene_build, "index_command", lambda pipes, out_dir, threads: [sys.executable, "-c", script, str(pipes)]
    )


def test_an_indexer_that_fails_to_start_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_indexer(monkeypatch, "import sys; print('Error: could not start the JVM'); sys.exit(3)")
    before = pipe_folders(tmp_path)
    with pytest.raises(QuarryError) as info:
        build_index(records(50), tmp_path / "idx", fingerprint="f", threads=2)
    assert info.value.code == "index_failed"
    assert "exit 3" in info.value.message and "could not start the JVM" in info.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == [] and pipe_folders(tmp_path) == before, "nothing left behind"


def test_an_indexer_that_dies_mid_feed_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in opens both pipes, reads a few lines and exits 1: the next write that
    finds no reader fails the build with the indexer's output."""
    fake_indexer(
        monkeypatch,
        "import sys, pathlib\n"
        "pipes = [open(p, 'rb') for p in sorted(pathlib.Path(sys.argv[1]).iterdir())]\n"
        "[pipes[0].readline() for _ in range(3)]\n"
        "print('java.lang.OutOfMemoryError: Java heap space'); sys.exit(1)\n",
    )
    before = pipe_folders(tmp_path)
    many = [DocRecord(docid=f"d{i}", title=f"doc {i}", text="retrieval " * 400) for i in range(20_000)]
    with pytest.raises(QuarryError) as info:
        build_index(many, tmp_path / "idx", fingerprint="f", threads=2)
    assert info.value.code == "index_failed" and "OutOfMemoryError" in info.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == [] and pipe_folders(tmp_path) == before


def test_a_caller_that_fails_mid_feed_leaves_no_indexer_running(tmp_path: Path) -> None:
    before = pipe_folders(tmp_path)
    feed = IndexFeed(tmp_path / "idx", threads=2)
    with pytest.raises(RuntimeError, match="store failed"), feed:
        for rec in records(30):
            feed.add(rec)
        raise RuntimeError("store failed")
    assert feed._proc is not None and feed._proc.poll() is not None, "the indexer was stopped"
    assert pipe_folders(tmp_path) == before


def test_pipes_go_to_the_temp_folder_where_the_filesystem_refuses_fifos(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.mkfifo

    def refuse_beside_the_index(path: Any, mode: int = 0o666) -> None:
        if str(path).startswith(str(tmp_path)):
            raise PermissionError(1, "Operation not permitted", str(path))
        real(path, mode)

    monkeypatch.setattr(os, "mkfifo", refuse_beside_the_index)
    meta = build_index(records(30), tmp_path / "idx", fingerprint="f", threads=2)
    assert meta.documents == 30 and LuceneIndex(tmp_path / "idx").search("retrieval")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_where_no_folder_takes_fifos_the_ingest_fails_with_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the staging folder nor the system's temporary folder accepts named pipes: the
    ingest ends with a message that names both and what to do, creates no collection and leaves
    no pipe folder behind. A feed that is made but never entered leaves nothing either."""
    before = pipe_folders(tmp_path)
    IndexFeed(tmp_path / "never-entered", threads=2)
    assert pipe_folders(tmp_path) == before

    def refuse(path: Any, mode: int = 0o666) -> None:
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(os, "mkfifo", refuse)
    with pytest.raises(QuarryError) as caught:
        ingest(write_jsonl(tmp_path / "docs.jsonl", topic_docs(10)), "nofifo", home=tmp_path / "home")
    err = caught.value
    assert err.code == "no_pipes" and "named pipes" in err.message and "TMPDIR" in err.hint
    assert tempfile.gettempdir() in err.message and "Operation not permitted" in err.message
    assert pipe_folders(tmp_path) == before
    with pytest.raises(QuarryError, match="does not exist"):
        Collection("nofifo", tmp_path / "home").corpus


def test_an_ingest_reports_reading_storing_then_indexing(tmp_path: Path) -> None:
    """Progress a user sees: the store pass counts documents (they are indexed as they are stored);
    the indexer's tail (what its pipes hold, its merge) shows as indexing without a count, then done."""
    seen: list[tuple[str, int, int | None]] = []
    ingest(
        write_jsonl(tmp_path / "docs.jsonl", topic_docs(40)),
        "shown",
        home=tmp_path / "home",
        progress=lambda *a: seen.append(a),
    )
    stages = [stage for stage, _, _ in seen]
    assert stages.index("reading JSONL") < stages.index("storing") < stages.index("indexing")
    size = (tmp_path / "docs.jsonl").stat().st_size
    assert ("reading JSONL", size, size) in seen, "a JSONL file is followed in bytes"
    assert ("storing", 40, 40) in seen
    assert seen[-2:] == [("indexing", 0, None), ("indexing", 40, 40)]


def test_the_progress_bar_shows_bytes_as_sizes_and_documents_as_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    from io import StringIO

    from rich.console import Console

    import quarry.app.terminal as terminal

    shown = StringIO()
    monkeypatch.setattr(terminal, "console", Console(file=shown, force_terminal=True, width=100, color_system=None))
    with terminal.progress_bar(True) as progress:
        progress("reading JSONL", 1_234_567_890, 2_400_000_000)
        progress("storing", 10, 40)
    text = shown.getvalue()
    assert "1.2 GB/2.4 GB" in text and "1234567890" not in text
    assert "10/40" in text
