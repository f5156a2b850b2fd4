"""Messages that mislead (issue 20, item 10): each test fails on the code before the fix.

(a) a worker still warming up is said to be warming up, not missing (real dev server, a real
    worker process held inside its warm-up by tests/drill_worker.py --hold-warm-up);
(b) `job result` of a terminated job says it was terminated, why, its intent, and how to rerun;
(c) `quarry search NAME ''` hints in command-line syntax, the tools keep theirs;
(d) the checklist splitter does not cut inside brackets or quotes;
(e) the hidden-files warning names what it skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stores.jobs import JobStore
from tests.drill_kit import INTENT, ROOT, Server, client_for, start, wait_for


def _cli(home: Path, *args: str):
    from quarry.cli import app

    return CliRunner().invoke(app, ["--home", str(home), *args])


# -- (a) warm-up ---------------------------------------------------------------------------------


def test_progress_during_the_worker_warm_up_says_it_is_warming_up(home: Path, server: Server, tmp_path: Path) -> None:
    from workflows.processes.warmup import warming_message
    from workflows.shared import task_queue

    hold = tmp_path / "hold"
    hold.mkdir()
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.drill_worker",
            "--home",
            str(home),
            "--address",
            server.address,
            "--hold-warm-up",
            str(hold),
        ],
        cwd=ROOT,
        stdout=open(tmp_path / "worker.log", "ab"),  # noqa: SIM115 - the worker writes to it until stopped
        stderr=subprocess.STDOUT,
        env=os.environ | {"QUARRY_HOME": str(home)},
    )
    try:
        wait_for(lambda: (hold / "warming").exists() or worker.poll() is not None, "the worker's warm-up")
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-2000:]
        status = home / "run" / f"warming-{worker.pid}.json"
        assert status.is_file() and json.loads(status.read_text())["pid"] == worker.pid
        handle = asyncio.run(start(server.address, task_queue(home)))
        JobStore(home / "jobs.sqlite").create(handle.id, "lit", INTENT, workflow_id=handle.id, trace_id=None)

        res = _cli(home, "job", "progress", handle.id, "--temporal-address", server.address)
        # a job waiting on a warming worker is not a failure: informational, exit 0
        assert res.exit_code == 0 and "Traceback" not in res.output and "error" not in res.output, res.output
        assert f"{handle.id} · running · lit" in res.output and "the worker is warming up" in res.output, res.output
        assert "s so far" in res.output and "the job goes on when it is ready" in res.output, res.output
        assert "start one" not in res.output and "quarry worker" not in res.output, res.output

        (hold / "release").write_text("1")
        wait_for(lambda: (home / f"worker-ready-{worker.pid}").exists(), "the worker to poll")
        assert not status.exists(), "a polling worker is warming up no more"
        res = _cli(home, "job", "progress", handle.id, "--temporal-address", server.address)
        assert res.exit_code == 0 or "(job_finished)" in res.output, res.output
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
    # A status left by a process that is gone is not believed (and is removed).
    (home / "run" / f"warming-{worker.pid}.json").write_text(
        json.dumps({"pid": worker.pid, "since": 0, "start_time": "1", "cmdline": ["x"]})
    )
    assert warming_message(home) is None and not list((home / "run").glob("warming-*.json"))


# -- (b) the result of a terminated job ----------------------------------------------------------


def test_result_of_a_terminated_job_says_so_with_its_intent_and_how_to_rerun(home: Path, server: Server) -> None:
    queue = f"messages-noworker-{uuid.uuid4().hex[:8]}"  # no worker: it runs until terminated
    handle = asyncio.run(start(server.address, queue))
    JobStore(home / "jobs.sqlite").create(handle.id, "lit", INTENT, workflow_id=handle.id, trace_id=None)
    assert (
        _cli(
            home, "job", "terminate", handle.id, "--reason", "drill over", "--temporal-address", server.address
        ).exit_code
        == 0
    )
    for extra in ([], ["--wait"]):
        res = _cli(home, "job", "result", handle.id, *extra, "--temporal-address", server.address)
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        text = " ".join(res.output.split())
        assert f"{handle.id} was terminated: drill over" in text, res.output
        assert f"intent: {INTENT}" in text and f"quarry job rerun {handle.id}" in text, res.output
        assert "wait for it" not in text and "None" not in text and "rounds ?" not in text, res.output
    res = _cli(home, "job", "result", handle.id, "--json", "--temporal-address", server.address)
    record = json.loads(res.stdout)
    assert record["status"] == "terminated" and record["intent"] == INTENT and record["error"] == "drill over"


def test_result_of_a_job_terminated_outside_quarry_names_the_terminators_reason(home: Path, server: Server) -> None:
    from workflows.shared import task_queue

    handle = asyncio.run(start(server.address, task_queue(home) + "-none"))
    JobStore(home / "jobs.sqlite").create(handle.id, "lit", INTENT, workflow_id=handle.id, trace_id=None)

    async def terminate_from_outside():
        await (await client_for(server.address)).get_workflow_handle(handle.id).terminate(reason="from the web ui")

    asyncio.run(terminate_from_outside())
    res = _cli(home, "job", "result", handle.id, "--temporal-address", server.address)
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and f"{handle.id} was terminated: from the web ui" in text, res.output
    assert "wait for it" not in text, res.output


# -- (c) hints in each front door's syntax -------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "+++ ---"])
def test_search_hints_in_cli_syntax_and_the_tool_in_tool_syntax(home: Path, query: str) -> None:
    res = _cli(home, "search", "lit", query)
    assert res.exit_code != 0 and "(empty_query)" in res.output, res.output
    assert 'quarry search lit "dense retrieval"' in res.output and "search(reason=" not in res.output, res.output

    from nodes.tools.corpus import ToolSession
    from nodes.tools.results import ToolError
    from stores.collection import Collection

    col = Collection("lit", home=home)
    page = ToolSession(col.lucene, col.corpus).search("why", query)
    assert isinstance(page, ToolError) and page.code == "empty_query"
    assert 'search(reason="…", query="dense retrieval")' in page.hint and "quarry search" not in page.hint


# -- (d) the checklist splitter ------------------------------------------------------------------


@pytest.mark.parametrize(
    "intent, whole, not_pieces",
    [
        (
            "how to set the C++ standard for a target in CMake (CXX_STANDARD, CXX_EXTENSIONS)",
            "target in CMake (CXX_STANDARD, CXX_EXTENSIONS)",
            ["CXX_EXTENSIONS)", "target in CMake (CXX_STANDARD"],
        ),
        (
            "graph neural networks [GCN, GAT, GIN] for molecules",
            "graph neural networks [GCN, GAT, GIN]",
            ["GAT", "GIN]"],
        ),
        ("config files {json, yaml} for deployment", "config files {json, yaml}", ["yaml}"]),
        (
            'papers titled "retrieval, reranking and fusion" on the web',
            'papers titled "retrieval, reranking and fusion"',
            ['reranking and fusion" on the web', "retrieval"],
        ),
        ('the paper "compression of data streams"', 'paper "compression of data streams"', ["compression"]),
        (
            "surveys (for beginners, with examples), transformers",
            "surveys (for beginners, with examples)",
            ["beginners", "examples)"],
        ),
        (
            "attention “for translation, with alignment” models",
            "attention “for translation, with alignment” models",
            ["alignment” models"],
        ),
    ],
)
def test_the_checklist_is_not_cut_inside_brackets_or_quotes(intent: str, whole: str, not_pieces: list[str]) -> None:
    from nodes.evidence.planning import make_plan

    texts = [item["text"] for item in make_plan(intent, years=False)["checklist"]]
    assert whole in texts, texts
    for piece in not_pieces:
        assert piece not in texts, texts


def test_the_checklist_still_splits_outside_brackets() -> None:
    from nodes.evidence.planning import make_plan

    texts = [
        item["text"]
        for item in make_plan("dense retrieval (DPR), query expansion; reranking", years=False)["checklist"]
    ]
    assert {"dense retrieval (DPR)", "query expansion", "reranking"} <= set(texts), texts


# -- (e) hidden files are named ------------------------------------------------------------------


def test_the_hidden_files_warning_names_them(tmp_path: Path) -> None:
    from stores.file_formats.corpus_reader import read_corpus

    folder = tmp_path / "docs"
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / "notes").mkdir()
    (folder / "a.md").write_text("# A\n\nSome text about retrieval.\n")
    for rel in (
        ".git/HEAD",
        ".git/config",
        ".git/objects/ab",
        ".env",
        "notes/.draft.md",
        ".\x1bx",
        ".h1",
        ".h2",
        ".h3",
    ):
        (folder / rel).write_text("x\n")
    src = read_corpus(folder)
    warning = next(w for w in src.warnings if "hidden file(s) not read" in w)
    assert "9 hidden file(s) not read" in warning, warning
    assert ".git/ (3 files)" in warning and ".env" in warning and "\\x1bx" in warning, warning
    assert "\x1b" not in warning and "… and 2 more" in warning, warning


def test_progress_of_a_job_terminated_outside_quarry_says_terminated(
    home: Path, server: Server, tmp_path: Path
) -> None:
    """A terminated workflow still answers the progress query with the state it had ("running"):
    `job progress` must report Temporal's status instead."""
    from tests.drill_kit import Gate, Worker

    queue = f"messages-progress-{uuid.uuid4().hex[:8]}"
    gate = Gate(tmp_path / "gate")
    gate.hold()
    worker = Worker(home, server.address, queue, gate=gate.folder)
    try:
        handle = asyncio.run(start(server.address, queue))
        wait_for(gate.entered, "the job reaching verification")

        async def terminate_from_outside():
            await (await client_for(server.address)).get_workflow_handle(handle.id).terminate(reason="outside")

        asyncio.run(terminate_from_outside())
        gate.release()
        res = _cli(home, "job", "progress", handle.id, "--temporal-address", server.address, "--json")
        assert res.exit_code == 0, res.output
        assert json.loads(res.output.strip().splitlines()[-1])["status"] == "terminated"
    finally:
        gate.release()
        worker.kill()


def test_every_script_ends_a_quarry_error_with_one_line() -> None:
    """bench/ and evals/ scripts are commands too: each runs its main through `run_script`, so a
    missing dataset folder is one line and exit 2 — bench_jobs printed a traceback for it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    scripts = [
        p
        for folder in ("bench", "tuning", "evals")
        for p in sorted((root / folder).glob("*.py"))
        if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    ]
    assert len(scripts) > 10
    assert [p.name for p in scripts if "run_script(" not in p.read_text(encoding="utf-8")] == []
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_jobs", "--datasets", str(root / "no-such-folder")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error (not_found): no such file or folder:"), done.stderr


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """`quarry … | head`: the program ends quietly when its reader goes away (exit 1), never with
    a BrokenPipeError traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = "from workflows.processes.exit import run_script\nrun_script(lambda: [print('x' * 100) for _ in range(200_000)])"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().startswith("x")
    proc.stdout.close()  # the reader goes away while the program still writes
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err, err
