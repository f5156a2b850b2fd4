"""Recovery drills: a worker SIGKILLed inside a job's verification is replaced, the dev server is
restarted (SIGTERM or SIGKILL) on its database file mid-job, one of two workers on a queue is lost —
and every job still ends, with the result of an uninterrupted run (`drill_baseline`, conftest.py)
where the drill holds one at a known point (the verification gate of tests/drill_worker.py).
"""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest

from stores.jobs import JobStore
from tests.drill_kit import (
    DRILL_HEARTBEAT_TIMEOUT_S,
    INTENT,
    RESULT_TIMEOUT_S,
    TOPIC_INTENTS,
    Gate,
    Server,
    Worker,
    assert_one_agent_tree,
    client_for,
    job_spans,
    key,
    result_of,
    start,
    wait_for,
)


def test_worker_sigkilled_in_verification_is_replaced_and_the_result_is_the_same(
    home, server, drill_baseline, tmp_path
) -> None:
    queue = f"drill-{uuid.uuid4().hex[:8]}"
    gate = Gate(tmp_path / "gate")
    gate.hold()
    # The server hands the killed worker's verification on when its heartbeat times out: scaled
    # down (DRILL_HEARTBEAT_TIMEOUT_S), that is within the replacement's start, not 15 s after the kill.
    first = Worker(home, server.address, queue, gate=gate.folder, heartbeat_timeout_s=DRILL_HEARTBEAT_TIMEOUT_S)
    handle = asyncio.run(start(server.address, queue, tracing=True))
    wait_for(lambda: gate.entered(), "verification to start")
    first.kill(signal.SIGKILL)
    gate.release()
    second = Worker(home, server.address, queue, heartbeat_timeout_s=DRILL_HEARTBEAT_TIMEOUT_S)
    try:
        result = result_of(handle)
    finally:
        second.kill(signal.SIGTERM)
    assert result["status"] == "completed" and key(result) == key(drill_baseline)
    # The trace survives the kill too: one agent span over both workers' spans.
    spans = job_spans(home, handle.id)
    assert_one_agent_tree(spans, handle.id, INTENT)
    assert any(s["name"] == "node verification" for s in spans), "the replacement worker's verification is traced"
    stored = JobStore(home / "jobs.sqlite").get(handle.id)
    assert stored["status"] == "completed" and stored["round"] == result["rounds"] == drill_baseline["rounds"]
    assert len(result["queries"]) == len(set(result["queries"])), "no round's searches ran twice"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_server_restarted_mid_job_on_its_database(home, drill_baseline, tmp_path, sig) -> None:
    srv = Server(home).start()
    queue = f"drill-{uuid.uuid4().hex[:8]}"
    gate = Gate(tmp_path / "gate")
    worker = Worker(home, srv.address, queue, gate=gate.folder)
    try:
        finished = asyncio.run(start(srv.address, queue))
        assert result_of(finished)["status"] == "completed"
        gate.hold()
        handle = asyncio.run(start(srv.address, queue))
        wait_for(lambda: gate.entered(), "verification to start")
        srv.stop(sig)
        srv.start()  # same port, same database file
        gate.release()
        client = asyncio.run(client_for(srv.address))
        result = asyncio.run(asyncio.wait_for(client.get_workflow_handle(handle.id).result(), RESULT_TIMEOUT_S))

        async def listed() -> set[str]:
            c = await client_for(srv.address)
            return {w.id async for w in c.list_workflows()}

        ids = asyncio.run(listed())
    finally:
        worker.kill(signal.SIGTERM)
        srv.stop()
    assert result["status"] == "completed" and key(result) == key(drill_baseline)
    assert {finished.id, handle.id} <= ids, "finished jobs survive the restart"


def test_two_workers_one_queue_survive_losing_one(home, server) -> None:
    queue = f"drill-{uuid.uuid4().hex[:8]}"
    # Activities in flight on the lost worker are handed on when their heartbeat times out (scaled
    # down, DRILL_HEARTBEAT_TIMEOUT_S); a quick activity (checkpoint, finish) waits for its 60 s
    # start-to-close timeout (workflows.search_job).
    a, b = (Worker(home, server.address, queue, heartbeat_timeout_s=DRILL_HEARTBEAT_TIMEOUT_S) for _ in range(2))

    async def run_all():
        handles = [await start(server.address, queue, TOPIC_INTENTS[i % 4]) for i in range(20)]
        for h in handles[:4]:
            await asyncio.wait_for(h.result(), RESULT_TIMEOUT_S)
        a.kill(signal.SIGKILL)  # mid-run: the rest may have activities in flight on it
        return await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), RESULT_TIMEOUT_S)

    try:
        results = asyncio.run(run_all())
    finally:
        b.kill(signal.SIGTERM)
    assert [r["status"] for r in results] == ["completed"] * 20
    assert [r["intent"] for r in results] == [TOPIC_INTENTS[i % 4] for i in range(20)]
