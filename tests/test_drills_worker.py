"""Drills of worker processes (tests/drill_worker.py: `quarry worker` with a gate): a clean stop on
SIGTERM, also in the middle of the warm-up; warm before it polls; and with two homes on one server,
each home's worker runs its own home's jobs. The dev server is the module's (`server`, conftest.py).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from stores.collection import ingest
from stores.errors import QuarryError
from stores.jobs import JobStore
from tests.drill_kit import RESULT_TIMEOUT_S, ROOT, TOPIC_INTENTS, Worker, client_for, wait_for
from tests.fakes import search_docs, write_jsonl
from workflows.shared import JobInput


def test_a_worker_stops_cleanly_on_sigterm(home, server) -> None:
    """SIGTERM (what `quarry down` and service managers send) shuts a worker down gracefully:
    exit status 0, no traceback — not killed mid-write with its last spans unwritten."""
    worker = Worker(home, server.address, f"drill-term-{uuid.uuid4().hex[:8]}")
    worker.kill(signal.SIGTERM)
    log = worker.log.read_text()
    assert worker.proc.returncode == 0 and "Traceback" not in log, log[-2000:]


def test_a_worker_is_warm_before_it_polls(home, server) -> None:
    """The worker opens the JVM (with the collection's searcher) and MiniLM before it polls, so
    the first job's budget is not spent on them; its log says what it warmed."""
    worker = Worker(home, server.address, f"drill-warm-{uuid.uuid4().hex[:8]}")
    try:
        maps = Path(f"/proc/{worker.proc.pid}/maps").read_text()
    finally:
        worker.kill(signal.SIGTERM)
    log = worker.log.read_text()
    assert "libjvm.so" in maps, "the JVM is running in the worker before its first job"
    warmed = next(line for line in log.splitlines() if line.startswith("warmed up in"))
    assert "lit" in warmed and "MiniLM" in warmed, warmed
    assert log.index("warmed up in") < log.index("worker polling"), log[-2000:]


def test_a_worker_stopped_while_warming_up_exits_cleanly(home, server, tmp_path) -> None:
    """SIGTERM during the warm-up (`quarry down` right after `quarry run` started the worker) ends
    it at once with exit status 0 and a line that says so — no traceback, no wait for the warm-up."""
    hold = tmp_path / "hold"
    hold.mkdir()
    log = home / f"worker-warm-{uuid.uuid4().hex[:6]}.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.drill_worker",
            "--home",
            str(home),
            "--address",
            server.address,
            "--queue",
            f"drill-warm-{uuid.uuid4().hex[:8]}",
            "--hold-warm-up",
            str(hold),
        ],
        cwd=ROOT,
        stdout=open(log, "ab"),  # noqa: SIM115 - the worker writes to it until stopped
        stderr=subprocess.STDOUT,
        env=os.environ | {"QUARRY_HOME": str(home)},
    )
    try:
        wait_for(lambda: (hold / "warming").exists() or proc.poll() is not None, "the warm-up to start")
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)  # the held warm-up never ends: only a stop that does not wait for it returns
    finally:
        (hold / "release").write_text("1")
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert proc.returncode == 0 and "stopped while warming up" in text and "Traceback" not in text, text[-2000:]
    assert "worker polling" not in text


def test_two_homes_on_one_server_each_run_their_own_jobs(server, tmp_path_factory) -> None:
    """Each QUARRY_HOME has its own task queue: with two homes on one server, every job runs on its
    own home's worker (a job taken by the other home's worker would fail: its collection is not there)."""
    from workflows.client import new_job_id, submit
    from workflows.shared import task_queue

    homes = {}
    for name, topic in (("onlya", "gnn"), ("onlyb", "rl")):
        home = tmp_path_factory.mktemp(f"home-{name}")
        ingest(
            write_jsonl(home / "src.jsonl", [d for d in search_docs() if d["_id"].startswith(topic)]), name, home=home
        )
        homes[name] = home
    assert task_queue(homes["onlya"]) != task_queue(homes["onlyb"])
    workers = [Worker(home, server.address, None) for home in homes.values()]

    async def run_all():
        client = await client_for(server.address)
        handles = []
        for i in range(6):
            name = ("onlya", "onlyb")[i % 2]
            inp = JobInput(job_id=new_job_id(), collection=name, intent=TOPIC_INTENTS[0 if name == "onlya" else 2])
            handles.append((name, await submit(client, inp, queue=task_queue(homes[name]))))
        return [(name, h.id, await asyncio.wait_for(h.result(), RESULT_TIMEOUT_S)) for name, h in handles]

    try:
        results = asyncio.run(run_all())
    finally:
        for w in workers:
            w.kill(signal.SIGTERM)
    for name, job_id, result in results:
        assert result["status"] == "completed" and result["collection"] == name, result.get("error")
        other = "onlyb" if name == "onlya" else "onlya"
        assert JobStore(homes[name] / "jobs.sqlite").get(job_id)["status"] == "completed"
        with pytest.raises(QuarryError):  # unknown_job: each home's store holds only its own jobs
            JobStore(homes[other] / "jobs.sqlite").get(job_id)
