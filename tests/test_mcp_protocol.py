"""`quarry mcp` speaks the protocol's own words (quarry.mcp.server, through the MCP SDK's client): its
serverInfo names Quarry's version, an unknown resource is the SDK's resource-not-found error (no
traceback in the server's log), a tool called with arguments of the wrong type gets one readable
line, and a job's `status` and `finished` never disagree. The collection is `lit` (tests.conftest)."""

from __future__ import annotations

import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from quarry.app.models import JobStatus
from quarry.mcp.server import build_server
from tests.conftest import LITERATURE

ROOT = Path(__file__).resolve().parents[1]


async def test_server_info_names_quarrys_version(literature) -> None:
    async with Client(build_server()) as client:
        info = client.server_info
    assert info.name == "quarry" and info.version == version("quarry") != ""


async def test_an_unknown_resource_is_not_found_without_a_traceback(quarry_home: Path, literature) -> None:
    """Over stdio, as a desktop client reads it: the error is resource-not-found (the SDK's code for
    it, -32602 since SEP-2164) with Quarry's code and hint, and the server's stderr has no traceback."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "quarry", "--home", str(quarry_home), "mcp"], cwd=ROOT
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            with pytest.raises(MCPError) as doc:
                await client.read_resource(f"quarry://{LITERATURE}/nope-999")
            with pytest.raises(MCPError) as collection:
                await client.read_resource("quarry://cacm-never-ingested/nope-999")
            with pytest.raises(MCPError) as job:
                await client.read_resource("quarry://jobs/no-such-job/result")
        errlog.seek(0)
        stderr = errlog.read()
    assert doc.value.error.code == INVALID_PARAMS, doc.value.error
    assert "unknown_docid" in doc.value.error.message and "Hint: " in doc.value.error.message
    assert collection.value.error.code == job.value.error.code == INVALID_PARAMS
    assert "no_collection" in collection.value.error.message and "unknown_job" in job.value.error.message
    assert "Traceback" not in stderr and "unexpected exception" not in stderr, stderr[-2000:]


async def test_arguments_of_the_wrong_type_get_one_readable_line(literature) -> None:
    async with Client(build_server()) as client:
        wrong = await client.call_tool("search", {"collection": LITERATURE, "query": ["graph"], "limit": "ten"})
        missing = await client.call_tool("read_search_results", {})
    text = wrong.content[0].text
    said, hint = text.split("\n")
    assert wrong.is_error and said.startswith("bad_arguments: search: "), text
    assert "query should be a valid string" in said and "limit should be a valid integer" in said, said
    assert hint.startswith("Hint: ") and "pydantic" not in text and "input_value" not in text, text
    assert missing.content[0].text.startswith("bad_arguments: read_search_results: search_id is required")


def test_a_jobs_status_and_finished_come_from_one_source() -> None:
    """`finished` is whether `status` is final: a door cannot say completed and not finished."""
    base = {"job_id": "j", "collection": LITERATURE, "intent": "x"}
    assert JobStatus(**base, status="completed", finished=False).finished is True
    assert JobStatus(**base, status="running", finished=True).finished is False
    assert JobStatus.model_validate(base | {"status": "terminated", "finished": False}).finished is True
