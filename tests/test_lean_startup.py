"""The front door starts lean: `import quarry.cli`, `quarry --help` and the job commands that read
the job store import none of the heavy stacks (Lucene, Chroma, torch, Temporal, LangGraph, OpenTelemetry, the HTTP
and MCP servers) they do not use. Each command runs in a fresh interpreter, as a user runs it, and
reports the modules it loaded when it exits; a heavy import creeping back into a front-door module
fails here, long before anyone times it (bench/bench_commands.py measures the time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What a command that reads the job store never needs. Pydantic is kept out of `import quarry.cli`
# and `--help`; a command with options loads it anyway, through typer (0.29 coerces every
# parameter with a pydantic TypeAdapter), so the job commands are held to the rest.
HEAVY = (
    "pyserini",
    "jnius",
    "chromadb",
    "torch",
    "sentence_transformers",
    "temporalio",
    "langgraph",
    "langchain_core",
    "fastapi",
    "uvicorn",
    "mcp",
    "numpy",
    "networkx",
    "opentelemetry",
)
NOT_AT_START = (*HEAVY, "pydantic", "pydantic_core")
# The command modules `job list` has no use for (quarry.cli imports a command's module when it runs).
NOT_FOR_JOBS = {
    "quarry.cli.collections",
    "quarry.cli.search",
    "quarry.cli.eval",
    "quarry.cli.run",
    "quarry.cli.serve",
    "quarry.cli.mcp",
    "quarry.cli.trace",
}

# Runs `quarry ARGS…` as the `quarry` executable does (python -m quarry) and writes the names of
# the modules it loaded to QUARRY_TEST_MODULES at exit: atexit runs on a normal exit and on
# workflows.processes.exit.leave's hard one alike.
_RUN_AND_LIST = """
import atexit, os, runpy, sys
def _listed():
    with open(os.environ["QUARRY_TEST_MODULES"], "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
atexit.register(_listed)
sys.argv[0] = "quarry"
runpy.run_module("quarry", run_name="__main__", alter_sys=True)
"""


def heavy_in(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    """The banned top-level packages among `modules`."""
    return sorted({m.split(".")[0] for m in modules} & set(banned))


def loaded_by(args: list[str], tmp_path: Path, env: dict[str, str]) -> tuple[set[str], Any]:
    """The modules `quarry ARGS…` loaded, run in a fresh interpreter with `env`, and its result."""
    listing = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, *args],
        cwd=ROOT,
        env=env | {"QUARRY_TEST_MODULES": str(listing)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listing.is_file(), f"quarry {' '.join(args)} ended without listing its modules: {done.stderr[-2000:]}"
    return set(listing.read_text().split()), done


def test_importing_the_command_line_loads_no_heavy_stack() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import quarry.cli, sys; print('\\n'.join(sorted(sys.modules)))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    modules = set(done.stdout.split())
    assert "quarry.cli" in modules
    assert heavy_in(modules, NOT_AT_START) == []
    # the stores behind search and ingest load with the command that uses them, and each
    # command's module with the command
    assert {
        "stores.records",
        "stores.file_formats.corpus_reader",
        "stores.collection",
        "stores.profiles",
    } & modules == set()
    assert sorted(m for m in modules if m.startswith("quarry.cli_")) == []


def test_help_loads_no_heavy_stack(tmp_path: Path) -> None:
    env = os.environ | {"QUARRY_HOME": str(tmp_path / "home")}
    modules, done = loaded_by(["--help"], tmp_path, env)
    assert done.returncode == 0 and "search" in done.stdout and "job" in done.stdout
    assert heavy_in(modules, NOT_AT_START) == []


@pytest.fixture(scope="module")
def finished_job(home: Path, server, drill_baseline: dict[str, Any]) -> dict[str, str]:
    """A home with a finished job and its Temporal server up (the conftest drill fixtures), as a
    user has it after `quarry run`: what the job commands are run against."""
    assert drill_baseline["status"] == "completed"
    return {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": server.address, "job_id": drill_baseline["job_id"]}


def test_job_commands_load_no_heavy_stack(tmp_path: Path, finished_job: dict[str, str]) -> None:
    """`job list` in an empty home and in one with a finished job while its server answers (where
    it used to load Temporal's client, LangGraph and numpy to learn there is no dense build to
    list), and `job progress` / `job result` of the finished job: the job store is enough."""
    empty = os.environ | {"QUARRY_HOME": str(tmp_path / "empty-home")}
    modules, done = loaded_by(["job", "list"], tmp_path, empty)
    assert done.returncode == 0, done.stderr
    assert heavy_in(modules, HEAVY) == [] and NOT_FOR_JOBS & modules == set()

    job_id = finished_job["job_id"]
    env = os.environ | {k: v for k, v in finished_job.items() if k != "job_id"}
    for args, shown in (
        (["job", "list"], job_id),
        (["job", "progress", job_id], "has finished"),
        (["job", "result", job_id], "completed"),
    ):
        modules, done = loaded_by(args, tmp_path, env)
        assert done.returncode == 0 and shown in done.stdout, (args, done.stdout, done.stderr)
        assert heavy_in(modules, HEAVY) == [], f"quarry {' '.join(args)}"
