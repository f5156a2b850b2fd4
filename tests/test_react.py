"""The `react` policy as whole durable jobs on a real Temporal dev server, driven by scripted
LangChain chat models (search → browse → read → submit).

Each test runs its own worker on a uuid task queue with a model factory that returns the test's
`ScriptedChatModel`; the job goes through the same workflow, graph, activities, job store and
tools as a user's job. To be mid-job deterministically a test blocks inside a scripted model
call or a node until it releases it (never a sleep).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from temporalio.client import WorkflowExecutionStatus

import nodes.react.agent as react_mod
from nodes.job.config import JobConfig, ModelSettings, Price
from nodes.react.prompts import REFUSED
from stores.jobs import JobStore
from tests.conftest import LITERATURE
from tests.fakes import ModelRouter, ScriptedChatModel, poll_until, tool_call, usage
from workflows.client import new_job_id, submit
from workflows.search_job import SearchJob
from workflows.shared import JobInput
from workflows.worker import build_worker

INTENT = "graph neural networks for molecular property prediction"
MODEL = "openai:scripted-agent"
RESULT_TIMEOUT_S = 90.0


def react_config(**overrides: Any) -> JobConfig:
    models = ModelSettings(model=MODEL, **overrides.pop("models", {}))
    return JobConfig(models=models, **overrides)


async def run_job(
    env,
    home: Path,
    model: ScriptedChatModel,
    *,
    mode: str = "list",
    budget: float = 120.0,
    intent: str = INTENT,
    collection: str = LITERATURE,
    config: JobConfig | None = None,
    during=None,
) -> tuple[str, dict[str, Any]]:
    queue = f"quarry-test-{uuid.uuid4().hex}"
    async with build_worker(
        env.client, home=home, queue=queue, models=ModelRouter(**{MODEL.replace(":", "__"): model})
    ):
        inp = JobInput(
            job_id=new_job_id(),
            collection=collection,
            intent=intent,
            mode=mode,
            policy="react",
            config=replace(config or react_config(), max_seconds=budget),
        )
        handle = await submit(env.client, inp, queue=queue)
        if during is not None:
            await during(handle)
        return inp.job_id, await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)


def conversation(home: Path, job_id: str) -> list[Any]:
    from langchain_core.messages import messages_from_dict

    return messages_from_dict(JobStore(home / "jobs.sqlite").messages(job_id))


def search_browse_read_submit(*extra_ids: str, ranked: bool = False) -> list[AIMessage]:
    return [
        tool_call("search", usage(100, 20), reason="find GNN papers", query="graph neural networks molecular"),
        tool_call(
            "read_search_results",
            usage(200, 20, cached=80),
            reason="browse past the preview",
            search_id="s1",
            offset=6,
            limit=10,
        ),
        tool_call("read_document", usage(300, 20, cached=180), reason="check the best hit", docid="gnn01"),
        tool_call(
            "submit",
            usage(400, 30, cached=280, reasoning=10),
            reason="these answer it",
            docids=["gnn01", "gnn02", *extra_ids],
            **({"ranked": True} if ranked else {}),
        ),
    ]


# -- 1. search → browse → read → submit ------------------------------------------------------------


async def test_a_ranked_submission_keeps_the_models_order(env, literature, quarry_home: Path) -> None:
    """`submit(ranked=true)`: the model's order is the shown order, and the result says so."""
    script = search_browse_read_submit(ranked=True)
    script[-1].tool_calls[0]["args"]["docids"] = ["gnn02", "gnn01"]  # an order the evidence rule need not give
    _, result = await run_job(env, quarry_home, ScriptedChatModel(script=script))
    assert result["order"] == "model" and [r["docid"] for r in result["ranked"]][:2] == ["gnn02", "gnn01"]
    assert result["submitted"]["docids"] == ["gnn02", "gnn01"]


async def test_react_job_searches_browses_reads_and_submits(env, literature, quarry_home: Path) -> None:
    model = ScriptedChatModel(script=search_browse_read_submit("999999"))
    prices = {MODEL: Price(input=2.0, cached_input=1.0, output=8.0)}
    job_id, result = await run_job(env, quarry_home, model, config=react_config(prices=prices))
    assert result["status"] == "completed" and result["policy"] == "react" and result["stop_reason"] == "submitted"
    # The submission counts only documents a search returned; the invented id is dropped.
    assert result["submitted"] == {"docids": ["gnn01", "gnn02"], "dropped": ["999999"]}
    ranked = [r["docid"] for r in result["ranked"]]
    # Not submitted as a ranking: ordered by the evidence rule, the model's list kept in `submitted`.
    assert result["order"] == "evidence" and "999999" not in result["run"]
    shown = [r for r in result["ranked"] if r["evidence"]]
    assert [r["rank_score"] for r in shown] == sorted((r["rank_score"] for r in shown), reverse=True)
    assert {"gnn01", "gnn02"} <= set(ranked)
    assert set(literature.corpus.get_many(result["run"])) == set(result["run"]), "every output id is in the store"
    assert all(r["evidence"] for r in result["ranked"]), "every shown document carries its evidence"

    # The right tool arguments reached the tools, each with its reason (trace and trajectory).
    steps = result["trajectory"]["steps"]
    assert [(s["tool"], s["reason"]) for s in steps] == [
        ("search", "find GNN papers"),
        ("read_search_results", "browse past the preview"),
        ("read_document", "check the best hit"),
        ("submit", "these answer it"),
    ]
    assert steps[0]["query"] == "graph neural networks molecular" and steps[1]["offset"] == "6"
    assert result["trajectory"]["opened"] == ["gnn01"]
    # Ranks 1-5 of s1, then 6-10: the whole ranking (only the ten GNN papers match those words).
    assert sorted(result["trajectory"]["previewed"]) == [f"gnn{k:02d}" for k in range(10)]

    # Token and cost totals are the scripted usage, priced by the job's table.
    u = result["usage"]
    assert (u["input_tokens"], u["cached_input_tokens"], u["output_tokens"], u["reasoning_tokens"], u["calls"]) == (
        1000,
        540,
        90,
        10,
        4,
    )
    assert u["dollars"] == pytest.approx(((1000 - 540) * 2.0 + 540 * 1.0 + 90 * 8.0) / 1e6)

    # The conversation is in the job store, append-only: task, then (reply, tool result) × 4.
    msgs = conversation(quarry_home, job_id)
    assert [type(m).__name__ for m in msgs] == ["HumanMessage"] + ["AIMessage", "ToolMessage"] * 4
    assert '<document docid="gnn01">' in msgs[6].content and "Variant" in msgs[6].content
    assert msgs[8].content.startswith("Submitted 2 document(s).") and "999999" in msgs[8].content
    # Every model call saw the same system prompt and tools, then the stored conversation so far:
    # a stable prefix and an append-only tail (what provider prompt caches need).
    assert len(model.calls) == 4
    systems = {c["messages"][0].content for c in model.calls}
    assert len(systems) == 1 and isinstance(model.calls[0]["messages"][0], SystemMessage)
    for k, call in enumerate(model.calls):
        assert [m.content for m in call["messages"][1:]] == [m.content for m in msgs[: 1 + 2 * k]]
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in model.calls[0]["tools"]}
    assert set(tools) == {"search", "read_search_results", "read_document", "submit"}  # no citation graph here
    assert all("reason" in p["properties"] and "reason" in p["required"] for p in tools.values())
    assert tools["read_search_results"]["properties"]["offset"]["type"] == "integer"


async def test_react_history_stays_small_and_holds_no_conversation(env, literature, quarry_home: Path) -> None:
    """State crosses activities by reference: no tool result text is in any Temporal payload."""
    model = ScriptedChatModel(script=search_browse_read_submit())
    queue = f"quarry-test-{uuid.uuid4().hex}"
    router = ModelRouter(**{MODEL.replace(":", "__"): model})
    async with build_worker(env.client, home=quarry_home, queue=queue, models=router):
        inp = JobInput(job_id=new_job_id(), collection=LITERATURE, intent=INTENT, policy="react", config=react_config())
        handle = await submit(env.client, inp, queue=queue)
        await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
        history = await handle.fetch_history()
    raw = history.to_json()
    body_line = literature.corpus.lines("gnn01")[3]  # a line of the document the model read
    assert body_line not in raw, "document text read by the model never enters workflow history"
    assert len(raw) < 400_000


# -- 2. the 0.7·T steer and the refusal after it ---------------------------------------------------------


async def test_budget_steer_arrives_as_a_message_and_retrieval_is_refused(env, literature, quarry_home) -> None:
    budget = 10.0
    steer_seen = threading.Event()

    def second_search(messages, kwargs):  # held until the job reports the submit-now steer
        assert steer_seen.wait(60), "the steer never fired"
        return tool_call("search", reason="one more look", query="message passing molecules")

    model = ScriptedChatModel(
        script=[
            tool_call("search", reason="first look", query="graph neural networks"),
            second_search,
            tool_call("search", reason="ignore the steer", query="graph networks chemistry"),
            tool_call("submit", reason="time is up", docids=["gnn01"]),
        ]
    )

    async def during(handle) -> None:
        progress = await poll_until(
            lambda: handle.query(SearchJob.progress), lambda p: p["budget"]["submit_now"], timeout_s=budget + 10
        )
        assert progress["status"] == "running"
        steer_seen.set()

    began = time.monotonic()
    job_id, result = await run_job(env, quarry_home, model, budget=budget, during=during)
    assert time.monotonic() - began >= 0.7 * budget - 0.5
    assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01"]
    msgs = conversation(quarry_home, job_id)
    kinds = [(type(m).__name__, m.content[:60]) for m in msgs]
    steer_at = next(
        i for i, m in enumerate(msgs) if isinstance(m, HumanMessage) and "budget is nearly spent" in m.content
    )
    # The search issued before the steer ran; the one after it was refused with an instruction to submit.
    assert isinstance(msgs[steer_at - 1], ToolMessage) and "search_results" in msgs[steer_at - 1].content, kinds
    refusal = msgs[steer_at + 2]
    assert isinstance(refusal, ToolMessage) and refusal.content == REFUSED.format(what="time"), kinds
    assert len(model.calls) == 4


async def test_token_budget_triggers_the_same_steer(env, literature, quarry_home) -> None:
    model = ScriptedChatModel(
        script=[
            tool_call("search", usage(400, 0), reason="first", query="graph neural networks"),
            tool_call("search", usage(400, 0), reason="second", query="molecular property prediction"),
            tool_call("read_document", usage(100, 0), reason="after the steer", docid="gnn01"),
            tool_call("submit", usage(50, 0), reason="done", docids=["gnn01"]),
        ]
    )
    job_id, result = await run_job(env, quarry_home, model, config=react_config(max_tokens=1000))
    msgs = conversation(quarry_home, job_id)
    steers = [m.content for m in msgs if isinstance(m, HumanMessage) and "budget is nearly spent" in m.content]
    assert steers == [
        '<note from="quarry">The job\'s tokens budget is nearly spent. Do not search or read any more: '
        "call submit now with what you have.</note>"
    ]
    assert REFUSED.format(what="tokens") in [m.content for m in msgs if isinstance(m, ToolMessage)]
    assert result["usage"]["total_tokens"] == 950 and result["status"] == "completed"


# -- 3. a worker killed mid-conversation --------------------------------------------------------------


@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning", "ignore:coroutine .* was never awaited:RuntimeWarning"
)
async def test_worker_killed_after_a_model_call_resumes_without_calling_again(
    env, literature, quarry_home, monkeypatch
) -> None:
    """The worker dies after the model answered turn 2 but before the activity completed: the new
    worker's retry finds the stored reply and does not ask the model again."""
    real_agent = react_mod.agent
    entered, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def agent_then_hold(state):
        out = real_agent(state)
        runs.append(int(state.get("steps", 0)))
        if len(runs) == 2:  # turn 2: the reply is stored, the activity has not reported back
            entered.set()
            assert release.wait(120)
        return out

    monkeypatch.setattr(react_mod, "agent", agent_then_hold)
    model = ScriptedChatModel(script=search_browse_read_submit())
    router = ModelRouter(**{MODEL.replace(":", "__"): model})
    queue = f"quarry-test-{uuid.uuid4().hex}"
    first = build_worker(env.client, home=quarry_home, queue=queue, models=router)
    running = asyncio.create_task(first.run())
    inp = JobInput(job_id=new_job_id(), collection=LITERATURE, intent=INTENT, policy="react", config=react_config())
    handle = await submit(env.client, inp, queue=queue)
    assert await asyncio.to_thread(entered.wait, 60)
    await first.shutdown()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    async with build_worker(env.client, home=quarry_home, queue=queue, models=router):
        release.set()
        result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
    del first, running
    gc.collect()
    assert runs.count(1) == 2, "turn 2's agent activity ran twice (once per worker)"
    assert len(model.calls) == 4, "but the model was called once per turn"
    assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01", "gnn02"]
    msgs = conversation(quarry_home, inp.job_id)
    assert [type(m).__name__ for m in msgs] == ["HumanMessage"] + ["AIMessage", "ToolMessage"] * 4
    assert result["usage"]["calls"] == 4


# -- 4. an endpoint that fails: retries, then the heuristic answers -----------------------------------------


async def test_failing_model_falls_back_to_the_heuristic_and_says_so(env, literature, quarry_home) -> None:
    model = ScriptedChatModel(default=ConnectionError("connection refused by 127.0.0.1:9"))
    _job_id, result = await run_job(env, quarry_home, model, mode="answer")
    assert len(model.calls) == 3, "Temporal retried the model step, then it fell back"
    assert result["status"] == "completed" and result["stop_reason"] == "model_failed"
    steps = [f["step"] for f in result["fallbacks"]]
    assert steps == ["react agent", "react search", "answer"]
    assert "connection refused" in result["fallbacks"][0]["reason"]
    assert result["ranked"] and result["ranked"][0]["docid"].startswith("gnn")
    assert result["answer"]["explanation"] and result["citations"]["hallucination_rate"] == 0.0
    assert set(result["cited"]) <= {r["docid"] for r in result["ranked"]}


async def test_a_model_that_never_calls_a_tool_is_reminded_then_answered_for(env, literature, quarry_home) -> None:
    model = ScriptedChatModel(
        default=AIMessage(content="I think the answer is graph networks.", usage_metadata=usage(50, 5))
    )
    job_id, result = await run_job(env, quarry_home, model, config=react_config(models={"react_reminders": 2}))
    assert len(model.calls) == 3 and result["stop_reason"] == "no_tool_call"
    reminders = [
        m for m in conversation(quarry_home, job_id) if isinstance(m, HumanMessage) and "called no tool" in m.content
    ]
    assert len(reminders) == 2
    assert result["ranked"] and result["usage"]["calls"] == 3


async def test_tool_calls_written_as_text_and_bad_arguments_are_repaired(env, literature, quarry_home) -> None:
    """Small local models often write the call as JSON text, or with wrong arguments: the first is
    taken as a call, the second answered with a repair hint instead of an exception."""
    model = ScriptedChatModel(
        script=[
            AIMessage(
                content='{"name": "search", "arguments": {"reason": "text call", "query": "graph neural networks"}}'
            ),
            tool_call("read_search_results", reason="bad offset", search_id="s1", offset=0),
            tool_call("read_document", docid="gnn02"),  # no reason: still runs
            tool_call("no_such_tool", reason="?"),
            tool_call("submit", reason="done", docids=["gnn02"]),
        ]
    )
    job_id, result = await run_job(env, quarry_home, model)
    tool_msgs = [m.content for m in conversation(quarry_home, job_id) if isinstance(m, ToolMessage)]
    assert "<search_results" in tool_msgs[0]
    assert tool_msgs[1].startswith("Error in read_search_results: invalid arguments: offset")
    assert '<document docid="gnn02">' in tool_msgs[2]
    assert tool_msgs[3].startswith("Error in no_such_tool: there is no tool")
    assert result["submitted"]["docids"] == ["gnn02"] and result["trajectory"]["opened"] == ["gnn02"]
    assert [s["reason"] for s in result["trajectory"]["steps"]] == ["text call", "bad offset", "", "?", "done"]
