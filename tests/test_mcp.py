"""`quarry mcp` (quarry.mcp.server) through the MCP SDK's own client: in memory for the tools, one
real `python -m quarry mcp` subprocess over stdio, `quarry serve`'s /mcp over Streamable HTTP, and
heuristic jobs through the job tools on a real Temporal dev server with a background worker — one
of them outliving the MCP server that started it. The collection is `lit`, the 40 papers of
`tests.fakes.search_docs` (the module home of tests.conftest)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from nodes.job.config import TOOL_LIMITS
from quarry.cli import app
from quarry.mcp.server import build_server
from stores.collection import Collection
from tests.conftest import LITERATURE
from tests.fakes import poll_until, search_docs
from tests.serve_kit import serving
from workflows.processes.background import pid_of
from workflows.processes.warmup import warming_for

ROOT = Path(__file__).resolve().parents[1]
QUERY = "graph neural networks"
TOOLS = {
    "list_collections",
    "build_dense_index",
    "dense_build_status",
    "search",
    "read_search_results",
    "read_document",
    "start_job",
    "job_status",
    "job_result",
    "list_jobs",
    "wait_for_job",
    "steer_job",
    "stop_job",
    "cancel_job",
    "mark_document",
}


@pytest.fixture(scope="module", autouse=True)
def this_home(home: Path) -> Iterator[Path]:
    """Every call of this module reads the module home (tests.conftest.home, with `lit`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        yield home


def docids_of(home: Path) -> set[str]:
    """The docids the collection's store holds."""
    return set(Collection(LITERATURE, home=home).corpus.get_many([d["_id"] for d in search_docs()]))


def error_text(result: Any) -> str:
    assert result.is_error, result
    text = "\n".join(c.text for c in result.content)
    assert "Traceback" not in text and 'File "' not in text, text
    return text


async def test_the_tools_are_listed_with_input_and_output_schemas() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
    search = tools["search"].input_schema
    assert set(search["required"]) == {"collection", "query"}
    assert search["properties"]["channel"]["enum"] == ["lexical", "semantic"]
    assert search["properties"]["offset"]["minimum"] == 1
    assert search["properties"]["limit"]["default"] == TOOL_LIMITS.preview
    assert tools["read_search_results"].input_schema["required"] == ["search_id"]
    assert tools["read_document"].input_schema["properties"]["limit"]["default"] == TOOL_LIMITS.read_limit
    assert set(tools["start_job"].input_schema["required"]) == {"collection", "intent"}
    assert tools["start_job"].input_schema["properties"]["mode"]["enum"] == ["list", "answer"]
    assert {"search_id", "hits", "next_offset"} <= set(tools["search"].output_schema["properties"])


async def test_search_pages_and_reads_like_the_command_line(this_home: Path) -> None:
    known = docids_of(this_home)
    async with Client(build_server()) as client:
        listed = await client.call_tool("list_collections", {})
        first = await client.call_tool("search", {"collection": LITERATURE, "query": QUERY})
        page = first.structured_content
        more = await client.call_tool(
            "read_search_results", {"search_id": page["search_id"], "offset": page["next_offset"], "limit": 3}
        )
        doc = await client.call_tool("read_document", {"collection": LITERATURE, "docid": page["hits"][0]["docid"]})
    assert LITERATURE in listed.structured_content["collections"]
    assert not first.is_error and page["offset"] == 1 and len(page["hits"]) == TOOL_LIMITS.preview
    assert [h["rank"] for h in page["hits"]] == [1, 2, 3, 4, 5] and page["next_offset"] == 6
    assert {h["docid"] for h in page["hits"]} <= known and page["hits"][0]["docid"].startswith("gnn")
    nxt = more.structured_content
    assert nxt["search_id"] == page["search_id"] and [h["rank"] for h in nxt["hits"]] == [6, 7, 8]
    assert {h["docid"] for h in nxt["hits"]} <= known
    assert not {h["docid"] for h in nxt["hits"]} & {h["docid"] for h in page["hits"]}

    # the same hits as `quarry search --json`, page after page
    cli = CliRunner().invoke(app, ["--home", str(this_home), "search", LITERATURE, QUERY, "--json"])
    assert cli.exit_code == 0, cli.output
    shown = json.loads(cli.stdout.strip().splitlines()[-1])
    assert [(h["docid"], h["score"]) for h in shown["hits"]] == [(h["docid"], h["score"]) for h in page["hits"]]
    assert shown["total"] == page["total"]
    cli = CliRunner().invoke(
        app, ["--home", str(this_home), "search", LITERATURE, QUERY, "--offset", "6", "--limit", "3", "--json"]
    )
    assert [h["docid"] for h in json.loads(cli.stdout.strip().splitlines()[-1])["hits"]] == [
        h["docid"] for h in nxt["hits"]
    ]

    lines = Collection(LITERATURE, home=this_home).corpus.lines(page["hits"][0]["docid"])
    got = doc.structured_content
    assert got["title"] == lines[0] and got["total_lines"] == len(lines) and got["next_offset"] is None
    assert got["lines"] == [{"number": n, "text": t} for n, t in enumerate(lines, start=1)]


async def test_read_document_pages_by_line() -> None:
    async with Client(build_server()) as client:
        part = await client.call_tool(
            "read_document", {"collection": LITERATURE, "docid": "gnn03", "offset": 2, "limit": 2}
        )
    got = part.structured_content
    assert [line["number"] for line in got["lines"]] == [2, 3] and got["next_offset"] == 4


async def test_misuse_is_a_tool_error_with_a_hint_never_a_traceback() -> None:
    async with Client(build_server()) as client:
        unknown_collection = await client.call_tool("search", {"collection": "nope", "query": QUERY})
        unknown_docid = await client.call_tool("read_document", {"collection": LITERATURE, "docid": "no-such-doc"})
        empty = await client.call_tool("search", {"collection": LITERATURE, "query": "  "})
        symbols = await client.call_tool("search", {"collection": LITERATURE, "query": "?! ..."})
        stale_id = await client.call_tool("read_search_results", {"search_id": "s999"})
        past_end = await client.call_tool("read_document", {"collection": LITERATURE, "docid": "gnn03", "offset": 999})
        bad_offset = await client.call_tool("search", {"collection": LITERATURE, "query": QUERY, "offset": 0})
        bad_name = await client.call_tool("search", {"collection": "../etc", "query": QUERY})
        job = await client.call_tool("start_job", {"collection": "nope", "intent": "graph neural networks"})
        no_job = await client.call_tool("job_status", {"job_id": "no-such-job"})
        no_events = await client.call_tool("wait_for_job", {"job_id": "no-such-job", "timeout_s": 1})
        blank_steer = await client.call_tool("steer_job", {"job_id": "no-such-job", "text": "  "})
        long_wait = await client.call_tool("wait_for_job", {"job_id": "x", "timeout_s": 100_000})
        no_mark = await client.call_tool("mark_document", {"job_id": "no-such-job", "docid": "gnn03", "relevant": True})
        no_build = await client.call_tool("dense_build_status", {"build_id": "no-such-job"})
        dense_nope = await client.call_tool("build_dense_index", {"collection": "nope"})
    for result in (unknown_collection, unknown_docid, empty, symbols, stale_id, past_end, bad_name, job, no_job):
        assert "\nHint: " in error_text(result), result
    assert ": unknown_docid: " in error_text(unknown_docid)
    assert ": empty_query: " in error_text(empty) and f'search(collection="{LITERATURE}"' in error_text(empty)
    assert ": empty_query: " in error_text(symbols)
    assert ": unknown_search_id: " in error_text(stale_id)
    assert ": offset_past_end: " in error_text(past_end)
    assert "nope" in error_text(unknown_collection) and "nope" in error_text(job)
    assert ": unknown_job: " in error_text(no_job) and ": unknown_job: " in error_text(no_events)
    assert ": empty_text: " in error_text(blank_steer) and ": unknown_job: " in error_text(no_mark)
    assert ": unknown_job: " in error_text(no_build) and "dense-" in error_text(no_build)
    assert ": no_collection: " in error_text(dense_nope) and "nope" in error_text(dense_nope)
    assert "timeout_s" in error_text(long_wait)  # the input schema's bound (600 s)
    assert "offset" in error_text(bad_offset)  # the input schema's own check


async def test_no_key_reaches_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    async with Client(build_server()) as client:
        echoed = await client.call_tool("read_document", {"collection": LITERATURE, "docid": key})
    assert key not in json.dumps([c.text for c in echoed.content])
    assert "(redacted)" in error_text(echoed)


async def test_quarry_mcp_over_stdio_lists_tools_and_searches(this_home: Path) -> None:
    """`python -m quarry --home HOME mcp` as a real subprocess, through the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "quarry", "--home", str(this_home), "mcp"],
        cwd=ROOT,
        env={"QUARRY_HOME": "/nonexistent-home-the-flag-wins"},
    )
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search", {"collection": LITERATURE, "query": QUERY, "limit": 8})
        again = await client.call_tool(
            "read_search_results", {"search_id": found.structured_content["search_id"], "offset": 9, "limit": 2}
        )
    assert names == TOOLS
    hits = found.structured_content["hits"]
    assert len(hits) == 8 and {h["docid"] for h in hits} <= docids_of(this_home)
    assert [h["rank"] for h in again.structured_content["hits"]] == [9, 10]


async def test_a_job_started_through_mcp_is_read_back_by_its_id(
    this_home: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start_job returns at once; job_status is polled until the job has finished (bounded);
    job_result's ranked documents all come from the collection. The job runs on a background
    worker `start_job` launched, as `quarry run` does; `quarry down` stops it afterwards."""
    monkeypatch.setenv("QUARRY_TEMPORAL_ADDRESS", server.address)
    monkeypatch.setenv("QUARRY_TASK_QUEUE", f"mcp-{uuid.uuid4().hex[:8]}")
    try:
        async with Client(build_server()) as client:
            started = await client.call_tool(
                "start_job",
                {"collection": LITERATURE, "intent": "graph neural networks for molecules", "budget_seconds": 60},
            )
            assert not started.is_error, started.content
            job_id = started.structured_content["job_id"]

            async def status() -> dict[str, Any]:
                got = await client.call_tool("job_status", {"job_id": job_id})
                assert not got.is_error, got.content
                return got.structured_content

            final = await poll_until(status, lambda s: s["finished"], timeout_s=240, every_s=0.5)
            result = await client.call_tool("job_result", {"job_id": job_id})
            listed = await client.call_tool("list_jobs", {"collection": LITERATURE})
    finally:
        subprocess.run(
            [sys.executable, "-m", "quarry", "down"], cwd=ROOT, env=dict(os.environ), capture_output=True, timeout=60
        )
    assert final["status"] == "completed", final
    got = result.structured_content
    assert got["job_id"] == job_id and got["status"] == "completed" and got["ranked"]
    assert {r["docid"] for r in got["ranked"]} <= docids_of(this_home)
    assert got["ranked"][0]["docid"].startswith("gnn") and got["bibtex"].startswith("@")
    assert job_id in {j["job_id"] for j in listed.structured_content["jobs"]}


async def test_a_job_outlives_the_mcp_server_that_started_it(
    this_home: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `quarry mcp` subprocess over stdio starts a job and is killed while the job runs; `quarry
    serve`'s MCP endpoint over Streamable HTTP (a new server, a new session) waits for the same job
    by id — sending progress notifications — and returns its result, every docid from the collection.
    The job's worker (the only one on its queue) is held with SIGSTOP from the job's start until the
    long wait has sent a notification, so the job is still running whatever the machine's speed."""
    queue = f"mcp-{uuid.uuid4().hex[:8]}"  # a new worker, started by start_job below
    env = {"QUARRY_TEMPORAL_ADDRESS": server.address, "QUARRY_TASK_QUEUE": queue}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "quarry", "--home", str(this_home), "mcp"], cwd=ROOT, env=env
    )
    notes: list[tuple[float, float | None, str | None]] = []
    noted = asyncio.Event()
    held: list[int] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, total, message))
        noted.set()

    def resume() -> None:
        while held:
            os.kill(held.pop(), signal.SIGCONT)

    try:
        # `quarry serve` first, so that the new session below opens the moment the old server dies
        # (the job's new worker is still warming up then: the wait sees it run)
        with serving(this_home, env=env) as served:
            async with Client(params) as stdio:
                started = await stdio.call_tool(
                    "start_job",
                    {"collection": LITERATURE, "intent": "graph neural networks for molecules", "budget_seconds": 90},
                )
                assert not started.is_error, started.content
                worker = pid_of(this_home, "worker")
                assert worker is not None, "start_job started this home's worker"

                async def warming() -> float | None:
                    return warming_for(this_home)

                await poll_until(warming, lambda s: s is not None)  # it says so while it loads, for seconds
                os.kill(worker, signal.SIGSTOP)  # held warming up: the job cannot run, and says it waits
                held.append(worker)
                assert warming_for(this_home) is not None
                job_id = started.structured_content["job_id"]
                at_kill = (await stdio.call_tool("job_status", {"job_id": job_id})).structured_content
            # leaving the block closed the server's stdin and killed the `quarry mcp` process
            assert at_kill["finished"] is False, at_kill

            async with Client(f"{served.url}/mcp") as http:
                short = await http.call_tool("wait_for_job", {"job_id": job_id, "timeout_s": 0.5})
                waiting = asyncio.create_task(
                    http.call_tool("wait_for_job", {"job_id": job_id, "timeout_s": 240}, progress_callback=progress)
                )
                await asyncio.wait_for(noted.wait(), 60)  # a notification while the job is held
                resume()
                waited = await waiting
                assert {t.name for t in (await http.list_tools()).tools} == TOOLS
                found = await http.call_tool("search", {"collection": LITERATURE, "query": QUERY, "limit": 3})
                hit = found.structured_content["hits"][0]["docid"]
                read = await http.call_tool("read_document", {"collection": LITERATURE, "docid": hit, "limit": 1})
                result = await http.call_tool("job_result", {"job_id": job_id})
                again = await http.call_tool("wait_for_job", {"job_id": job_id, "timeout_s": 5})
                late_stop = await http.call_tool("stop_job", {"job_id": job_id})
                late_steer = await http.call_tool("steer_job", {"job_id": job_id, "text": "not surveys"})
                top = result.structured_content["ranked"][0]["docid"]
                marked = await http.call_tool("mark_document", {"job_id": job_id, "docid": top, "relevant": True})
                doc = await http.read_resource(f"quarry://{LITERATURE}/gnn03")
                report = await http.read_resource(f"quarry://jobs/{job_id}/report")
    finally:
        resume()
        subprocess.run(
            [sys.executable, "-m", "quarry", "down"], cwd=ROOT, env=dict(os.environ), capture_output=True, timeout=60
        )
    assert {h["docid"] for h in found.structured_content["hits"]} <= docids_of(this_home)
    assert read.structured_content["docid"] == hit and read.structured_content["lines"][0]["number"] == 1
    # a wait that ends before the job is its status, not an error
    assert not short.is_error and short.structured_content["job_id"] == job_id
    assert short.structured_content["finished"] is False  # still running when the new session waited
    assert not waited.is_error and waited.structured_content["finished"] is True, waited.structured_content
    assert notes and all(total == 240 for _, total, _ in notes) and all(m and "round" in m for *_, m in notes)
    assert [d for d, _, _ in notes] == sorted(d for d, _, _ in notes)  # progress only grows
    got = result.structured_content
    assert got["job_id"] == job_id and got["status"] == "completed" and got["ranked"]
    assert {r["docid"] for r in got["ranked"]} <= docids_of(this_home)
    assert again.structured_content["finished"] is True  # an ended job answers at once
    assert ": job_finished: " in error_text(late_stop) and ": job_finished: " in error_text(late_steer)
    assert marked.structured_content == {"job_id": job_id, "collection": LITERATURE, "docid": top, "relevant": True}
    lines = Collection(LITERATURE, home=this_home).corpus.lines("gnn03")
    assert doc.contents[0].text.startswith(lines[0]) and f"2\t{lines[1]}" in doc.contents[0].text
    assert got["ranked"][0]["title"] in report.contents[0].text


def test_sessions_of_versions_before_the_previous_are_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running server keeps the current and the previous version's session per collection and
    channel (search_ids of the previous one still page), not one per version ever searched."""
    import quarry.app.search
    import stores.home
    from quarry.app.sessions import SearchSessions

    version = {"v": "v1"}
    monkeypatch.setattr(stores.home, "collection_paths", lambda name: type("P", (), {"version": version["v"]})())
    monkeypatch.setattr(quarry.app.search, "tools_for", lambda name, semantic, new_search_id, cache: object())
    sessions = SearchSessions()
    first, _ = sessions.tools(LITERATURE, "lexical")
    assert sessions.tools(LITERATURE, "lexical")[0] is first  # the same version: the same session
    other_channel, _ = sessions.tools(LITERATURE, "semantic")
    opened = [first]
    for v in ("v2", "v3", "v4"):
        version["v"] = v
        opened.append(sessions.tools(LITERATURE, "lexical")[0])
    kept = set(map(id, sessions._sessions.values()))
    assert kept == {id(opened[-1]), id(opened[-2]), id(other_channel)}
    assert len(sessions._locks) == len(sessions._sessions)
