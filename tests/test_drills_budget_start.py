"""Drill: a job's budget starts when a worker starts running it, not when it was submitted. A job is
submitted with no worker running; a real worker process (tests/drill_worker.py) is then started with
its warm-up held, and released by the test. The budget's recorded start (`run_started_at`, from which
the workflow's timers and the "submit now" steer count) comes after the warm-up ended, and the job
page counts the job's time from there — not from the submission. The dev server is the module's."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid

from nodes.job.config import JobConfig
from quarry.app.service import QuarryService
from quarry.http.pages_job import job_context
from stores.jobs import JobStore
from tests.conftest import LITERATURE
from tests.drill_kit import INTENT, RESULT_TIMEOUT_S, ROOT, client_for, wait_for
from workflows.shared import STEER_FRACTION, JobInput, task_queue


def test_the_budget_starts_when_a_worker_runs_the_job(home, server, tmp_path, monkeypatch) -> None:
    from workflows.client import new_job_id, submit

    monkeypatch.setenv("QUARRY_HOME", str(home))
    monkeypatch.setenv("QUARRY_TEMPORAL_ADDRESS", server.address)
    config = JobConfig(max_seconds=45.0)
    job_id = new_job_id()
    jobs = JobStore(home / "jobs.sqlite")
    jobs.create(
        job_id,
        LITERATURE,
        INTENT,
        workflow_id=job_id,
        trace_id=None,
        params={"mode": "list", "config": config.to_dict()},
    )

    async def submitted():
        client = await client_for(server.address)
        inp = JobInput(job_id=job_id, collection=LITERATURE, intent=INTENT, config=config)
        return await submit(client, inp, queue=task_queue(home))

    asyncio.run(submitted())  # no worker runs yet: the job waits
    hold = tmp_path / "hold"
    hold.mkdir()
    log = home / f"worker-budget-{uuid.uuid4().hex[:6]}.log"
    command = [sys.executable, "-m", "tests.drill_worker", "--home", str(home), "--address", server.address]
    proc = subprocess.Popen(
        [*command, "--hold-warm-up", str(hold)],
        cwd=ROOT,
        stdout=open(log, "ab"),  # noqa: SIM115 - the worker writes to it until stopped
        stderr=subprocess.STDOUT,
        env=os.environ | {"QUARRY_HOME": str(home)},
    )
    try:
        wait_for(lambda: (hold / "warming").exists() or proc.poll() is not None, "the warm-up to start")
        warmed_after = time.time()  # the worker is still warming up: no job has run
        (hold / "release").write_text("1")

        async def result():
            client = await client_for(server.address)
            return await asyncio.wait_for(client.get_workflow_handle(job_id).result(), RESULT_TIMEOUT_S)

        final = asyncio.run(result())
    finally:
        (hold / "release").write_text("1")
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    assert final["status"] == "completed", (final.get("error"), log.read_text()[-2000:])
    row = jobs.get(job_id)
    state = row["state"]
    assert row["created_at"] < warmed_after <= state["run_started_at"], "the budget starts after the warm-up"
    assert state["answer_at"] == state["run_started_at"] + STEER_FRACTION * config.max_seconds
    page = job_context(QuarryService(server.address), job_id)
    time_meter = next(m for m in page["meters"] if m.name == "time")
    assert time_meter.used == f"{row['updated_at'] - state['run_started_at']:,.1f} s", time_meter
