"""SearchJob on a real Temporal dev server: results, progress, stop, steering, budgets,
worker restarts, replay and failures.

One dev server (in-memory: the `env` fixture of tests/conftest.py) serves the module; every test
runs its own worker on a uuid task queue. To have a job deterministically mid-run, a test holds
one node call on an event it controls (`StepGate`, a NodeGate, patched over
`nodes.rounds.verification.verification`) instead of sleeping; a held call ends when its activity is
cancelled, so a stopped worker or a hard budget stop does not wait 30 s for it.

Budgets use small real budgets: time skipping (`start_time_skipping_v2`) only skips while no
activity is outstanding, and a budget test needs a node activity in flight when the timers fire.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.langgraph import LangGraphPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

import nodes.rounds.verification as verification_mod
from graphs.search_graph import make_search_graph
from graphs.state import initial_state
from nodes.job.config import JobConfig
from nodes.job.control import Control, current_control, reset_control, use_control
from nodes.job.step_control import current_step
from nodes.policy.registry import ONE_ROUND_NODE
from nodes.ranking.ranker import HEURISTIC_ORDER
from stores.jobs import JobStore
from stores.verifier_file import load_verifier_file
from tests.conftest import LITERATURE
from tests.fakes import NodeGate, poll_until
from workflows.client import new_job_id, submit
from workflows.job_failure import job_result
from workflows.search_job import SearchJob
from workflows.shared import JobInput
from workflows.worker import build_worker, graphs

INTENT = "graph neural networks for molecular property prediction, 2015-2020, not surveys"
ON_TOPIC_IN_RANGE = {"gnn01", "gnn02", "gnn03", "gnn05", "gnn06", "gnn08"}  # gnn05 is the benchmark paper
RESULT_TIMEOUT_S = 60.0
_verification = verification_mod.verification


# -- fixtures and helpers ------------------------------------------------------------------------


@pytest.fixture()
def queue() -> str:
    return f"quarry-test-{uuid.uuid4().hex}"


class StepGate(NodeGate):
    """A NodeGate whose held call also ends when its activity is cancelled (a budget's hard stop, a
    worker's shutdown), as a real node call does, instead of being held until the test ends: the
    heartbeat wrapper (nodes.job.heartbeat) stops the call's step on cancellation and waits for the
    thread; a call that outlives it keeps the worker from shutting down for CANCEL_GRACE_S (30 s)."""

    def wrap(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def gated(state):
            with self._lock:
                call_no = len(self.calls)
                self.calls.append(int(state.get("round", 0)))
            if self.hold(call_no, state):
                self.entered.set()
                step, deadline = current_step(), time.monotonic() + self.max_hold_s
                while not self.released.is_set():
                    if step.wait(0.05) and step.why() == "cancelled":
                        return {}  # what a cancelled activity returns is dropped
                    if time.monotonic() > deadline:
                        raise TimeoutError("StepGate was never released")
            return fn(state)

        gated.__name__ = getattr(fn, "__name__", "gated")
        return gated


@pytest.fixture()
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., NodeGate]]:
    """`gate(hold)` patches the verification node body with a StepGate; all gates open at teardown."""
    gates: list[NodeGate] = []

    def install(hold: Callable[[int, Any], bool]) -> NodeGate:
        g = StepGate(hold)
        monkeypatch.setattr(verification_mod, "verification", g.wrap(_verification))
        gates.append(g)
        return g

    yield install
    for g in gates:
        g.release()


def first_call(call_no: int, state: Any) -> bool:
    return call_no == 0


async def start_job(
    client: Client, queue: str, *, collection: str = LITERATURE, intent: str = INTENT, **options: Any
) -> WorkflowHandle:
    return await submit(
        client, JobInput(job_id=new_job_id(), collection=collection, intent=intent, **options), queue=queue
    )


async def result_of(handle: WorkflowHandle) -> dict[str, Any]:
    """The job's result, a failed job's too (its workflow ends Failed: workflows.job_failure)."""
    return await asyncio.wait_for(job_result(handle), RESULT_TIMEOUT_S)


def ranked_key(result: dict[str, Any]) -> list[tuple[str, float]]:
    return [(r["docid"], r["score"]) for r in result["ranked"]]


def titles(result: dict[str, Any]) -> list[str]:
    return [r["title"].lower() for r in result["ranked"]]


async def assert_replays(handle: WorkflowHandle) -> None:
    """Replay the job's history with a fresh plugin and graph: raises on nondeterminism."""
    history = await handle.fetch_history()
    replayer = Replayer(workflows=[SearchJob], plugins=[LangGraphPlugin(graphs=graphs())])
    outcome = await replayer.replay_workflow(history)
    assert outcome.replay_failure is None


@pytest.fixture(scope="module")
async def baseline(env: WorkflowEnvironment, literature, quarry_home: Path) -> tuple[WorkflowHandle, dict[str, Any]]:
    """Job A: the intent run uninterrupted; its worker stays up so the job can still be queried."""
    q = f"quarry-test-{uuid.uuid4().hex}"
    async with build_worker(env.client, home=quarry_home, queue=q):
        handle = await start_job(env.client, q)
        yield handle, await result_of(handle)


# -- 1. a job completes ------------------------------------------------------------------------


async def test_job_completes_through_temporal(baseline, literature, quarry_home: Path) -> None:
    handle, result = baseline
    assert result["status"] == "completed" and result["error"] is None
    assert result["stop_reason"] in ("converged", "max_rounds", "no_new_queries")
    ranked = result["ranked"]
    assert {r["docid"] for r in ranked[:6]} == ON_TOPIC_IN_RANGE
    records = literature.corpus.get_many([r["docid"] for r in ranked])
    assert set(records) == {r["docid"] for r in ranked}
    for r in ranked:
        assert 2015 <= r["year"] <= 2020 and "survey" not in r["title"].lower()
        assert r["evidence"] and all(
            1 <= e["lines"][0] <= e["lines"][1] <= len(literature.corpus.lines(r["docid"])) for e in r["evidence"]
        )

    stored = JobStore(quarry_home / "jobs.sqlite").get(handle.id)
    assert stored["status"] == "completed" and stored["result"] == result
    assert stored["round"] == result["stats"]["rounds"] == result["rounds"]

    # Trajectory tiers: previewed and opened documents were surfaced; cited ones were read.
    traj = result["trajectory"]
    surfaced = JobStore(quarry_home / "jobs.sqlite").surfaced(handle.id)
    assert traj["surfaced"] == len(surfaced) > 0
    assert 0 < len(traj["previewed"]) <= traj["surfaced"] and set(traj["previewed"]) <= surfaced
    assert set(traj["opened"]) <= surfaced and len(set(traj["opened"])) == len(traj["opened"])
    assert traj["cited"] == [r["docid"] for r in ranked]
    assert set(traj["cited"]) <= set(traj["opened"]) | set(traj["previewed"])
    stats = result["stats"]
    assert stats["tool_calls"] == stats["searches"] + stats["reads"] + stats.get("citations", 0)

    # The durable job and an in-process run of the same graph rank identically.
    app = make_search_graph().compile()
    await app.ainvoke(initial_state("in-process-twin", LITERATURE, INTENT, config=JobConfig()))
    local = JobStore(quarry_home / "jobs.sqlite").load_draft("in-process-twin")
    assert ranked_key(local) == ranked_key(result)

    progress = await handle.query(SearchJob.progress)
    assert progress["status"] == "completed" and progress["node"] == "answer"


# -- 2. progress while running -----------------------------------------------------------------


async def test_progress_query_answers_mid_job(env, literature, quarry_home, queue, gate) -> None:
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue, config=JobConfig(max_seconds=120))
        await held.wait_entered()
        progress = await handle.query(SearchJob.progress)
        assert progress["job_id"] == handle.id and progress["status"] == "running"
        # Round 1 runs as one activity (a one-step round): the workflow names the round and its node...
        assert progress["node"] == ONE_ROUND_NODE and progress["round"] == 1 and progress["running"] == [ONE_ROUND_NODE]
        assert progress["candidates"] == 0 and progress["top"] == [], "the workflow has round 1's state at its end"
        # ... and the round checkpointed its retrieval, which the job store (events, pages) shows now.
        stored = JobStore(quarry_home / "jobs.sqlite").get(handle.id)["state"]
        assert stored["node"] == "retrieval" and stored["round"] == 1 and stored["pool"]["size"] > 0
        assert len(stored["top"]) >= 5 and stored["pool"]["verified"] == 0
        assert stored["stats"]["tool_calls"] == 2, "round 1's lexical and semantic searches, no document read yet"
        assert progress["budget"]["seconds"] == 120 and progress["budget"]["left"] > 0
        assert not progress["budget"]["submit_now"] and not progress["stop_requested"]
        held.release()
        result = await result_of(handle)
        done = await handle.query(SearchJob.progress)
    assert result["status"] == "completed"
    assert done["status"] == "completed" and done["node"] == "answer" and done["round"] == result["rounds"]
    assert done["running"] == [], "no node runs once the job has answered"


# -- 3. stop signal ------------------------------------------------------------------------------


async def test_stop_signal_answers_from_best_state(env, literature, quarry_home, queue, gate) -> None:
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue)
        await held.wait_entered()
        await handle.signal(SearchJob.stop)
        await poll_until(lambda: handle.query(SearchJob.progress), lambda p: p["stop_requested"])
        held.release()
        result = await result_of(handle)
    assert result["status"] == "stopped" and result["stop_reason"] == "stopped"
    assert result["rounds"] == 1 and held.calls == [1], "answered once round 1 was over"
    assert {r["docid"] for r in result["ranked"]} == ON_TOPIC_IN_RANGE
    assert all(r["evidence"] for r in result["ranked"])
    assert JobStore(quarry_home / "jobs.sqlite").get(handle.id)["status"] == "stopped"


# -- 4. steering ---------------------------------------------------------------------------------


async def test_steer_update_adds_an_exclusion(env, baseline, literature, quarry_home, queue, gate) -> None:
    assert any("benchmark" in t for t in titles(baseline[1])), "unsteered, the benchmark paper ranks"
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue)
        await held.wait_entered()
        for bad in ("", "   ", "the of and"):
            with pytest.raises(WorkflowUpdateFailedError) as info:
                await handle.execute_update(SearchJob.steer, bad)
            assert "steering text is empty" in str(info.value.cause) or "no requirement found" in str(info.value.cause)
        accepted = await handle.execute_update(SearchJob.steer, "  not   benchmark ")
        assert accepted == {"accepted": "not benchmark", "applies_from_round": 2, "extra_round": False}
        held.release()
        result = await result_of(handle)
        await assert_replays(handle)
    assert result["status"] == "completed"
    checklist = {(i["kind"], i["text"]) for i in result["checklist"]}
    assert {("exclusion", "not surveys"), ("exclusion", "not benchmark")} <= checklist
    assert result["ranked"] and not [t for t in titles(result) if "benchmark" in t]
    assert {r["docid"] for r in result["ranked"][:5]} == ON_TOPIC_IN_RANGE - {"gnn05"}
    assert not any("benchmark" in q for q in result["queries"]), "an exclusion is never searched for"


def in_round(n: int) -> Callable[[int, Any], bool]:
    """Hold the verification of round `n`."""
    return lambda call_no, state: int(state.get("round", 0)) == n


async def test_a_steer_in_the_last_planned_round_shapes_the_final_list(
    env, baseline, literature, quarry_home, queue, gate
) -> None:
    """A steer sent while the job's last planned round runs (that round goes on to answer inside its
    activity) is promised one more round, gets it, and the final list honours it; the result counts
    that round although "not benchmark" adds no query, and says where the note took effect."""
    assert "gnn05" in {r["docid"] for r in baseline[1]["ranked"]}, "unsteered, the benchmark paper ranks"
    held = gate(in_round(2))
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue, config=JobConfig(max_rounds=2))
        await held.wait_entered()
        accepted = await handle.execute_update(SearchJob.steer, "not benchmark")
        assert accepted == {"accepted": "not benchmark", "applies_from_round": 3, "extra_round": True}
        held.release()
        result = await result_of(handle)
        await assert_replays(handle)
    assert result["status"] == "completed" and result["rounds"] == 3
    assert result["steering"] == [
        {"text": "not benchmark", "round": 2, "applies_from_round": 3, "applied": "round", "applied_round": 3}
    ]
    assert result["ranked"] and "gnn05" not in {r["docid"] for r in result["ranked"]}
    assert not [t for t in titles(result) if "benchmark" in t]


async def test_a_steer_before_a_stop_still_shapes_the_final_list(env, literature, quarry_home, queue, gate) -> None:
    """A job stopped after it took a steer answers at once — from the plan the steer changed."""
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue)
        await held.wait_entered()
        accepted = await handle.execute_update(SearchJob.steer, "not benchmark")
        assert accepted == {"accepted": "not benchmark", "applies_from_round": 2, "extra_round": False}
        await handle.signal(SearchJob.stop)
        await poll_until(lambda: handle.query(SearchJob.progress), lambda p: p["stop_requested"])
        held.release()
        result = await result_of(handle)
        await assert_replays(handle)
    assert result["status"] == "stopped" and result["rounds"] == 1 and held.calls == [1]
    assert result["steering"] == [
        {"text": "not benchmark", "round": 1, "applies_from_round": 2, "applied": "final_list"}
    ]
    assert {r["docid"] for r in result["ranked"]} == ON_TOPIC_IN_RANGE - {"gnn05"}


async def test_a_steer_the_job_could_not_apply_is_reported(env, literature, quarry_home, queue, gate) -> None:
    """A job cut off before it folded a steer in (here cancelled mid-round) still answers, and its
    result says the steer was not applied, and why."""
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue)
        await held.wait_entered()
        await handle.execute_update(SearchJob.steer, "not benchmark")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
    stored = JobStore(quarry_home / "jobs.sqlite").get(handle.id)
    assert stored["status"] == "cancelled" and stored["result"]["ranked"]
    assert stored["result"]["steering"] == [
        {
            "text": "not benchmark",
            "round": 1,
            "applies_from_round": 2,
            "applied": "not_applied",
            "why": "the job was cancelled first",
        }
    ]


async def test_year_steering_is_refused_when_the_store_has_no_years(
    env, literature, quarry_home, queue, gate, tmp_path: Path
) -> None:
    from stores.collection import ingest
    from tests.fakes import search_docs, write_jsonl

    ingest(
        write_jsonl(
            tmp_path / "noyears.jsonl", [{k: v for k, v in d.items() if k != "metadata"} for d in search_docs()]
        ),
        "wf-noyears",
        home=quarry_home,
    )
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue, collection="wf-noyears")
        await held.wait_entered()
        accepted = await handle.execute_update(SearchJob.steer, "not benchmark")
        assert accepted["accepted"] == "not benchmark"
        # A year range waits for the plan, which round 1 makes (it plans the job too): held here.
        years = asyncio.create_task(handle.execute_update(SearchJob.steer, "only 2019-2021"))
        held.release()
        with pytest.raises(WorkflowUpdateFailedError) as info:
            await years
        assert "no publication year" in str(info.value.cause)
        result = await result_of(handle)
    assert result["status"] == "completed" and result["ranked"]
    assert not [i for i in result["checklist"] if i["kind"] == "metadata"]


# -- 5. budgets ----------------------------------------------------------------------------------


async def test_budget_submit_now_steer_answers_early(env, literature, quarry_home, queue, gate) -> None:
    budget = 8.0  # the steer fires at 5.6 s; the hard stop would come at 8 s
    held = gate(first_call)
    async with build_worker(env.client, home=quarry_home, queue=queue):
        began = time.monotonic()
        handle = await start_job(env.client, queue, config=JobConfig(max_seconds=budget))
        await held.wait_entered()
        progress = await poll_until(
            lambda: handle.query(SearchJob.progress), lambda p: p["budget"]["submit_now"], timeout_s=budget + 10
        )
        assert progress["status"] == "running" and progress["node"] == ONE_ROUND_NODE and progress["round"] == 1
        assert time.monotonic() - began >= 0.7 * budget - 0.5
        held.release()
        result = await result_of(handle)
        after = await handle.query(SearchJob.progress)
    assert result["status"] == "completed" and result["stop_reason"] == "budget_steer"
    assert result["rounds"] == 1 and held.calls == [1]
    assert {r["docid"] for r in result["ranked"]} == ON_TOPIC_IN_RANGE and all(r["evidence"] for r in result["ranked"])
    assert after["status"] == "completed" and after["budget"]["submit_now"]


async def test_budget_hard_stop_answers_from_best_state(env, literature, quarry_home, queue, gate) -> None:
    budget = 3.0
    held = gate(lambda call_no, state: True)  # verification never finishes before the budget ends
    async with build_worker(env.client, home=quarry_home, queue=queue):
        began = time.monotonic()
        handle = await start_job(env.client, queue, config=JobConfig(max_seconds=budget))
        await held.wait_entered()
        result = await result_of(handle)
        elapsed = time.monotonic() - began
    assert result["status"] == "budget_exhausted" and result["stop_reason"] == "budget_exhausted"
    assert elapsed >= budget and result["rounds"] == 1
    # Best state so far: round 1's retrieval pool, unverified (verification was cancelled).
    hits = {h.docid for h in literature.lucene.search("graph neural networks for molecular property prediction")}
    ranked = [r["docid"] for r in result["ranked"]]
    assert ranked and set(ranked) <= hits
    assert set(literature.corpus.get_many(ranked)) == set(ranked)
    assert not [r for r in result["ranked"] if r["evidence"]] and result["trajectory"]["opened"] == []
    assert JobStore(quarry_home / "jobs.sqlite").get(handle.id)["status"] == "budget_exhausted"
    events = [e async for e in handle.fetch_history_events()]
    assert any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED for e in events)


# -- 6. a worker dies mid-job ----------------------------------------------------------------------


# Evicting a running workflow from a stopped worker's cache leaves LangGraph's `astream` generator
# to be finalised by the garbage collector outside any event loop, which Python reports as an
# "Exception ignored" (unraisable) message; collected here so it is attributed to this test.
@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning", "ignore:coroutine .* was never awaited:RuntimeWarning"
)
async def test_worker_killed_mid_job_resumes_with_same_result(
    env, baseline, literature, quarry_home, queue, gate
) -> None:
    held = gate(first_call)
    first = build_worker(env.client, home=quarry_home, queue=queue)
    running = asyncio.create_task(first.run())
    handle = await start_job(env.client, queue)
    await held.wait_entered()
    await first.shutdown()  # the worker goes away while round 1's verification is in flight
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    async with build_worker(env.client, home=quarry_home, queue=queue):
        held.release()
        result = await result_of(handle)
        await assert_replays(handle)
    del first, running
    gc.collect()
    assert held.calls.count(1) == 2, "round 1's verification ran again on the new worker"
    expected = baseline[1]
    assert result["status"] == "completed" and handle.id != baseline[0].id
    assert ranked_key(result) == ranked_key(expected)
    assert result["run"] == expected["run"] and result["queries"] == expected["queries"]


# -- 7. replay -----------------------------------------------------------------------------------


async def test_history_replays_without_nondeterminism(baseline) -> None:
    await assert_replays(baseline[0])
    # The first round plans and the last answers inside their own activity (graphs.search_graph.round_).
    assert await activity_types(baseline[0]) == {ONE_ROUND_NODE, "finish_job"}


async def activity_types(handle: WorkflowHandle) -> set[str]:
    """The node (or workflow activity) names of the activities a job scheduled."""
    return {
        e.activity_task_scheduled_event_attributes.activity_type.name.rpartition(".")[2]
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }


async def test_a_job_that_ran_its_rounds_step_by_step_still_replays(
    env, literature, quarry_home, queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heuristic job started before one-step rounds (no ONE_STEP_ROUNDS marker in its history)
    replays under today's code step by step, as it ran: an upgrade does not break running jobs."""
    import graphs.search_graph as search_graph

    with monkeypatch.context() as before:  # the code before the patch: no marker, rounds step by step
        before.setattr(search_graph, "one_step_rounds", lambda state: False)
        before.setattr(search_graph, "plans_in_first_round", lambda state: False)
        async with build_worker(env.client, home=quarry_home, queue=queue):
            handle = await start_job(env.client, queue)
            result = await result_of(handle)
    assert result["status"] == "completed" and result["ranked"]
    assert {"retrieval", "verification", "reflection"} <= await activity_types(handle)
    assert ONE_ROUND_NODE not in await activity_types(handle)
    await assert_replays(handle)


async def test_a_job_that_planned_in_a_step_of_its_own_still_replays(
    env, literature, quarry_home, queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heuristic job started with one-step rounds but before its first round planned it (no
    PLAN_IN_FIRST_ROUND marker) replays under today's code with its navigator step, as it ran."""
    import graphs.search_graph as search_graph

    with monkeypatch.context() as before:
        before.setattr(search_graph, "plans_in_first_round", lambda state: False)
        async with build_worker(env.client, home=quarry_home, queue=queue):
            handle = await start_job(env.client, queue)
            result = await result_of(handle)
    assert result["status"] == "completed" and result["ranked"]
    assert {"navigator", ONE_ROUND_NODE} <= await activity_types(handle)
    await assert_replays(handle)


# -- 8. failure ----------------------------------------------------------------------------------


async def test_missing_collection_fails_fast_with_a_named_error(env, literature, quarry_home, queue) -> None:
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await start_job(env.client, queue, collection="no-such-collection")
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
        result = await result_of(handle)
    # The execution failed in Temporal (the Web UI says Failed), typed by the error's code, not retried.
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "no_collection" and cause.non_retryable
    assert result["status"] == "failed" and result["ranked"] == []
    assert result["error"]["code"] == "no_collection" and result["error"]["hint"]
    stored = JobStore(quarry_home / "jobs.sqlite").get(handle.id)
    assert stored["status"] == "failed" and stored["result"]["error"] == result["error"]
    assert stored["error"].startswith("no_collection: ")
    assert result == stored["result"], "the failure carries the stored result"
    await assert_replays(handle)
    events = [e async for e in handle.fetch_history_events()]
    # The node's activity failed with an ApplicationError typed by the code, carrying the record.
    failed = [
        e.activity_task_failed_event_attributes.failure
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert failed and all(f.application_failure_info.type == "no_collection" for f in failed)
    assert all(f.application_failure_info.non_retryable for f in failed)
    # Non-retryable: every activity ran exactly once.
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert attempts and set(attempts) == {1}


# -- 9. small histories --------------------------------------------------------------------------


async def test_history_stays_small_because_the_pool_is_kept_by_reference(baseline, literature) -> None:
    """The candidate pool (every candidate with evidence) and the result are in the job store; no
    activity carries them in or out, so no payload grows with the pool."""
    handle, result = baseline
    history = await handle.fetch_history()
    sizes = sorted((e.ByteSize(), e.event_type) for e in history.events)
    total = sum(size for size, _ in sizes)
    # Only the finished result itself (returned by the last activity and by the workflow) is big.
    result_bytes = len(json.dumps(result))
    big = [(size, kind) for size, kind in sizes if size > 16_000]
    assert {kind for _, kind in big} <= {
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    }, big
    assert len(big) <= 2 and all(size < 2 * result_bytes for size, _ in big)
    assert total < 200_000, f"{total} bytes of history for {result['rounds']} rounds"
    evidence = result["ranked"][0]["evidence"][0]["chunk"]
    assert history.to_json().count(evidence[:80]) <= 2, "evidence text crosses no activity but the last"


# -- reproducibility -----------------------------------------------------------------------------


async def test_two_runs_give_byte_identical_ranked_lists_and_name_what_they_came_from(
    env, baseline, literature, quarry_home, queue
) -> None:
    """The same heuristic job on the same collection ranks byte for byte the same, and its
    manifest names the corpus hash, BM25 parameters and analyzer, code and policy."""
    async with build_worker(env.client, home=quarry_home, queue=queue):
        again = await result_of(await start_job(env.client, queue))
    first = baseline[1]
    assert json.dumps(again["ranked"], sort_keys=True) == json.dumps(first["ranked"], sort_keys=True)
    assert again["run"] == first["run"]
    manifest = again["manifest"]
    assert manifest == first["manifest"]
    assert manifest["corpus_sha256"] == literature.corpus.fingerprint
    assert manifest["collection_version"] == literature.version
    assert manifest["bm25"]["k1"] == literature.lucene.meta.k1 and "Analyzer" in manifest["bm25"]["analyzer"]
    assert manifest["policy"] == "heuristic" and manifest["model"] is None and manifest["prompts"] == {}
    shipped = load_verifier_file()  # the learned verifier orders the list when one is shipped, by name and hash
    assert manifest["ranker"] == (f"{shipped['name']}@{shipped['sha256']}" if shipped else HEURISTIC_ORDER)
    assert manifest["code_version"].startswith("0.1.0")


def test_the_workflows_own_activities_heartbeat_while_they_run(monkeypatch) -> None:
    """checkpoint_job, answer_from_state and finish_job had no heartbeat: a worker lost while it
    held one was noticed at the 60 s attempt timeout (the two-workers drill's slow job). Wrapped
    in `beating`, a long one beats every HEARTBEAT_EVERY_S, and the workflow gives them the
    nodes' heartbeat timeout."""
    import threading

    from temporalio import activity
    from temporalio.testing import ActivityEnvironment

    import nodes.job.heartbeat as heartbeat
    from graphs.search_graph import HEARTBEAT_TIMEOUT, quick_activity_options
    from workflows.activities import answer_from_state, checkpoint_job, finish_job

    monkeypatch.setattr(heartbeat, "HEARTBEAT_EVERY_S", 0.01)
    beats = threading.Semaphore(0)
    seen: list[bool] = []

    @activity.defn
    @heartbeat.beating
    def slow_write() -> str:
        seen.append(all(beats.acquire(timeout=30) for _ in range(3)))  # held until three beats came
        return "written"

    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.release()
    assert env.run(slow_write) == "written" and seen == [True]
    assert slow_write.__name__ == "slow_write"
    assert quick_activity_options()["heartbeat_timeout"] == HEARTBEAT_TIMEOUT
    for fn in (checkpoint_job, answer_from_state, finish_job):
        assert getattr(fn, "__wrapped__", None) is not None, f"{fn.__name__} does not heartbeat"


# -- the control handed to the graph ---------------------------------------------------------------


@workflow.defn(sandboxed=False)
class ControlProbe:
    """Reads nodes.job.control the way graph code does, before, while and after it installs its own."""

    def __init__(self) -> None:
        self.control = Control(stop_requested=True)

    @workflow.run
    async def run(self) -> list[str]:
        seen = [current_control().answer_reason()]
        token = use_control(self.control)
        try:

            async def node() -> bool:  # a graph task, created after the install
                return current_control() is self.control

            seen += [current_control().answer_reason(), str(await asyncio.create_task(node()))]
        finally:
            reset_control(token)
        return [*seen, current_control().answer_reason()]


async def test_graph_code_reads_only_the_control_its_workflow_installs(env, queue) -> None:
    """nodes.job.control does not reach into the workflow instance by attribute name: a workflow's
    `control` attribute is not seen until the workflow installs it (`use_control`), which its
    drive does; its tasks then see that very object, and a reset takes it away again."""
    async with Worker(env.client, task_queue=queue, workflows=[ControlProbe]):
        seen = await env.client.execute_workflow(ControlProbe.run, id=f"probe-{uuid.uuid4().hex}", task_queue=queue)
    assert seen == ["", "stopped", "True", ""]


def test_each_workflow_runner_is_what_its_name_says() -> None:
    """The runners bench_jobs compares (--runners): Temporal's sandbox as it is, the sandbox with
    every module passed through (its restrictions still apply), and no sandbox."""
    from temporalio.worker import UnsandboxedWorkflowRunner
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

    from workflows.worker import RUNNERS, workflow_runner

    runners = {kind: workflow_runner(kind) for kind in RUNNERS}
    assert isinstance(runners["unsandboxed"], UnsandboxedWorkflowRunner)
    sandboxed, passthrough = runners["sandboxed"], runners["passthrough"]
    assert isinstance(sandboxed, SandboxedWorkflowRunner) and isinstance(passthrough, SandboxedWorkflowRunner)
    assert passthrough.restrictions.passthrough_all_modules and not sandboxed.restrictions.passthrough_all_modules
    assert passthrough.restrictions.invalid_module_members == sandboxed.restrictions.invalid_module_members
    with pytest.raises(ValueError, match="unknown workflow runner"):
        workflow_runner("no-such-runner")
