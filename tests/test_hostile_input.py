"""Hostile input, table-driven: every case gives one clear message, a non-zero exit where it
failed, never a traceback, and leaves the stores as they were.

Cases cover the command line (search, read, ingest, run, job …), the Python API (submitting a
job), the agent tools and steering. `run` cases fail before any server or worker is started.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from stores.collection import Collection, ingest
from stores.errors import QuarryError
from tests.fakes import topic_docs, write_jsonl

NAME = "hostile-cli"
MB = 1_000_000
BAD_UTF8 = b"dense \xff\xfe retrieval".decode("utf-8", "surrogateescape")  # what the shell hands Python
DOWN = "127.0.0.1:1"  # no Temporal server there


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("hostile-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("hostile-src") / "c.jsonl", topic_docs(12)), NAME, home=home)
    return home


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile-files")
    (d / "empty.jsonl").write_text("")
    (d / "malformed.jsonl").write_text('{"_id": "a", "title": "x"}\n{"_id": "b" "title": "y"}\n')
    (d / "truncated.jsonl").write_text('{"_id": "a", "title": "x"}\n{"_id": "b", "title": "dense re')
    (d / "latin1.jsonl").write_bytes('{"_id": "a", "title": "café"}\n'.encode("latin-1"))
    (d / "dupes.jsonl").write_text('{"_id": "a", "title": "x"}\n{"_id": "a", "title": "y"}\n')
    (d / "notobject.jsonl").write_text("[1, 2, 3]\n")
    (d / "badyear.jsonl").write_text('{"_id": "a", "title": "x", "metadata": {"year": "soon"}}\n')
    (d / "huge.jsonl").write_text('{"_id": "big", "text": "' + "word " * (11 * MB // 5) + '"}\n')
    loop = d / "loop"
    loop.mkdir()
    (loop / "note.txt").write_text("A note\nabout retrieval")
    os.symlink(loop, loop / "again")  # a symlink loop inside a text folder
    (d / "nothing").mkdir()
    outside = d / "outside"  # nothing but what must not be read: links out of the folder, a FIFO, an undecodable name
    outside.mkdir()
    os.symlink("/proc/self/environ", outside / "env.txt")
    os.symlink("/etc/passwd", outside / "passwd.txt")
    os.mkfifo(outside / "pipe.md")
    (Path(os.fsdecode(os.fsencode(outside) + b"/caf\xe9.txt"))).write_text("Cafe\nnotes")
    os.mkfifo(d / "fifo.jsonl")
    os.symlink("/proc/self/environ", d / "environ.txt")
    return {p.stem if p.is_file() else p.name: p for p in d.iterdir()}


def cli(home: Path, *args: str):
    return CliRunner().invoke(app, ["--home", str(home), *args])


# (case id, CLI arguments given the home and files, expected error code or None for success)
CLI_CASES: list[tuple[str, Any, str | None]] = [
    ("search-empty", lambda f: ["search", NAME, ""], "empty_query"),
    ("search-blank", lambda f: ["search", NAME, "   \t "], "empty_query"),
    ("search-1MB", lambda f: ["search", NAME, "retrieval " * (MB // 10)], "too_long"),
    ("search-30k-words", lambda f: ["search", NAME, "retrieval " * 3000], None),
    ("search-binary", lambda f: ["search", NAME, "\x00\x01\x02\x7f"], "empty_query"),
    ("search-bad-utf8", lambda f: ["search", NAME, BAD_UTF8], "bad_text"),
    ("search-lucene-syntax", lambda f: ["search", NAME, 'title:(retrieval AND "x ~2 *:*'], None),
    ("search-unknown-collection", lambda f: ["search", "nope", "retrieval"], "no_collection"),
    ("search-dotdot-name", lambda f: ["search", "../etc", "retrieval"], "bad_name"),
    ("search-offset-zero", lambda f: ["search", NAME, "retrieval", "--offset", "0"], "usage"),
    ("search-offset-negative", lambda f: ["search", NAME, "retrieval", "--offset", "-5"], "usage"),
    ("search-offset-huge", lambda f: ["search", NAME, "retrieval", "--offset", str(10**20)], "offset_past_end"),
    ("search-limit-huge", lambda f: ["search", NAME, "retrieval", "--offset", "2", "--limit", str(10**20)], None),
    ("search-bad-channel", lambda f: ["search", NAME, "retrieval", "--channel", "sql"], "bad_option"),
    ("read-unknown-docid", lambda f: ["read", NAME, "no-such-doc"], "unknown_docid"),
    ("read-path-docid", lambda f: ["read", NAME, "../../etc/passwd"], "unknown_docid"),
    ("read-nul-docid", lambda f: ["read", NAME, "\x00"], "unknown_docid"),
    ("read-offset-huge", lambda f: ["read", NAME, "t001", "--offset", str(10**12)], "offset_past_end"),
    ("ingest-missing-path", lambda f: ["ingest", "/no/such/file.jsonl", "--name", "x1"], "not_found"),
    ("ingest-empty-file", lambda f: ["ingest", str(f["empty"]), "--name", "x2"], "bad_input"),
    ("ingest-malformed", lambda f: ["ingest", str(f["malformed"]), "--name", "x3"], "bad_input"),
    ("ingest-truncated", lambda f: ["ingest", str(f["truncated"]), "--name", "x4"], "bad_input"),
    ("ingest-latin1", lambda f: ["ingest", str(f["latin1"]), "--name", "x5"], "bad_input"),
    ("ingest-duplicate-ids", lambda f: ["ingest", str(f["dupes"]), "--name", "x6"], "bad_input"),
    ("ingest-not-objects", lambda f: ["ingest", str(f["notobject"]), "--name", "x7"], "bad_input"),
    ("ingest-bad-year", lambda f: ["ingest", str(f["badyear"]), "--name", "x8"], "bad_input"),
    ("ingest-11MB-document", lambda f: ["ingest", str(f["huge"]), "--name", "x9"], "bad_input"),
    ("ingest-symlink-loop", lambda f: ["ingest", str(f["loop"]), "--name", "x10"], None),
    ("ingest-empty-folder", lambda f: ["ingest", str(f["nothing"]), "--name", "x11"], "bad_input"),
    ("ingest-name-newline", lambda f: ["ingest", str(f["dupes"]), "--name", "nl\n"], "bad_name"),
    ("ingest-name-absolute", lambda f: ["ingest", str(f["dupes"]), "--name", "/etc"], "bad_name"),
    ("ingest-name-dotdot", lambda f: ["ingest", str(f["dupes"]), "--name", ".."], "bad_name"),
    ("run-empty-intent", lambda f: ["run", NAME, ""], "empty_intent"),
    ("run-blank-intent", lambda f: ["run", NAME, " \n "], "empty_intent"),
    ("run-1MB-intent", lambda f: ["run", NAME, "retrieval " * (MB // 10)], "too_long"),
    ("run-bad-utf8-intent", lambda f: ["run", NAME, BAD_UTF8], "bad_text"),
    ("run-budget-zero", lambda f: ["run", NAME, "retrieval", "--budget", "0"], "bad_budget"),
    ("run-budget-negative", lambda f: ["run", NAME, "retrieval", "--budget", "-5"], "bad_budget"),
    ("run-budget-inf", lambda f: ["run", NAME, "retrieval", "--budget", "inf"], "bad_budget"),
    ("run-budget-1e20", lambda f: ["run", NAME, "retrieval", "--budget", "1e20"], "bad_budget"),
    ("run-budget-nan", lambda f: ["run", NAME, "retrieval", "--budget", "nan"], "bad_budget"),
    ("run-unknown-collection", lambda f: ["run", "nope", "retrieval"], "no_collection"),
    ("run-bad-mode", lambda f: ["run", NAME, "retrieval", "--mode", "essay"], "bad_mode"),
    ("run-bad-policy", lambda f: ["run", NAME, "retrieval", "--policy", "magic"], "bad_policy"),
    ("run-rounds-zero", lambda f: ["run", NAME, "retrieval", "--rounds", "0"], "usage"),
    ("job-stop-unknown", lambda f: ["job", "stop", "job-nope", "--temporal-address", DOWN], "no_server"),
    ("job-progress-unknown", lambda f: ["job", "progress", "job-nope", "--temporal-address", DOWN], "no_server"),
    ("job-steer-bad-utf8", lambda f: ["job", "steer", "job-nope", BAD_UTF8], "bad_text"),
    ("job-steer-empty", lambda f: ["job", "steer", "job-nope", "  "], "empty_text"),
    ("job-result-unknown", lambda f: ["job", "result", "job-nope"], "unknown_job"),
    ("job-show-unknown", lambda f: ["job", "show", "job-nope"], "unknown_job"),
    ("job-list-limit-huge", lambda f: ["job", "list", "--limit", str(10**20)], "usage"),
    ("trace-unknown", lambda f: ["trace", "job-nope"], "unknown_job"),
    ("ingest-links-out-fifo-bad-name", lambda f: ["ingest", str(f["outside"]), "--name", "x12"], "bad_input"),
    ("ingest-fifo-jsonl", lambda f: ["ingest", str(f["fifo.jsonl"]), "--name", "x13"], "bad_input"),
    ("ingest-proc-environ-link", lambda f: ["ingest", str(f["environ"]), "--name", "x14"], "bad_input"),
    ("add-links-out-fifo-bad-name", lambda f: ["add", NAME, str(f["outside"])], "bad_input"),
    # issue 19 item 6: price tables and budgets that could never stop a job (see tests/test_faults_cli.py)
    (
        "run-prices-nan",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "nan", '{"openai:m": {"input": NaN, "output": 1}}')],
        "bad_prices",
    ),
    (
        "run-prices-infinity",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "inf", '{"openai:m": {"input": 1, "output": Infinity}}')],
        "bad_prices",
    ),
    (
        "run-prices-negative",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "neg", '{"openai:m": {"input": -1, "output": 1}}')],
        "bad_prices",
    ),
    (
        "run-prices-1e400",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "big", '{"openai:m": {"input": 1e400, "output": 1}}')],
        "bad_prices",
    ),
    (
        "run-prices-boolean",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "bool", '{"openai:m": {"input": false, "output": 1}}')],
        "bad_prices",
    ),
    (
        "run-prices-misspelt",
        lambda f: [*LLM_RUN, "--prices", _prices(f, "typo", '{"openai:m": {"inptu": 1, "output": 1}}')],
        "bad_prices",
    ),
    ("run-prices-missing-file", lambda f: [*LLM_RUN, "--prices", "/no/such/prices.json"], "bad_prices"),
    ("run-max-dollars-inf", lambda f: [*LLM_RUN, "--max-dollars", "inf"], "bad_budget"),
    ("run-max-dollars-nan", lambda f: [*LLM_RUN, "--max-dollars", "nan"], "usage"),
    ("run-max-tokens-nan", lambda f: [*LLM_RUN, "--max-tokens", "nan"], "usage"),
    ("eval-budget-inf", lambda f: ["eval", NAME, "--system", "bm25", "--budget", "inf"], "bad_budget"),
    # issue 19 item 8: untrusted text in an error message stays text
    (
        "ingest-path-markup-escapes",
        lambda f: ["ingest", "/no/such/[/x]\x1b]0;t\x07.jsonl", "--name", "x20"],
        "not_found",
    ),
    ("read-docid-markup-escapes", lambda f: ["read", NAME, "[/x]\x1b[2J\x9b"], "unknown_docid"),
]


@pytest.mark.parametrize("case, args, code", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_hostile_command_line_input(home: Path, files, case: str, args, code: str | None) -> None:
    result = cli(home, *args(files))
    output = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output
    if code is None:
        assert result.exit_code == 0, output[-500:]
    elif code == "usage":  # rejected by the option parser, naming the option
        assert result.exit_code == 2 and ("Invalid value" in output or "not in the range" in output), output
    else:
        assert result.exit_code != 0 and f"({code})" in output, output[-800:]
        assert "hint" in output


def test_nothing_was_written_by_the_hostile_cases(home: Path, files) -> None:
    """Runs after the table (same module): the collection is as ingested, no other was created,
    and no job was recorded."""
    col = Collection(NAME, home)
    assert col.corpus.count() == 12 and len(col.lucene.search("retrieval")) == 12
    made = sorted(p.name for p in (home / "collections").iterdir() if p.is_dir())
    assert made == [NAME, "x10"], "only the symlink-loop folder (one valid note) became a collection"
    from stores.jobs import JobStore

    assert JobStore(home / "jobs.sqlite").list() == []


# -- the Python API and the tools ------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, code",
    [
        ("intent", "x" * MB, "too_long"),
        ("intent", "", "empty_intent"),
        ("intent", BAD_UTF8, "bad_text"),
        ("config.max_seconds", float("inf"), "bad_budget"),
        ("config.max_seconds", 0, "bad_budget"),
        ("budget_seconds", 0, "bad_budget"),  # the field of inputs written before the budget moved into the config
        ("collection", "../x", "bad_name"),
        ("mode", "poem", "bad_mode"),
        ("policy", "oracle", "bad_policy"),
    ],
)
def test_the_python_api_refuses_bad_jobs_before_submitting(field: str, value: Any, code: str) -> None:
    from workflows.client import submit
    from workflows.shared import JobInput

    inp = JobInput(job_id="job-x", collection="lit", intent="retrieval")
    owner, name = (inp.config, field.removeprefix("config.")) if field.startswith("config.") else (inp, field)
    setattr(owner, name, value)
    with pytest.raises(QuarryError) as info:
        asyncio.run(submit(None, inp))  # no client needed: the check comes first
    assert info.value.code == code and info.value.hint


def test_tools_answer_misuse_with_repair_hints(home: Path) -> None:
    from nodes.tools.corpus import ToolSession

    col = Collection(NAME, home)
    tools = ToolSession(col.lucene, col.corpus)
    cases = [
        tools.read_search_results("r", "s999"),
        tools.read_search_results("r", None, 1, 5),
        tools.read_document("r", "t001", -1),
        tools.read_document("r", "t001", 1, "ten"),
        tools.search("r", {"query": "x"}),
        tools.search("r", "x", "sql"),
        tools.expand_citations("r", "t001"),
    ]
    assert [c.code for c in cases] == [
        "unknown_search_id",
        "unknown_search_id",
        "bad_offset",
        "bad_limit",
        "empty_query",
        "bad_channel",
        "no_citations",
    ]
    assert all(c.hint for c in cases)


def test_a_failed_job_makes_job_result_exit_non_zero(tmp_path: Path) -> None:
    from stores.jobs import JobStore

    jobs = JobStore(tmp_path / "jobs.sqlite")
    for job_id, status, ranked in [
        ("job-failed", "failed", []),
        ("job-empty", "budget_exhausted", []),
        ("job-ok", "completed", [{"docid": "a", "title": "A", "score": 1.0, "evidence": []}]),
    ]:
        jobs.create(job_id, "lit", "x", workflow_id=job_id, trace_id=None)
        jobs.finish(
            job_id,
            {
                "job_id": job_id,
                "status": status,
                "ranked": ranked,
                "error": "QuarryError: gone" if status == "failed" else None,
            },
            {"collection": "lit", "intent": "x"},
        )
    codes = {j: cli(tmp_path, "job", "result", j, "--json").exit_code for j in ("job-failed", "job-empty", "job-ok")}
    assert codes == {"job-failed": 1, "job-empty": 1, "job-ok": 0}


def test_a_taken_ui_port_is_named_at_once_and_stale_records_are_cleared(tmp_path: Path) -> None:
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        began = time.monotonic()
        result = cli(tmp_path, "server", "--port", str(free), "--ui-port", str(taken))
        took = time.monotonic() - began
    assert result.exit_code != 0 and "(port_taken)" in result.output
    assert f"port {taken}" in result.output and took < 2.0
    assert not (tmp_path / "run" / "temporal-server.pid").exists()
    (tmp_path / "run").mkdir(exist_ok=True)
    (tmp_path / "run" / "worker.pid").write_text("999999999")  # a process that is gone
    down = cli(tmp_path, "down")
    assert down.exit_code == 0 and "worker: not running" in down.output
    assert not (tmp_path / "run" / "worker.pid").exists()


def test_every_job_command_on_a_finished_job(tmp_path: Path) -> None:
    """Stop, steer, cancel and terminate refuse a finished job in one line (exit 1); progress,
    watch, show, result and export answer from the job store without any server."""
    from stores.jobs import JobStore

    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.create("job-done", "lit", "graph networks", workflow_id="job-done", trace_id=None)
    jobs.finish(
        "job-done",
        {
            "job_id": "job-done",
            "status": "completed",
            "collection": "lit",
            "intent": "graph networks",
            "ranked": [
                {
                    "docid": "gnn01",
                    "title": "GNN",
                    "year": 2016,
                    "score": 0.8,
                    "rank_score": 0.03,
                    "evidence": [],
                    "reason": "r",
                    "weak": True,
                }
            ],
        },
        {"collection": "lit", "intent": "graph networks"},
    )
    down = ["--temporal-address", DOWN]
    for args in (
        ["stop", "job-done", *down],
        ["steer", "job-done", "not surveys", *down],
        ["cancel", "job-done", *down],
        ["terminate", "job-done", *down],
    ):
        res = cli(tmp_path, "job", *args)
        assert res.exit_code == 1 and "(job_finished)" in res.output and "Traceback" not in res.output, (
            args,
            res.output,
        )
        assert len([line for line in res.output.splitlines() if line.startswith("error")]) == 1
    for args in (
        ["progress", "job-done", *down],
        ["watch", "job-done", *down],
        ["show", "job-done"],
        ["result", "job-done"],
        ["export", "job-done", "--format", "csv"],
    ):
        res = cli(tmp_path, "job", *args)
        assert res.exit_code == 0 and "Traceback" not in res.output, (args, res.output)
    assert "1 weak match(es)" in cli(tmp_path, "job", "result", "job-done").output
    assert "GNN" in cli(tmp_path, "job", "result", "job-done", "--full").output


LLM_RUN = ["run", NAME, "retrieval", "--policy", "llm", "--model", "openai:m"]


def _prices(files: dict[str, Path], name: str, text: str) -> str:
    """A price table file beside the other hostile files (for the `--prices` cases above)."""
    path = files["empty"].parent / f"prices-{name}.json"
    path.write_text(text)
    return str(path)
