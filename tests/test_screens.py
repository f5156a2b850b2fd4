"""Screens a researcher can read (issue 20 item 9): compact results, `job list` at any width and
piped, `read` with pages and --json, and the Web UI's summary and final QuarryStatus."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quarry.cli import app
from stores.jobs import JobStore
from tests.drill_kit import ROOT, Worker, client_for, result_of, start

RRF = (
    "RRF sums 1/(k+rank) over the rankings, where k = 60 is a constant that mitigates the impact of high "
    "rankings by outlier systems; it beats Condorcet fusion on every collection we tried."
)
LONG_INTENT = (
    "graph neural networks for molecular property prediction published between 2015 and 2020, excluding "
    "surveys and position papers of any kind, FINALWORD"
)


def cli(home: Path, *args: str):
    return CliRunner().invoke(app, ["--home", str(home), *args])


def twenty(job_id: str) -> dict[str, Any]:
    checklist = [
        {"id": "c1", "kind": "topic", "text": "reciprocal rank fusion"},
        {"id": "c2", "kind": "method", "text": "the constant k"},
    ]
    ranked = [
        {
            "docid": f"rust-book/ch17-{i:02d}-futures-and-syntax-of-async-await",
            "title": f"Fusion paper {i}",
            "year": 2009,
            "score": 0.8 - i / 100,
            "rank_score": 0.03 - i / 1000,
            "weak": False,
            "reason": "reciprocal rank fusion 4.0/5; the constant k 3.0/5",
            "evidence": [
                {"item": "reciprocal rank fusion", "score": 4.0, "lines": [3, 4], "chunk": RRF},
                {"item": "the constant k", "score": 3.0, "lines": [7, 7], "chunk": f"Second quote {i}."},
            ],
        }
        for i in range(20)
    ]
    return {
        "job_id": job_id,
        "status": "completed",
        "collection": "lit",
        "intent": "rrf constant",
        "policy": "heuristic",
        "rounds": 2,
        "checklist": checklist,
        "ranked": ranked,
    }


def finished_home(tmp_path: Path) -> Path:
    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.create("job-twenty", "lit", LONG_INTENT, workflow_id="job-twenty", trace_id=None)
    jobs.finish("job-twenty", twenty("job-twenty"), {"collection": "lit", "intent": LONG_INTENT})
    return tmp_path


def test_results_are_one_line_per_document_and_its_best_quote(tmp_path: Path) -> None:
    home = finished_home(tmp_path)
    res = cli(home, "job", "result", "job-twenty")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) <= 3 * 20, len(lines)
    assert sum("\u201c" in line for line in lines) == 20, "one quote per document"
    assert all("rust-book/ch17-" not in line or "…" in line for line in lines), "path ids shortened"
    ids = [re.search(r"rust-book\S*", line).group() for line in lines if re.match(r"\s*\d+\. ", line)]
    assert len(set(ids)) == 20, ids  # shortened, never ambiguous
    words = set(RRF.replace(";", " ").replace(",", " ").split())
    for line in lines:
        if "\u201c" in line:
            quoted = line.split("\u201c", 1)[1].split("\u201d")[0]
            assert quoted.endswith("…") or quoted == RRF
            last = quoted.rstrip("…").split()[-1].rstrip(",;")
            assert last in words, f"cut mid-word: {quoted!r}"


def test_full_shows_the_requirement_matrix_and_every_quote(tmp_path: Path) -> None:
    home = finished_home(tmp_path)
    res = cli(home, "job", "result", "job-twenty", "--full")
    assert res.exit_code == 0, res.output
    assert "R1" in res.output and "R2" in res.output and "reciprocal rank fusion" in res.output
    assert RRF in res.output, "every quote whole"
    assert "Second quote 19." in res.output and "rust-book/ch17-19-futures-and-syntax-of-async-await" in res.output


def _on_a_terminal(home: Path, columns: int, *args: str) -> str:
    """What `quarry ARGS` prints on a pseudo-terminal COLUMNS wide (ANSI colours removed)."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "quarry", "--home", str(home), *args],
        cwd=ROOT,
        stdout=child,
        stderr=child,
        env=os.environ | {"COLUMNS": str(columns), "TERM": "xterm"},
    )
    os.close(child)
    data = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    proc.wait(60)
    os.close(main)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode())


def test_job_list_gives_the_intent_the_width_left(tmp_path: Path) -> None:
    home = finished_home(tmp_path)
    for columns in (80, 120):
        shown = _on_a_terminal(home, columns, "job", "list", "--temporal-address", "127.0.0.1:1")
        row = next(line for line in shown.splitlines() if "job-twenty" in line)
        intent = row[row.index("graph") :].rstrip()
        assert intent.endswith("…") and len(intent) >= 30, (columns, row)
        assert len(row.rstrip()) <= columns


def test_job_list_piped_prints_the_whole_intent(tmp_path: Path) -> None:
    home = finished_home(tmp_path)
    piped = subprocess.run(
        [sys.executable, "-m", "quarry", "--home", str(home), "job", "list", "--temporal-address", "127.0.0.1:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    row = next(line for line in piped.stdout.splitlines() if line.startswith("job-twenty"))
    assert row.split("\t")[-1] == LONG_INTENT and row.split("\t")[:3] == ["job-twenty", "completed", "lit"]


def test_read_shows_pages_and_its_json_is_the_tools_output(tmp_path: Path) -> None:
    from nodes.tools.corpus import ToolSession
    from stores.collection import Collection
    from tests.test_formats import make_pdf

    folder = tmp_path / "src"
    folder.mkdir()
    make_pdf(folder / "spec.pdf", ["Alpha on page one.", "Beta on page two.", "Gamma on page three."], title="A spec")
    home = tmp_path / "home"
    assert cli(home, "ingest", str(folder), "--name", "pdfs").exit_code == 0
    res = cli(home, "read", "pdfs", "spec")
    assert res.exit_code == 0, res.output
    assert "pages 1–3" in res.output.splitlines()[0]
    assert any(line.startswith("p.2") and "Beta on page two." in line for line in res.output.splitlines()), res.output
    as_json = cli(home, "read", "pdfs", "spec", "--offset", "2", "--limit", "2", "--json")
    assert as_json.exit_code == 0, as_json.output
    col = Collection("pdfs", home=home)
    tool = ToolSession(col.lucene, col.corpus).read_document("test", "spec", 2, 2)
    page = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert page.pop("metadata")["page_count"] == 3
    assert page == tool.model_dump()


def test_the_web_ui_list_shows_the_intent_and_the_final_status(home, server) -> None:
    """On a real dev server: the job's summary is its collection, mode and intent (escaped, cut at
    a word with an ellipsis) and its QuarryStatus is the job's final status, `stopped` for a stopped job."""
    from workflows.search_attributes import STATUS

    queue = f"screens-{uuid.uuid4().hex[:8]}"
    intent = "graph neural networks **for** [molecules](x) " + "and more words " * 10
    worker = Worker(home, server.address, queue)
    try:
        handle = asyncio.run(start(server.address, queue, intent))
        asyncio.run(handle.signal("stop"))
        result = result_of(handle)

        async def described():
            client = await client_for(server.address)
            return await client.get_workflow_handle(handle.id).describe()

        desc = asyncio.run(described())
    finally:
        worker.kill(signal.SIGTERM)
    summary = asyncio.run(desc.static_summary())
    assert summary.startswith("lit · list · graph neural networks \\*\\*for\\*\\* \\[molecules\\]\\(x\\)"), summary
    assert summary.endswith("…") and len(summary) <= 110 and "and more words" in summary
    assert desc.typed_search_attributes.get(STATUS) == result["status"] == "stopped"


LONG_TITLE = (
    "Reciprocal rank fusion outperforms Condorcet and individual rank learning methods on "
    "heterogeneous test collections"
)


def _compact(width: int, result: dict[str, Any]) -> list[str]:
    """The compact result screen as a `width`-column rich console shows it."""
    import io

    from rich.console import Console

    from quarry.cli.screens import ranked_lines

    console = Console(width=width, file=io.StringIO(), color_system=None, soft_wrap=True, emoji=False)
    for line in ranked_lines(result["ranked"], console.width):  # what render_ranked prints, compact
        console.print(line, highlight=False)
    return console.file.getvalue().splitlines()


def _title_shown(lines: list[str], place: int) -> str:
    """The words of document `place`'s title as shown: its head line's text after the docid and
    the lines up to its quote."""
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s*{place}\. ", line))
    head = re.sub(r"^\s*\d+\. \S+  S \S+  \S+(\s+|$)", "", lines[start])
    shown = [head]
    for line in lines[start + 1 :]:
        if "\u201c" in line or re.match(r"\s*\d+\. ", line):
            break
        shown.append(line.strip())
    return " ".join(s for s in shown if s)


def test_a_compact_result_gives_the_title_the_width_left_at_80_and_120_columns() -> None:
    """Twenty path docids shortened to ~30 characters left a title 20 characters at 80 columns:
    the title now takes the width after place, scores and docid, wrapping at words (two lines at
    most, an ellipsis at a word where it is cut), and no line is wider than the screen."""
    result = twenty("job-titles")
    for item in result["ranked"]:
        item["title"] = LONG_TITLE
    for width in (80, 120):
        lines = _compact(width, result)
        assert all(len(line) <= width for line in lines), (width, [line for line in lines if len(line) > width])
        for place in (1, 20):
            shown = _title_shown(lines, place)
            assert len(shown) >= 60, (width, shown)
            assert shown.rstrip("…").rstrip() in LONG_TITLE + " (2009)", (width, shown)
            if shown != LONG_TITLE + " (2009)":
                assert shown.endswith("…"), (width, shown)
                assert shown.rstrip("…").split()[-1] in LONG_TITLE.split(), f"cut mid-word: {shown!r}"
    wide = _compact(200, result)
    assert _title_shown(wide, 1) == LONG_TITLE + " (2009)" and len(wide) == 2 * 20, "whole on one line when it fits"
    longer = twenty("job-titles")
    longer["ranked"][0]["title"] = " ".join([LONG_TITLE] * 3)
    for width in (80, 120):
        shown = _title_shown(_compact(width, longer), 1)
        assert shown.endswith("…") and shown.rstrip("…").split()[-1] in LONG_TITLE.split(), (width, shown)
        assert len(shown) >= 2 * (width - 60), (width, shown)
