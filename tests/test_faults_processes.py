"""Faults of processes (issue 19): a stale pid file never gets an unrelated process signalled or
trusted; a worker paused for minutes inside an activity does not fail its job; the home and the
files that hold intents and documents are private to their owner.

Real parts throughout: a Temporal dev server, worker processes (tests/drill_worker.py, or the
one `quarry run` starts), `quarry` commands as subprocesses, and an unrelated `sleep` process
started in a session of its own — the kind of process `quarry down` once killed with killpg.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nodes.job.config import JobConfig
from nodes.policy.registry import ONE_ROUND_NODE
from stores.collection import ingest
from stores.jobs import JobStore
from tests.drill_kit import (
    DRILL_HEARTBEAT_TIMEOUT_S,
    ROOT,
    Gate,
    Worker,
    client_for,
    free_port,
    result_of,
    start,
    wait_for,
)
from tests.fakes import search_docs, write_jsonl
from workflows.processes.background import alive, identity, pid_of, stop_detached

# The acceptance: a worker SIGSTOPped mid-activity, then resumed. The old retry policy (3
# attempts, 15 s heartbeat timeout) failed the job after about 50 s of pause: when the third attempt
# timed out on its heartbeat. The drill pauses until the server has scheduled a fourth attempt — past
# that point — with heartbeats scaled down (DRILL_HEARTBEAT_TIMEOUT_S), so the point comes in seconds.
OLD_MAXIMUM_ATTEMPTS = 3
PAUSE_LIMIT_S = 300.0  # a server that never retries fails the drill (it would not be a slow pass)


def _runs(pid: int, cmdline: tuple[str, ...]) -> bool:
    now = identity(pid)
    return now is not None and now.cmdline == cmdline


@pytest.fixture
def unrelated():
    """A live process that has nothing to do with Quarry, leading a session of its own."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        wait_for(lambda: _runs(proc.pid, ("sleep", "600")), "the unrelated process to start")
        yield proc
    finally:
        proc.kill()
        proc.wait(30)


def _quarry(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quarry", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


# -- stale pid files -----------------------------------------------------------------------------


def test_down_leaves_an_unrelated_process_named_by_a_stale_pid_file_alone(tmp_path: Path, unrelated) -> None:
    """Both record formats name the unrelated session leader: the old bare pid, and a record with
    its real start time but another command line (the pid came back as something else). `quarry
    down` signals neither, says the records were stale and removes them."""
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "worker.pid").write_text(str(unrelated.pid))
    ident = identity(unrelated.pid)
    (run / "temporal-server.pid").write_text(
        json.dumps(
            {"pid": unrelated.pid, "start_time": ident.start_time, "cmdline": ["/x/temporal", "server", "start-dev"]}
        )
    )
    (run / "temporal-server.json").write_text(json.dumps({"pid": unrelated.pid, "port": 1, "ui_port": 2}))
    env = os.environ | {"QUARRY_HOME": str(tmp_path)}
    down = _quarry(env, "down")
    assert down.returncode == 0, down.stderr
    assert unrelated.poll() is None and alive(unrelated.pid), "quarry down signalled a process it did not start"
    assert "worker: not running" in down.stdout and "temporal-server: not running" in down.stdout, down.stdout
    assert down.stderr.count("was stale") == 2 and f"pid {unrelated.pid} is now another process" in down.stderr, (
        down.stderr
    )
    assert not any(run.glob("*.pid")) and not (run / "temporal-server.json").exists()


def test_a_record_keeps_naming_the_process_it_was_written_for(tmp_path: Path) -> None:
    """The record `spawn_detached` writes keeps the process's identity (start time, command line);
    a bare pid from an older Quarry is trusted only while it runs this home's worker."""
    from workflows.processes.background import spawn_detached

    sleeper = "import time\nwhile True: time.sleep(1)"
    proc = spawn_detached(tmp_path, "worker", [sys.executable, "-c", sleeper])
    try:
        record = json.loads((tmp_path / "run" / "worker.pid").read_text())
        wait_for(lambda: identity(proc.pid) is not None and identity(proc.pid).cmdline, "the spawned process to show")
        assert record == {
            "pid": proc.pid,
            "start_time": identity(proc.pid).start_time,
            "cmdline": [sys.executable, "-c", sleeper],
        }
        assert pid_of(tmp_path, "worker") == proc.pid and stop_detached(tmp_path, "worker")
        assert proc.poll() is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    # Old-format records (a bare pid) of processes that run like Quarry's worker (`... -m quarry
    # worker`): one of another home is stale, one of this home is trusted and stopped.
    olds = {
        where: subprocess.Popen(
            [sys.executable, "-c", sleeper, "-m", "quarry", "worker"],
            start_new_session=True,
            env=os.environ | {"QUARRY_HOME": str(where)},
        )
        for where in (tmp_path / "elsewhere", tmp_path)
    }
    try:
        for old in olds.values():
            wait_for(
                lambda old=old: identity(old.pid) is not None and "worker" in identity(old.pid).cmdline,
                "the old worker",
            )
        (tmp_path / "run" / "worker.pid").write_text(str(olds[tmp_path / "elsewhere"].pid))
        assert pid_of(tmp_path, "worker") is None and not stop_detached(tmp_path, "worker")
        assert olds[tmp_path / "elsewhere"].poll() is None, "another home's worker was signalled"
        (tmp_path / "run" / "worker.pid").write_text(str(olds[tmp_path].pid))
        assert pid_of(tmp_path, "worker") == olds[tmp_path].pid
        assert stop_detached(tmp_path, "worker") and olds[tmp_path].wait(30) is not None
    finally:
        for old in olds.values():
            if old.poll() is None:
                old.kill()
                old.wait(30)


@pytest.fixture(scope="module")
def run_over_a_stale_record(tmp_path_factory) -> dict:
    """`quarry run --wait` in a home whose worker record names an unrelated live process (a bare
    pid, as an older Quarry wrote it), on an embedded server the command starts itself. The home
    was made 0755 (as a folder created under umask 022 is), its job store 0644."""
    own = tmp_path_factory.mktemp("stale-home") / "home"
    own.mkdir(mode=0o755)
    own.chmod(0o755)
    ingest(write_jsonl(own.parent / "lit.jsonl", search_docs()), "lit", home=own)
    JobStore(own / "jobs.sqlite").close()
    (own / "jobs.sqlite").chmod(0o644)
    other = subprocess.Popen(["sleep", "600"], start_new_session=True)
    port, ui = free_port(), free_port()
    env = os.environ | {
        "QUARRY_HOME": str(own),
        "QUARRY_TEMPORAL_ADDRESS": f"127.0.0.1:{port}",
        "QUARRY_UI_PORT": str(ui),
    }
    env.pop("QUARRY_TASK_QUEUE", None)
    try:
        wait_for(lambda: _runs(other.pid, ("sleep", "600")), "the unrelated process to start")
        (own / "run").mkdir(exist_ok=True)
        (own / "run" / "worker.pid").write_text(str(other.pid))
        try:
            ran = _quarry(
                env,
                "run",
                "lit",
                "graph neural networks for molecules",
                "--budget",
                "60",
                "--wait",
                "--json",
                timeout=150,
            )
        except subprocess.TimeoutExpired as exc:  # no worker was started: the job never ran
            ran = subprocess.CompletedProcess(exc.cmd, -1, exc.stdout or "", f"timed out: {exc.stderr or ''}")
        worker_pid = pid_of(own, "worker")
        other_alive = other.poll() is None and alive(other.pid)
        yield {"home": own, "ran": ran, "worker_pid": worker_pid, "other": other, "other_alive": other_alive}
    finally:
        _quarry(env, "down", timeout=90)
        other.kill()
        other.wait(30)


def test_run_starts_a_worker_despite_a_stale_record_and_the_job_completes(run_over_a_stale_record) -> None:
    r = run_over_a_stale_record
    ran = r["ran"]
    assert r["other_alive"], "the unrelated process was signalled"
    assert ran.returncode == 0, (ran.returncode, ran.stderr[-1500:])
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["ranked"], result.get("error")
    assert "was stale" in ran.stderr and "starting a Quarry worker" in ran.stderr, ran.stderr[-1500:]
    assert r["worker_pid"] not in (None, r["other"].pid), "the record names the worker `quarry run` started"


# -- home permissions ----------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_home_and_what_holds_intents_are_private_after_a_job(run_over_a_stale_record) -> None:
    home: Path = run_over_a_stale_record["home"]
    assert _mode(home) == 0o700, oct(_mode(home))
    private = [
        home / "jobs.sqlite",
        *home.glob("jobs.sqlite-*"),
        *home.glob("temporal.db*"),
        *(home / "traces").glob("*.jsonl"),
        *(home / "logs").glob("*.log"),
        *(home / "run").glob("*"),
    ]
    names = {p.name for p in private}
    assert "jobs.sqlite" in names and "temporal.db" in names and "worker.log" in names
    assert any(p.suffix == ".jsonl" for p in private), "the job's trace was written"
    loose = {str(p.relative_to(home)): oct(_mode(p)) for p in private if _mode(p) & 0o077}
    assert not loose, f"readable by group or others: {loose}"
    for folder in ("traces", "logs"):  # (the home, 0700, covers folders an older Quarry made)
        assert _mode(home / folder) & 0o077 == 0, (folder, oct(_mode(home / folder)))


# -- a paused worker -----------------------------------------------------------------------------


# The heuristic job's verification runs inside its one-step round's activity (graphs.search_graph.round_).
VERIFYING = ONE_ROUND_NODE


def _verification_attempts(history) -> list[int]:
    from temporalio.api.enums.v1 import EventType

    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and VERIFYING in scheduled.get(e.activity_task_started_event_attributes.scheduled_event_id, "")
    ]


async def _pause_until_attempt(address: str, job_id: str, attempt: int) -> list[int]:
    """The pause itself: a stopped worker, until the server has reached `attempt` of the job's
    pending activity running verification (read every 0.2 s); the attempts seen on the way. An activity
    that is no longer pending was given up (the old policy's failure): that fails at once."""
    client = await client_for(address)
    handle = client.get_workflow_handle(job_id)
    seen: list[int] = []
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while max(seen, default=0) < attempt:
        if time.monotonic() > deadline:
            raise AssertionError(f"no attempt {attempt} within {PAUSE_LIMIT_S:.0f} s of pause: {seen}")
        described = await handle.describe()
        pending = [p.attempt for p in described.raw_description.pending_activities if VERIFYING in p.activity_type.name]
        assert pending, f"verification is no longer pending after attempts {sorted(set(seen))}: it was given up"
        seen += pending
        await asyncio.sleep(0.2)
    return seen


def test_a_worker_paused_for_minutes_mid_activity_does_not_fail_the_job(home, server, tmp_path, capsys) -> None:
    """SIGSTOP the only worker inside verification, then SIGCONT: the job completes with results.
    While it is stopped, the server hands the activity's retries to the worker's still-open polls
    and each times out on its heartbeat; the old policy failed the job when its third attempt timed
    out. Retries are bounded by time now, so the activity outlives that: the worker stays stopped
    until the server has scheduled attempt OLD_MAXIMUM_ATTEMPTS + 1."""
    queue = f"pause-{uuid.uuid4().hex[:8]}"
    gate = Gate(tmp_path / "gate")
    gate.hold()
    worker = Worker(home, server.address, queue, gate=gate.folder, heartbeat_timeout_s=DRILL_HEARTBEAT_TIMEOUT_S)
    stopped = False
    try:
        handle = asyncio.run(start(server.address, queue, config=JobConfig(max_seconds=600.0)))
        wait_for(lambda: gate.entered(), "verification to start")
        worker.proc.send_signal(signal.SIGSTOP)
        stopped = True
        paused = time.monotonic()
        gate.release()  # read by the worker only once it runs again
        attempts_seen = asyncio.run(_pause_until_attempt(server.address, handle.id, OLD_MAXIMUM_ATTEMPTS + 1))
        pause_s = time.monotonic() - paused
        worker.proc.send_signal(signal.SIGCONT)
        stopped = False
        resumed = time.monotonic()
        result = result_of(handle)
        after = time.monotonic() - resumed

        async def history():
            client = await client_for(server.address)
            return await client.get_workflow_handle(handle.id).fetch_history()

        attempts = _verification_attempts(asyncio.run(history()))
    finally:
        if stopped:
            worker.proc.send_signal(signal.SIGCONT)
        gate.release()
        worker.kill(signal.SIGTERM)
    assert result["status"] == "completed" and result["ranked"] and not result.get("error"), (
        result["status"],
        result.get("error"),
    )
    assert max(attempts_seen, default=0) > OLD_MAXIMUM_ATTEMPTS, (
        f"the pause did not outlast the old policy's attempts: {attempts_seen}"
    )
    assert attempts and max(attempts) > OLD_MAXIMUM_ATTEMPTS, attempts
    with capsys.disabled():
        print(
            f"\n[drill] worker paused {pause_s:.0f} s in verification (heartbeat timeout "
            f"{DRILL_HEARTBEAT_TIMEOUT_S:.0f} s, attempt {max(attempts_seen)} reached while paused): "
            f"the job completed {after:.1f} s after the resume"
        )
