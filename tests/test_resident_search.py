"""The resident searcher (quarry.resident): `quarry search` and `quarry read` handed to a process that
keeps the JVM and the index readers warm, with the very answer the in-process command gives.

Every command here is the real `quarry` executable in a subprocess, on a real Lucene index: CACM for
the byte-for-byte comparisons, a small collection of the test's own for add, kill, stale-socket and
`quarry down`. Which path answered is read from the resident searcher's log, one line per command it
ran — written before it replies, so counting lines after a command has returned is exact.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.resident.client import LIMITS_NAME, SOCKET_NAME
from quarry.resident.start import start_ready
from tests.fakes import topic_docs, write_jsonl
from tests.resident_kit import fallbacks, ingest, on_a_terminal, quarry, same_either_way, served
from workflows.processes.background import identity, pid_of, pidfile, stop_detached

CACM = Path("/work/shared/datasets/cacm")
WARM_S = 300.0  # a JVM start and a first search, on a loaded machine (waited on a pipe, not polled)


@pytest.fixture(scope="module")
def cacm_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """CACM ingested into a home of its own, with a resident searcher warm on it."""
    home = tmp_path_factory.mktemp("resident") / "h"
    ingest(home, CACM, "cacm")
    assert start_ready(home, "cacm", WARM_S)
    yield home
    stop_detached(home, "resident")


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    """A home with one small collection (`small`) and no resident searcher yet."""
    home = tmp_path / "h"
    ingest(home, write_jsonl(tmp_path / "docs.jsonl", topic_docs(8, term="retrieval")), "small")
    yield home
    stop_detached(home, "resident")


def test_search_and_read_are_byte_identical_resident_or_in_process(cacm_home: Path) -> None:
    for args in (
        ("search", "cacm", "parallel sorting algorithms"),
        ("search", "cacm", "parallel sorting algorithms", "--json"),
        ("search", "cacm", "compiler optimization of loops", "--offset", "6", "--limit", "4"),
        ("search", "cacm", "hash tables", "--k1", "2", "--b", "0.4", "--json"),
        ("read", "cacm", "3075"),
        ("read", "cacm", "3075", "--json"),
        ("read", "cacm", "3075", "--offset", "3", "--limit", "2"),
        ("read", "cacm", "no-such-doc"),  # an error: the same one message and exit status
        ("search", "nosuch", "sorting"),
    ):
        same_either_way(cacm_home, *args)


def test_semantic_search_is_the_same_through_the_resident_searcher(cacm_home: Path) -> None:
    """MiniLM re-scoring of the top BM25 hits (no dense index): the embedder stays warm there. The
    first search embeds the candidates' chunks (and says so on stderr); both paths then read them."""
    args = ("search", "cacm", "sorting on parallel machines", "--channel", "semantic")
    assert quarry(cacm_home, *args, resident=False).returncode == 0
    handed = same_either_way(cacm_home, *args)
    assert handed.returncode == 0 and b"3075" in handed.stdout


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "x" * 130_000,  # Linux caps one argument at 128 KiB: the largest query a shell can pass
        'title:sorting AND (parallel OR "mesh"~2)^3 * -NOT \\ [a TO z] {',
        b"caf\xe9 \xff\xfe sorting",  # not UTF-8
        "\x1b[31mred\x1b[0m \u202e sorting",
    ],
    ids=["empty", "blank", "huge", "lucene-syntax", "bad-utf8", "control-characters"],
)
def test_a_hostile_query_gets_the_same_answer_through_the_resident_searcher(
    cacm_home: Path, query: str | bytes
) -> None:
    handed = same_either_way(cacm_home, "search", "cacm", query)
    if handed.returncode != 0:
        assert handed.stderr.count(b"error") == 1 and b"Traceback" not in handed.stderr


@pytest.mark.parametrize("columns", [100, 0])
def test_a_terminal_sees_the_same_colours_and_text_either_way(cacm_home: Path, columns: int) -> None:
    shown = []
    for args in (
        ("search", "cacm", ""),
        ("search", "cacm", "parallel sorting", "--limit", "2"),
        ("read", "cacm", "3075"),
    ):
        before = served(cacm_home)
        alone = on_a_terminal(cacm_home, *args, resident=False, columns=columns)
        handed = on_a_terminal(cacm_home, *args, resident=True, columns=columns)
        assert handed == alone and served(cacm_home) == before + 1
        shown.append(handed)
    assert b"\x1b[1;31merror" in shown[0] and b"docid=3075" in shown[2]  # coloured on a terminal, as in-process


def test_a_resident_search_imports_none_of_the_heavy_stack(cacm_home: Path) -> None:
    """The client side stays lean: no Lucene, Chroma, torch, Temporal, LangGraph, typer, rich or pydantic."""
    before = served(cacm_home)
    traced = quarry(cacm_home, "search", "cacm", "sorting", resident=True, PYTHONPROFILEIMPORTTIME="1")
    assert traced.returncode == 0 and served(cacm_home) == before + 1
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in traced.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    heavy = {"pyserini", "jnius", "chromadb", "torch", "sentence_transformers", "temporalio", "langgraph"}
    heavy |= {"langchain_core", "numpy", "pydantic", "typer", "rich", "quarry.cli", "stores.records"}
    assert not {m for m in imported if m.split(".")[0] in heavy or m in heavy}


def test_other_settings_are_not_served_by_a_resident_searcher_started_with_different_ones(cacm_home: Path) -> None:
    before = fallbacks(cacm_home)
    alone = quarry(cacm_home, "search", "cacm", "sorting", resident=False, QUARRY_EMBED_THREADS="1")
    handed = quarry(cacm_home, "search", "cacm", "sorting", resident=True, QUARRY_EMBED_THREADS="1")
    assert (handed.stdout, handed.returncode) == (alone.stdout, alone.returncode)
    assert fallbacks(cacm_home) == before + 1


def test_after_add_the_resident_searcher_serves_the_new_version(small_home: Path, tmp_path: Path) -> None:
    assert start_ready(small_home, "small", WARM_S)
    before = same_either_way(small_home, "search", "small", "zanzibar quasicrystal", "--json")
    assert b'"total": 0' in before.stdout
    new = write_jsonl(tmp_path / "new.jsonl", [{"_id": "zq", "title": "Zanzibar quasicrystal", "text": "zanzibar"}])
    added = quarry(small_home, "add", "small", str(new), resident=False)
    assert added.returncode == 0, added.stderr
    after = same_either_way(small_home, "search", "small", "zanzibar quasicrystal", "--json")
    assert b'"docid": "zq"' in after.stdout
    same_either_way(small_home, "read", "small", "zq")


def test_settings_damaged_in_place_are_reported_as_in_process(small_home: Path) -> None:
    """A kill inside an in-place rewrite of the index's settings leaves a damaged file in the same
    version: the resident searcher does not go on with what it read before; it says what in-process says."""
    from stores.collection import Collection
    from stores.lucene import META_FILE

    assert start_ready(small_home, "small", WARM_S)
    same_either_way(small_home, "search", "small", "retrieval")
    (Collection("small", small_home).paths.lucene_dir / META_FILE).write_text('{"k1": 0.9, "b"')
    damaged = same_either_way(small_home, "search", "small", "retrieval")
    assert damaged.returncode == 2 and b"bad_index_meta" in damaged.stderr


def test_the_first_command_answers_in_process_and_starts_one_that_quarry_down_stops(small_home: Path) -> None:
    first = same_either_way(small_home, "search", "small", "retrieval", served_by_resident=False)
    assert first.returncode == 0
    pid = pid_of(small_home, "resident")
    assert pid is not None, "the first command starts a resident searcher in the background"
    running = identity(pid)
    assert running is not None and "quarry.resident.server" in running.cmdline
    down = quarry(small_home, "down", resident=False)
    assert down.returncode == 0 and b"resident: stopped" in down.stdout
    assert identity(pid) is None and not pidfile(small_home, "resident").exists()
    assert not (small_home / "run" / SOCKET_NAME).exists()


def test_quarry_down_stops_a_warm_resident_searcher_and_removes_its_record(small_home: Path) -> None:
    assert start_ready(small_home, "small", WARM_S)
    pid = pid_of(small_home, "resident")
    assert pid is not None
    same_either_way(small_home, "search", "small", "retrieval")
    down = quarry(small_home, "down", resident=False)
    assert down.returncode == 0 and b"resident: stopped" in down.stdout
    assert identity(pid) is None and not pidfile(small_home, "resident").exists()
    assert not (small_home / "run" / SOCKET_NAME).exists()
    again = same_either_way(small_home, "search", "small", "retrieval", served_by_resident=False)
    assert again.returncode == 0


def test_a_killed_resident_searcher_is_replaced_and_the_answer_is_the_same(small_home: Path) -> None:
    assert start_ready(small_home, "small", WARM_S)
    pid = pid_of(small_home, "resident")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)  # started from this process: reaped here, so the pid is gone at once
    assert (small_home / "run" / SOCKET_NAME).exists()  # left behind, refusing connections
    answered = same_either_way(small_home, "search", "small", "retrieval", "--json", served_by_resident=False)
    assert answered.returncode == 0
    replacement = pid_of(small_home, "resident")
    assert replacement is not None and replacement != pid, "the next command starts a new one"


def test_a_stale_socket_with_no_process_falls_back_cleanly(small_home: Path) -> None:
    run = small_home / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(run / SOCKET_NAME))
    stale.close()  # the file stays; nothing listens on it
    os.chmod(run / SOCKET_NAME, 0o600)
    answered = same_either_way(small_home, "search", "small", "retrieval", served_by_resident=False)
    assert answered.returncode == 0 and answered.stderr == b""


def test_a_resident_searcher_answering_garbage_is_not_believed(small_home: Path) -> None:
    run = small_home / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(run / SOCKET_NAME))
    os.chmod(run / SOCKET_NAME, 0o600)
    impostor.listen(4)
    (run / LIMITS_NAME).write_text('{"silence_s": 30}')  # what a running searcher states, so the client asks it
    asked = threading.Event()

    def garbage() -> None:  # JSON, but not a reply: a number for stdout, text for the exit status
        conn, _ = impostor.accept()
        with conn:
            conn.recv(1 << 20)
            asked.set()
            conn.sendall(b'{"stdout": 7, "stderr": "", "code": "x"}')

    answering = threading.Thread(target=garbage, daemon=True)
    answering.start()
    try:
        handed = quarry(small_home, "search", "small", "retrieval", resident=True)
        assert asked.is_set(), "the client asked the impostor (else this tests nothing)"
        alone = quarry(small_home, "search", "small", "retrieval", resident=False)
        assert (handed.stdout, handed.stderr, handed.returncode) == (alone.stdout, alone.stderr, alone.returncode)
        assert handed.returncode == 0 and b"retrieval" in handed.stdout
    finally:
        answering.join(timeout=60)
        impostor.close()


def test_a_socket_path_too_long_for_af_unix_runs_in_process(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 120)
    ingest(home, write_jsonl(tmp_path / "docs.jsonl", topic_docs(3, term="retrieval")), "small")
    answered = quarry(home, "search", "small", "retrieval", resident=True)
    assert answered.returncode == 0 and b"retrieval" in answered.stdout
    assert pid_of(home, "resident") is None and not (home / "logs" / "resident.log").exists()
