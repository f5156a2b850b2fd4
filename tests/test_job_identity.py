"""Jobs told apart in Temporal's Web UI, and one round count wherever a job is shown.

Real parts: a Temporal dev server on a database file and a Quarry worker process
(tests.drill_kit), the `quarry` command line on the same home, and a real `quarry serve` for the
job page. The Web UI's list and job page show what `DescribeWorkflowExecution` returns as user
metadata (static summary and details), and its Input tab the first history event's input.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from nodes.job.config import JobConfig
from quarry.cli import app
from tests.drill_kit import Worker, client_for, result_of, start
from tests.serve_kit import serving
from workflows.search_attributes import ROUND

INTENTS = ("graph neural networks for molecules", "transformer language models for translation")


async def _described(address: str, job_id: str) -> tuple[str, str, dict[str, Any]]:
    """(summary, details, the workflow's input) as the Web UI reads them."""
    client = await client_for(address)
    handle = client.get_workflow_handle(job_id)
    desc = await handle.describe()
    first = (await handle.fetch_history()).events[0].workflow_execution_started_event_attributes
    inp = json.loads(first.input.payloads[0].data)
    inp["_ui_round"] = desc.typed_search_attributes.get(ROUND)  # the Web UI's round column
    return await desc.static_summary() or "", await desc.static_details() or "", inp


@pytest.fixture(scope="module")
def two_jobs(home: Path, server) -> dict[str, Any]:
    """Two finished heuristic jobs on `lit` with different intents, each with its Web UI metadata
    and input. The second has a 90-second budget and is stopped at once: its first round runs
    whole, its reflection plans round 2 (numbering the state with it), then the stop makes it
    answer — a round planned, never run."""
    queue = f"identity-{uuid.uuid4().hex[:8]}"
    worker = Worker(home, server.address, queue)
    try:
        handles = [
            asyncio.run(start(server.address, queue, INTENTS[0])),
            asyncio.run(start(server.address, queue, INTENTS[1], config=JobConfig(max_seconds=90.0, max_rounds=2))),
        ]
        asyncio.run(handles[1].signal("stop"))  # before its first round ends: that round is run whole
        results = [result_of(h) for h in handles]
    finally:
        worker.kill(signal.SIGTERM)
    shown = [asyncio.run(_described(server.address, h.id)) for h in handles]
    return {"ids": [h.id for h in handles], "results": results, "shown": shown}


def test_two_jobs_summaries_differ_and_name_collection_mode_and_intent(two_jobs) -> None:
    (first, first_details, _), (second, second_details, _) = two_jobs["shown"]
    assert first != second
    assert first == f"lit · list · {INTENTS[0]}" and second == f"lit · list · {INTENTS[1]}"
    assert "**budget**: 90 s" in second_details and "**rounds**: up to 2" in second_details
    assert "**policy**: heuristic" in second_details and "**profile**: auto" in second_details
    assert f"**intent**: {INTENTS[0]}" in first_details and "**budget**: 300 s" in first_details


def test_the_input_shows_the_budget(two_jobs) -> None:
    """The Web UI's Input tab: a budget at the top, not `budget_seconds: null`."""
    (_, _, first), (_, _, second) = two_jobs["shown"]
    assert first["budget_seconds"] == first["config"]["max_seconds"] == 300.0
    assert second["budget_seconds"] == second["config"]["max_seconds"] == 90.0


def test_without_content_the_summary_names_only_collection_and_mode(home: Path, server, monkeypatch) -> None:
    """The content policy of trace export governs the Web UI too: turned off, no intent."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    queue = f"identity-{uuid.uuid4().hex[:8]}"  # no worker: the job only has to be started
    handle = asyncio.run(start(server.address, queue, "a private research question", mode="answer"))
    summary, details, _ = asyncio.run(_described(server.address, handle.id))

    async def cancel() -> None:
        await (await client_for(server.address)).get_workflow_handle(handle.id).terminate(reason="test over")

    asyncio.run(cancel())
    assert summary == "lit · answer"
    assert "private" not in details and "**collection**: lit" in details


def test_round_counts_agree_in_job_list_result_and_page(home: Path, two_jobs) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["--home", str(home), "job", "list", "--json", "--limit", "50"])
    assert listed.exit_code == 0, listed.output
    rows = {r["job_id"]: r for r in map(json.loads, listed.stdout.splitlines()) if r.get("job_id")}
    with serving(home) as served, httpx.Client(base_url=served.url, timeout=60) as browser:
        for job_id, returned, (_, _, inp) in zip(two_jobs["ids"], two_jobs["results"], two_jobs["shown"], strict=True):
            res = runner.invoke(app, ["--home", str(home), "job", "result", job_id, "--json"])
            assert res.exit_code == 0, res.output
            result = json.loads(res.stdout)
            page = browser.get(f"/jobs/{job_id}")
            assert page.status_code == 200, page.text[:500]
            shown = re.search(r'<b id="round">(\d+)</b>', page.text)
            assert shown, page.text[:2000]
            ui_round = inp["_ui_round"]  # the Web UI's round column (QuarryRound)
            counts = (rows[job_id]["round"], result["rounds"], result["stats"]["rounds"], int(shown.group(1)), ui_round)
            assert len(set(counts)) == 1 and returned["rounds"] == counts[0], (job_id, counts)
