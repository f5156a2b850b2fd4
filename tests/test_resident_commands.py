"""The resident process answers more than searches: the job commands that only read (`job list`,
`show`, `progress`, `result`), `collections` and the help screens, with the answer the in-process
command gives, byte for byte; a command that waits, follows a job or writes runs in-process.

The job commands run against a home with a finished job and its Temporal server up (the conftest
drill fixtures), as a user has it after `quarry run`. Which path answered is read from the resident
process's log (tests.resident_kit.served).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from quarry.resident.commands import Command, command_of
from quarry.resident.start import start_ready
from tests.resident_kit import fallbacks, on_a_terminal, quarry, same_either_way, served
from workflows.processes.background import identity, pid_of, pidfile, stop_detached

WARM_S = 300.0  # importing the command line on a loaded machine (waited on a pipe, not polled)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["search", "cacm", "parallel sorting"], Command(("search",), "cacm")),
        (["read", "cacm", "3075", "--json"], Command(("read",), "cacm")),
        (["collections", "--json"], Command(("collections",))),
        (["job", "list", "--limit", "5", "--status=completed", "--json"], Command(("job", "list"))),
        (["job", "show", "job-1", "--full"], Command(("job", "show"))),
        (["job", "progress", "job-1", "--address", "127.0.0.1:7233"], Command(("job", "progress"))),
        (["job", "result", "job-1", "--json"], Command(("job", "result"))),
        (["--help"], Command(("--help",))),
        (["job", "--help"], Command(("job", "--help"))),
        (["search", "--help"], Command(("search", "--help"))),
        # waits, follows, writes, starts processes, or is not a plain form of a command it answers
        (["job", "result", "job-1", "--wait"], None),
        (["job", "watch", "job-1"], Command(("job", "watch"), ended_job="job-1")),  # if it has ended
        (["job", "stop", "job-1", "--address", "x:1"], Command(("job", "stop"), ended_job="job-1")),
        (["job", "steer", "job-1", "not surveys"], None),
        (["job", "cancel", "job-1"], None),
        (["job", "export", "job-1"], None),
        (["run", "cacm", "sorting"], None),
        (["ingest", "docs", "--name", "x"], None),
        (["job", "show"], None),  # a missing id: typer's to say
        (["job", "list", "extra"], None),
        (["search", "cacm", "q", "--limit"], None),
        (["search", "cacm", "q", "--", "-x"], None),
        (["search", "cacm", "q", "--help"], None),  # help after arguments: in-process, as typer reads it
        (["job", "$(rm -rf)", "--help"], None),
        ([], None),
    ],
)
def test_which_commands_the_resident_process_answers(args: list[str], expected: Command | None) -> None:
    assert command_of(args) == expected


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """os.environ with `values` while inside (what a resident process started here inherits)."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def job_home(home: Path, server: Any, drill_baseline: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The drill home with a finished job, its Temporal server up and a resident process started
    with the same settings a user's commands there have."""
    assert drill_baseline["status"] == "completed"
    env = {"QUARRY_TEMPORAL_ADDRESS": server.address}
    with environment(**env):
        assert start_ready(home, None, WARM_S)
    yield {"home": home, "env": env, "job_id": drill_baseline["job_id"]}
    stop_detached(home, "resident")


def test_job_commands_collections_and_help_are_byte_identical_either_way(job_home: dict[str, Any]) -> None:
    home, env, job = job_home["home"], job_home["env"], job_home["job_id"]
    for args in (
        ("job", "list"),
        ("job", "list", "--json"),
        ("job", "list", "--status", "completed", "--limit", "1"),
        ("job", "show", job),
        ("job", "show", job, "--json"),
        ("job", "result", job),
        ("job", "result", job, "--json", "--full"),
        ("job", "progress", job),
        ("collections",),
        ("collections", "--json"),
        ("--help",),
        ("job", "--help"),
        ("search", "--help"),
        ("job", "result", "job-nosuch"),  # errors: the same one message and exit status
        ("job", "show", "job-nosuch", "--json"),
        ("nosuch", "--help"),
    ):
        answered = same_either_way(home, *args, **env)
        if answered.returncode != 0:
            assert answered.stderr.count(b"error") <= 1 and b"Traceback" not in answered.stderr, args
    assert job.encode() in quarry(home, "job", "list", resident=True, **env).stdout


def test_a_command_that_waits_or_follows_a_job_runs_in_process(job_home: dict[str, Any]) -> None:
    """`job result --wait` is never handed over; `job watch` and `job stop` are answered only for a
    job the job store holds as ended (its result; nothing to stop), else handed back."""
    home, env, job = job_home["home"], job_home["env"], job_home["job_id"]
    waited = same_either_way(home, "job", "result", job, "--wait", served_by_resident=False, **env)
    assert waited.returncode == 0, waited.stderr
    watched = same_either_way(home, "job", "watch", job, **env)
    assert watched.returncode == 0 and job.encode() in watched.stdout
    stopped = same_either_way(home, "job", "stop", job, **env)
    assert stopped.returncode != 0 and b"already finished" in stopped.stderr
    before = fallbacks(home)
    for args in (("job", "watch", "job-nosuch"), ("job", "stop", "job-nosuch")):
        unknown = same_either_way(home, *args, served_by_resident=False, **env)
        assert unknown.returncode != 0 and b"Traceback" not in unknown.stderr
    assert fallbacks(home) == before + 2, "handed back by the resident process, not run there"


@pytest.mark.parametrize("columns", [100, 0])
def test_a_help_screen_on_a_terminal_is_the_same_either_way(job_home: dict[str, Any], columns: int) -> None:
    """typer draws help in boxes as wide as the terminal, coloured: the resident process draws them
    for the client's terminal, not its own (it has none)."""
    home, env = job_home["home"], job_home["env"]
    for args in (("--help",), ("job", "--help")):
        before = served(home)
        alone = on_a_terminal(home, *args, resident=False, columns=columns, **env)
        handed = on_a_terminal(home, *args, resident=True, columns=columns, **env)
        assert handed == alone and served(home) == before + 1
        assert b"\x1b[" in handed and "─".encode() in handed  # coloured boxes, as in-process


def test_a_job_command_starts_a_resident_process_only_in_a_home_that_exists(tmp_path: Path) -> None:
    home = tmp_path / "h"
    shown = quarry(home, "--help", resident=True)
    assert shown.returncode == 0 and b"job" in shown.stdout
    assert not home.exists(), "a help screen in a home never used creates nothing"
    first = quarry(home, "job", "list", resident=True)
    assert first.returncode == 0 and pid_of(home, "resident") is None  # the home did not exist yet
    try:
        second = same_either_way(home, "job", "list", served_by_resident=False)
        pid = pid_of(home, "resident")
        assert second.returncode == 0 and pid is not None, "a job command in a home that exists starts one"
        running = identity(pid)
        assert running is not None and "quarry.resident.server" in running.cmdline
        down = quarry(home, "down", resident=False)
        assert down.returncode == 0 and b"resident: stopped" in down.stdout
        assert identity(pid) is None and not pidfile(home, "resident").exists()
    finally:
        stop_detached(home, "resident")
