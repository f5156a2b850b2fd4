"""Faults at the command line's edges (issue 19, items 6 and 8): price tables and budgets that
could never stop a job, untrusted text that crashed rich or drove the terminal, and a full disk.

Every case runs the real command in-process (typer's CliRunner) or the real render function, and
asserts one message with its code, a non-zero exit and no traceback — or, for printing, that no
byte a terminal would obey (ESC, BEL, C1, bidi overrides, other controls) and no MarkupError
reaches the output, while the text itself is still shown (as a visible escape).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from stores.errors import QuarryError
from tests.fakes import topic_docs, write_jsonl

DOWN = "127.0.0.1:1"  # no Temporal server there
# Rich markup that is not a tag rich knows ([/z] closes nothing: MarkupError), an OSC window title
# ended by BEL, a clear-screen CSI, a one-byte C1 CSI, a right-to-left override, BS and CR.
HOSTILE = "[/z] [bold]b \x1b]0;PWNED\x07 \x1b[2J \x9b31m \u202egnp.exe\u202c \x08\rX"
REST = HOSTILE.removeprefix("[/")  # a file name cannot hold "/": "[" is a folder, REST the file in it
RAW = "\x1b]0;PWNED\x07"  # the part of HOSTILE that every exact copy (JSON) must keep
DOCID = "ok_" + re.sub(r"\s", "_", HOSTILE)  # the document file's id: its path, whitespace as "_"
RECORD_ID = "[/x]_" + re.sub(r"\s", "_", HOSTILE)  # record ids hold no whitespace
# What must never reach a terminal raw (tab and newline are fine).
OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_inert(text: str, *, shown: bool = True) -> None:
    """No character a terminal would obey; with `shown`, the hostile text is visible as escapes."""
    bad = OBEYED.search(text)
    assert bad is None, f"raw {bad.group()!r} at {bad.start()}: {text[max(0, bad.start() - 80) : bad.start() + 40]!r}"
    if shown:
        assert "\\x1b]0;PWNED\\x07" in text and "[/z]" in text, text[-1500:]


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def cli(home: Path, *args: str):
    return CliRunner().invoke(app, ["--home", str(home), *args])


def one_message(result, code: str) -> None:
    """Exit non-zero, no traceback, exactly one `error (code)` line and a hint."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output[-800:]
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and f"({code})" in errors[0], result.output[-800:]
    assert "hint" in result.output


@pytest.fixture()
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home of this test alone: whatever a refused command wrote would show in it."""
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "home"))  # the --home callback exports it; restored after
    return tmp_path / "home"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("faults-home")
    with pytest.MonkeyPatch.context() as mp:  # the app's --home callback exports QUARRY_HOME
        mp.setenv("QUARRY_HOME", str(home))
        yield home


# -- item 6: price tables and budgets ---------------------------------------------------------------

MODEL = "openai:my-model"
BAD_PRICE_TABLES = {  # case: (file text, words the message must contain)
    "nan": ('{"openai:my-model": {"input": NaN, "output": 0.8}}', ["openai:my-model", "input", "finite"]),
    "infinity": ('{"openai:my-model": {"input": 0.2, "output": Infinity}}', ["openai:my-model", "output", "finite"]),
    "negative": ('{"openai:my-model": {"input": -0.2, "output": 0.8}}', ["openai:my-model", "input", "-0.2"]),
    "1e400": (
        '{"openai:my-model": {"input": 0.2, "cached_input": 1e400, "output": 0.8}}',
        ["openai:my-model", "cached_input", "finite"],
    ),
    "absurd": ('{"openai:my-model": {"input": 2e9, "output": 0.8}}', ["openai:my-model", "input", "10000"]),
    "boolean": ('{"openai:my-model": {"input": true, "output": 0.8}}', ["openai:my-model", "input", "true"]),
    "string": ('{"openai:my-model": {"input": "0.2", "output": 0.8}}', ["openai:my-model", "input"]),
    "misspelt-key": ('{"openai:my-model": {"input": 0.2, "ouput": 0.8}}', ["openai:my-model", "ouput", "unknown key"]),
    "missing-output": ('{"openai:my-model": {"input": 0.2}}', ["openai:my-model", "output", "missing"]),
    "row-not-object": ('{"openai:my-model": [0.2, 0.8]}', ["openai:my-model"]),
    "duplicate-model": (
        '{"openai:my-model": {"input": 0.2, "output": 0.8}, "openai:my-model": {"input": 0, "output": 0}}',
        ["openai:my-model", "twice"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_PRICE_TABLES))
def test_a_bad_price_table_is_refused_before_anything_is_submitted(fresh_home: Path, tmp_path: Path, case: str) -> None:
    text, words = BAD_PRICE_TABLES[case]
    table = tmp_path / "prices.json"
    table.write_text(text)
    result = cli(
        fresh_home,
        "run",
        "nope",
        "dense retrieval",
        "--policy",
        "llm",
        "--model",
        MODEL,
        "--max-dollars",
        "0.3",
        "--prices",
        str(table),
    )
    one_message(result, "bad_prices")
    for word in words:
        assert word in result.output, (word, result.output)
    assert not (fresh_home / "jobs.sqlite").exists() and not (fresh_home / "run").exists(), (
        "nothing submitted or started"
    )


def test_the_price_schema_in_the_python_api(tmp_path: Path) -> None:
    """load_prices refuses each bad table (the same schema `quarry eval --prices` reads) and keeps
    a good one; cached_input may be left out."""
    from nodes.job.config import Price
    from quarry.app.options import load_prices

    table = tmp_path / "prices.json"
    for case, (text, _) in BAD_PRICE_TABLES.items():
        table.write_text(text)
        with pytest.raises(QuarryError) as info:
            load_prices(table)
        assert info.value.code == "bad_prices" and info.value.hint, case
    table.write_text('{"openai:my-model": {"input": 0, "output": 1200.5}}')
    assert load_prices(table)[MODEL] == Price(0.0, 0.0, 1200.5)


@pytest.mark.parametrize(
    "args, code",
    [
        (["--max-dollars", "nan"], "usage"),
        (["--max-dollars", "inf"], "bad_budget"),
        (["--max-dollars", "1e400"], "bad_budget"),
        (["--max-dollars", "-1"], "usage"),
        (["--max-tokens", "nan"], "usage"),
        (["--max-tokens", "-5"], "usage"),
        (["--max-tokens", "inf"], "usage"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_model_budgets_that_could_never_stop_a_job_are_refused(fresh_home: Path, args: list[str], code: str) -> None:
    result = cli(fresh_home, "run", "nope", "dense retrieval", "--policy", "llm", "--model", MODEL, *args)
    if code == "usage":
        assert result.exit_code == 2 and "Invalid value" in result.output and "Traceback" not in result.output
    else:
        one_message(result, code)
    assert not (fresh_home / "jobs.sqlite").exists() and not (fresh_home / "run").exists()


@pytest.mark.parametrize(
    "args", [["--budget", "inf"], ["--budget", "1e400"], ["--max-dollars", "inf"]], ids=lambda v: " ".join(v)
)
def test_eval_refuses_the_same_budgets(fresh_home: Path, args: list[str]) -> None:
    """typer's `min=` refuses NaN and negatives but lets Infinity through."""
    result = cli(fresh_home, "eval", "nope", "--system", "llm", "--model", MODEL, *args)
    one_message(result, "bad_budget")


@pytest.mark.parametrize(
    "args",
    [
        ["search", "nope", "x", "--k1", "nan"],
        ["search", "nope", "x", "--b", "inf"],
        ["index", "nope", "--k1", "inf"],
        ["eval", "nope", "--system", "bm25", "--k1", "nan"],
    ],
    ids=lambda v: " ".join(v),
)
def test_bm25_parameters_that_make_every_score_nan_are_refused(fresh_home: Path, args: list[str]) -> None:
    one_message(cli(fresh_home, *args), "bad_option")


def test_the_python_api_refuses_non_finite_budgets() -> None:
    from quarry.app.options import job_config

    for kwargs in (
        {"max_dollars": float("nan")},
        {"max_dollars": -0.5},
        {"max_dollars": True},
        {"max_tokens": 0},
        {"max_tokens": 1.5},
        {"max_tokens": True},
    ):
        with pytest.raises(QuarryError) as info:
            job_config("llm", MODEL, None, **kwargs)
        assert info.value.code == "bad_budget", kwargs


# -- item 8 (c): a full disk ----------------------------------------------------------------------------


def _disk_full_os(*_a: Any, **_k: Any) -> None:
    raise OSError(28, "No space left on device", "/data/quarry/collections/c/corpus.sqlite")


def _disk_full_sqlite(*_a: Any, **_k: Any) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def _wrapped_disk_full(*_a: Any, **_k: Any) -> None:
    try:
        _disk_full_os()
    except OSError as exc:
        raise RuntimeError("the writer thread failed") from exc


@pytest.mark.parametrize(
    "target, raiser, command",
    [
        ("stores.corpus.insert_records", _disk_full_os, "ingest"),
        ("stores.corpus.insert_records", _disk_full_sqlite, "ingest"),
        ("stores.corpus.insert_records", _wrapped_disk_full, "ingest"),
        ("stores.jobs.JobStore.list", _disk_full_sqlite, "job list"),
    ],
    ids=["ingest-oserror-28", "ingest-sqlite-full", "ingest-wrapped", "job-list-sqlite-full"],
)
def test_a_full_disk_is_one_message_for_any_command(
    tmp_path: Path, monkeypatch, target: str, raiser, command: str
) -> None:
    src = write_jsonl(tmp_path / "c.jsonl", topic_docs(3))
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(target, raiser)
    args = ["ingest", str(src), "--name", "full", "--no-index"] if command == "ingest" else ["job", "list"]
    result = cli(tmp_path / "home", *args)
    one_message(result, "disk_full")
    assert "free space" in result.output and "QUARRY_HOME" in result.output
    if raiser is _disk_full_os:
        assert "corpus.sqlite" in result.output  # the path, when the error names it
    if command == "ingest":
        assert cli(tmp_path / "home", "collections").output.split() == [], "nothing was changed"


def test_scripts_print_a_full_disk_as_one_line(monkeypatch, capsys) -> None:
    """run_script (evals/ and bench/ scripts, the `quarry` executable): one line, exit 2, and a
    QuarryError message with escapes in it printed inert."""
    import workflows.processes.exit as errors

    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(errors, "leave", leave)
    with pytest.raises(SystemExit) as info:
        errors.run_script(_disk_full_sqlite)
    assert info.value.code == 2
    printed = capsys.readouterr().err
    assert printed.startswith("error (disk_full): the disk is full") and "Traceback" not in printed

    def hostile() -> None:
        raise QuarryError("not_found", f"no such file: {HOSTILE}", "check the path")

    with pytest.raises(SystemExit):
        errors.run_script(hostile)
    printed = capsys.readouterr().err
    assert_inert(printed)
    with pytest.raises(ValueError):  # anything else is not hidden
        errors.run_script(lambda: int("x"))


def test_export_to_a_full_disk_leaves_no_half_file(printing_home, tmp_path: Path) -> None:
    """`job export -o FILE` on a really full disk (a tmpfs filled to the last byte): one message,
    and the previous FILE is whole (the export is written to a temporary file, then renamed)."""
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True, capture_output=True)
    try:
        target = mount / "refs.bib"
        target.write_text("previous")
        with (mount / "filler").open("wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"\0" * 4096)
        result = cli(printing_home["home"], "job", "export", "job-done", "-o", str(target))
        one_message(result, "disk_full")
        assert target.read_text() == "previous" and sorted(p.name for p in mount.iterdir()) == ["filler", "refs.bib"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, capture_output=True)


def test_other_errors_are_not_called_a_full_disk(tmp_path: Path, monkeypatch) -> None:
    def broken(*_a: Any, **_k: Any) -> None:
        raise OSError(13, "Permission denied", "/x")

    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("stores.jobs.JobStore.list", broken)
    result = cli(tmp_path / "home", "job", "list")
    assert isinstance(result.exception, PermissionError) and "(disk_full)" not in result.output


def test_a_really_full_disk_during_ingest(tmp_path: Path) -> None:
    """A 2 MB tmpfs as QUARRY_HOME and a 3 MB corpus: the real ENOSPC / SQLITE_FULL, as root."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True, capture_output=True)
    try:
        docs = [
            {"_id": f"d{i}", "title": f"doc {i}", "text": " ".join(f"w{i}x{j}" for j in range(700))} for i in range(600)
        ]
        src = write_jsonl(tmp_path / "big.jsonl", docs)
        assert src.stat().st_size > 3_000_000
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("QUARRY_HOME", str(mount / "home"))
            result = cli(mount / "home", "ingest", str(src), "--name", "big", "--no-index")
            one_message(result, "disk_full")
            assert f"writing under {mount / 'home'}" in result.output or str(mount) in result.output
            assert cli(mount / "home", "collections").output.split() == []
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, capture_output=True)


# -- item 8 (a, b): untrusted text on every printing path ----------------------------------------------


def hostile_result(job_id: str) -> dict[str, Any]:
    """A finished job's result with the hostile text in every field a user, a document or a model writes."""
    return {
        "job_id": job_id,
        "status": "completed",
        "collection": "lit",
        "intent": f"intent {HOSTILE}",
        "mode": "answer",
        "policy": "llm",
        "models": {"model": f"openai:{HOSTILE}"},
        "stop_reason": HOSTILE,
        "rounds": 1,
        "fallbacks": [{"step": HOSTILE, "reason": HOSTILE}],
        "answer": {"explanation": f"E {HOSTILE}", "exact_answer": HOSTILE, "confidence": 80},
        "references": [{"docid": HOSTILE, "title": HOSTILE, "lines": [1, 2], "quote": HOSTILE}],
        "citations": {"checked": 2, "removed": [{"docid": HOSTILE, "reason": HOSTILE}], "hallucination_rate": 0.5},
        "checklist": [{"kind": "topic", "text": HOSTILE}],
        "ranked": [
            {
                "docid": f"d {HOSTILE}",
                "title": f"T {HOSTILE}",
                "year": 2020,
                "score": 0.8,
                "rank_score": 0.03,
                "reason": HOSTILE,
                "weak": False,
                "evidence": [{"item": HOSTILE, "score": 4.0, "lines": [1, 2], "chunk": f"C {HOSTILE}"}],
            },
            {
                "docid": "w1",
                "title": HOSTILE,
                "score": 0.1,
                "rank_score": 0.01,
                "reason": HOSTILE,
                "weak": True,
                "evidence": [],
            },
        ],
        "trajectory": {"surfaced": 3, "previewed": [HOSTILE], "opened": [], "cited": []},
        "usage": {
            "calls": 1,
            "input_tokens": 10,
            "output_tokens": 5,
            "dollars": 0.0,
            "unpriced": [f"openai:{HOSTILE}"],
        },
    }


def hostile_progress() -> dict[str, Any]:
    return {
        "job_id": "job-run",
        "status": "running",
        "policy": HOSTILE,
        "round": 1,
        "steps": 2,
        "node": HOSTILE,
        "candidates": 3,
        "tool_calls": 4,
        "budget": {"seconds": 60, "used": 1.0, "left": 59.0},
        "top": [{"docid": f"d {HOSTILE}", "score": 0.5, "title": HOSTILE}],
        "searches": [{"round": 1, "channel": HOSTILE, "query": f"q {HOSTILE}"}],
        "usage": {"calls": 1, "input_tokens": 3, "output_tokens": 1, "dollars": 0.0, "unpriced": [HOSTILE]},
        "fallbacks": [{"step": HOSTILE, "reason": HOSTILE}],
    }


@pytest.fixture(scope="module")
def printing_home(home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The home with: a folder collection whose file names (so docids) and titles are hostile, a
    bad file and an unsupported one; a JSONL file with hostile ids (one record with neither title
    nor text, which ingest warns about by id); a finished and a running job with hostile text."""
    from stores.jobs import JobStore

    folder = tmp_path_factory.mktemp("hostile-folder")
    for stem in ("ok", "empty", "odd"):
        (folder / f"{stem} [").mkdir()
    (folder / "ok [" / f"{REST}.txt").write_text(
        f"Alpha {HOSTILE}\n\nalpha retrieval text {HOSTILE}\n", encoding="utf-8"
    )  # docid f"ok {HOSTILE}"
    (folder / "empty [" / f"{REST}.txt").write_text("")
    (folder / "odd [" / f"{REST}.xyz").write_text("?")
    records = write_jsonl(
        tmp_path_factory.mktemp("hostile-jsonl") / "c.jsonl",
        [
            {"_id": RECORD_ID, "title": "", "text": ""},
            {"_id": "[/x]", "title": f"Beta {HOSTILE}", "text": "beta retrieval"},
        ],
    )
    jobs = JobStore(home / "jobs.sqlite")
    jobs.create("job-done", "lit", f"intent {HOSTILE}", workflow_id="job-done", trace_id=None)
    jobs.finish("job-done", hostile_result("job-done"), {"collection": "lit", "intent": f"intent {HOSTILE}"})
    jobs.create("job-run", "lit", f"intent {HOSTILE}", workflow_id="job-run", trace_id=None)
    jobs.checkpoint(
        "job-run",
        {
            "collection": "lit",
            "intent": f"intent {HOSTILE}",
            "round": 1,
            "plan": {"checklist": [{"kind": HOSTILE, "text": HOSTILE}]},
            "usage": {"calls": 1, "input_tokens": 1, "output_tokens": 1, "unpriced": [HOSTILE]},
        },
    )
    return {"home": home, "folder": folder, "records": records}


# (case, arguments given the fixture's paths, expected error code or None, whether the hostile text must show)
PRINTING_CASES: list[tuple[str, Any, str | None, bool]] = [
    ("ingest-folder", lambda p: ["ingest", str(p["folder"]), "--name", "hfolder"], None, True),
    ("ingest-folder-again", lambda p: ["ingest", str(p["folder"]), "--name", "hfolder"], None, False),
    (
        "ingest-folder-strict",
        lambda p: ["ingest", str(p["folder"]), "--name", "hstrict", "--strict"],
        "bad_input",
        True,
    ),
    ("ingest-jsonl", lambda p: ["ingest", str(p["records"]), "--name", "hjsonl", "--no-index"], None, True),
    ("reingest-jsonl-unchanged", lambda p: ["ingest", str(p["records"]), "--name", "hjsonl", "--no-index"], None, True),
    (
        "ingest-missing-path",
        lambda p: ["ingest", str(p["folder"] / "ok [" / f"{REST} gone.jsonl"), "--name", "x"],
        "not_found",
        True,
    ),
    (
        "add-missing-path",
        lambda p: ["add", "hfolder", str(p["folder"] / "ok [" / f"{REST} gone.md")],
        "not_found",
        True,
    ),
    ("search-hostile-title", lambda p: ["search", "hfolder", "alpha"], None, True),
    ("search-hostile-title-json", lambda p: ["search", "hfolder", "alpha", "--json"], None, False),
    ("read-hostile-docid", lambda p: ["read", "hfolder", DOCID], None, True),
    ("read-unknown-hostile-docid", lambda p: ["read", "hfolder", f"no {HOSTILE}"], "unknown_docid", False),
    ("job-list", lambda p: ["job", "list", "--temporal-address", DOWN], None, False),
    ("job-list-json", lambda p: ["job", "list", "--json", "--temporal-address", DOWN], None, False),
    ("job-show-running", lambda p: ["job", "show", "job-run"], None, True),
    ("job-show-finished", lambda p: ["job", "show", "job-done", "--full"], None, True),
    ("job-show-json", lambda p: ["job", "show", "job-done", "--json"], None, False),
    ("job-result", lambda p: ["job", "result", "job-done"], None, True),
    ("job-result-full", lambda p: ["job", "result", "job-done", "--full"], None, True),
    ("job-result-json", lambda p: ["job", "result", "job-done", "--json"], None, False),
    ("job-watch-finished", lambda p: ["job", "watch", "job-done", "--temporal-address", DOWN], None, True),
    ("job-show-unknown-hostile", lambda p: ["job", "show", f"job {HOSTILE}"], "unknown_job", False),
    *[
        (f"job-export-{fmt}", lambda p, fmt=fmt: ["job", "export", "job-done", "--format", fmt], None, False)
        for fmt in ("bibtex", "ris", "csl-json", "csv", "markdown")
    ],
]


@pytest.mark.parametrize("case, args, code, shown", PRINTING_CASES, ids=[c[0] for c in PRINTING_CASES])
def test_untrusted_text_is_inert_on_every_printing_command(
    printing_home, case: str, args, code: str | None, shown: bool
) -> None:
    result = cli(printing_home["home"], *args(printing_home))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "MarkupError" not in result.output
    assert (result.exit_code == 0) == (code is None), result.output[-800:]
    if code:
        assert f"({code})" in result.output
    output = result.output.replace("\r\n", "\n") if case == "job-export-csv" else result.output
    assert_inert(output, shown=shown)
    if case.endswith("-json") and not case.startswith("job-export"):  # exact JSON: the text comes back unchanged
        assert any(
            RAW in text
            for line in result.stdout.splitlines()
            if line.startswith("{")
            for text in strings(json.loads(line))
        ), result.stdout[-800:]
    if case.startswith("job-export"):  # the data file holds the text without the controls
        assert "PWNED" in output and "\x1b" not in output


def test_every_skipped_and_unsupported_file_is_named(printing_home) -> None:
    """The skipped-file list and the unsupported list still name the hostile files (made visible)."""
    result = cli(printing_home["home"], "ingest", str(printing_home["folder"]), "--name", "hfolder2", "--no-index")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("skipped") and "empty [/z] [bold]b \\x1b]0;PWNED" in line for line in lines), (
        result.output
    )
    assert any("not read" in line and "odd [/z] [bold]b \\x1b]0;PWNED" in line for line in lines), result.output


def test_steer_prints_its_acceptance_without_crashing(printing_home, monkeypatch) -> None:
    """The steer is applied before its acceptance is printed: printing `[/z]` or escapes must not
    raise (a retry would steer twice)."""
    import quarry.app.temporal as temporal_access

    def applied(coro, job_id=None, address=None):
        coro.close()
        return {"accepted": f"not {HOSTILE}", "applies_from_round": 2}

    monkeypatch.setattr(temporal_access, "attempt", applied)
    result = cli(printing_home["home"], "job", "steer", "job-run", "not surveys", "--temporal-address", DOWN)
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "accepted:" in result.output and "round 2" in result.output
    assert_inert(result.output)


def test_the_render_functions_of_progress_and_watch(capsys) -> None:
    """`job progress` and the live view of `job watch` / `run --wait`, fed a running job's progress."""
    from quarry.app.terminal import out
    from quarry.cli.render import render_progress, render_result
    from quarry.cli.watch import ProgressView

    render_progress(hostile_progress())
    view = ProgressView()
    for line in view.lines(hostile_progress()) + view.lines(hostile_progress() | {"round": 2, "top": []}):
        out.print(line, markup=False, highlight=False)  # as job watch and run --wait print them
    render_result(hostile_result("job-x"), web_ui=f"http://x/{HOSTILE}", trace_file=f"/t/{HOSTILE}", full=True)
    printed = capsys.readouterr()
    assert_inert(printed.out + printed.err)
    assert "gnp.exe" in printed.out and "\\u202e" in printed.out


def test_the_one_escaping_path(capsys) -> None:
    """quarry.app.terminal.safe: markup escaped, controls made visible, a trailing backslash kept;
    json_line: exact JSON with C1 and bidi controls as \\u escapes."""
    from quarry.app.terminal import json_line, out, safe

    for text in (HOSTILE, "ends with \\", "[bold]", "\ud800 surrogate", "tab\tand\nnewline"):
        out.print(f"[green]{safe(text)}[/]", highlight=False)
    printed = capsys.readouterr().out
    assert "[/z] [bold]b " in printed and "ends with \\" in printed and "\ufffd surrogate" in printed
    assert "and\nnewline" in printed
    assert_inert(printed)
    line = json_line({"t": HOSTILE + "\x85\u2066"})
    assert json.loads(line) == {"t": HOSTILE + "\x85\u2066"} and OBEYED.search(line) is None
    assert "\\u009b" in line and "\\u202e" in line and "é" in json_line("é")
