"""The `llm` policy as whole durable jobs: a navigator model writes the plan, librarian models
judge candidates in a fan-out of activities, the navigator reflects and answers with citations
that are checked. Models are scripted LangChain fakes behind the worker's model factory.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from temporalio.api.enums.v1 import EventType

from nodes.job.config import JobConfig, ModelSettings, Price
from nodes.ranking.ranker import HEURISTIC_ORDER
from stores.judgements import JudgementStore, judgements_path
from tests.conftest import LITERATURE
from tests.fakes import ModelRouter, ScriptedChatModel, structured_reply, usage
from workflows.client import new_job_id, submit
from workflows.shared import JobInput
from workflows.worker import build_worker

INTENT = "graph neural networks for molecular property prediction, not surveys"
NAV, JUDGE = "openai:scripted-navigator", "openai:scripted-librarian"
RESULT_TIMEOUT_S = 90.0
PLAN = dict(
    checklist=[
        {"kind": "topic", "text": "graph neural networks"},
        {"kind": "application", "text": "molecular property prediction"},
        {"kind": "exclusion", "text": "surveys"},
    ],
    queries=["graph neural network molecules message passing"],
)
TRUE_QUOTE = "message passing aggregates neighbour features"
ANSWER = (
    "Graph neural networks predict molecular properties such as solubility and toxicity [gnn01]. "
    "Transformers translate between languages [gnn02]. Quantum gravity is solved [999999]."
)


def librarian_reply(messages, kwargs) -> AIMessage:
    """Judges whatever batch it is shown: a true quote for m1, an invented one for m2, and an
    extra judgement of a document the batch does not hold."""
    prompt = messages[-1].content
    docids = re.findall(r'<document docid="([^"]+)">', prompt)
    judgements = [
        {
            "docid": d,
            "p": 0.9 if d.startswith("gnn") else 0.1,
            "items": [
                {"item_id": "m1", "score": 5, "quote": TRUE_QUOTE if d.startswith("gnn") else ""},
                {"item_id": "m2", "score": 5, "quote": "this paper cures every disease"},
            ],
        }
        for d in docids
    ]
    judgements.append({"docid": "zzz-not-in-batch", "p": 1.0, "items": []})
    return structured_reply("JudgementsOut", usage(500, 50), judgements=judgements)


def llm_config(**models: Any) -> JobConfig:
    settings = dict(model=NAV, judge_model=JUDGE, judge_top=6, judge_batch_size=2, judge_concurrency=2) | models
    return JobConfig(models=ModelSettings(**settings), prices={NAV: Price(1.0, 0.5, 4.0), JUDGE: Price(0.1, 0.05, 0.4)})


async def run_job(
    env,
    home: Path,
    nav: ScriptedChatModel,
    judge: ScriptedChatModel,
    *,
    mode: str = "list",
    config: JobConfig | None = None,
):
    queue = f"quarry-test-{uuid.uuid4().hex}"
    router = ModelRouter(**{NAV.replace(":", "__"): nav, JUDGE.replace(":", "__"): judge})
    async with build_worker(env.client, home=home, queue=queue, models=router):
        inp = JobInput(
            job_id=new_job_id(),
            collection=LITERATURE,
            intent=INTENT,
            mode=mode,
            policy="llm",
            config=replace(config or llm_config(), max_seconds=120),
        )
        handle = await submit(env.client, inp, queue=queue)
        result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
        events = [e async for e in handle.fetch_history_events()]
    return result, events


async def test_llm_policy_plans_judges_in_parallel_batches_and_answers_with_checked_citations(
    env, literature, quarry_home: Path
) -> None:
    nav = ScriptedChatModel(
        script=[
            AIMessage(content="Here is my plan: topic GNNs", usage_metadata=usage(300, 10)),  # malformed: repaired once
            structured_reply("PlanOut", usage(400, 60), **PLAN),
            structured_reply("ReflectOut", usage(600, 20), done=True),
            structured_reply(
                "AnswerOut", usage(900, 80), explanation=ANSWER, exact_answer="graph neural networks", confidence=80
            ),
        ]
    )
    judge = ScriptedChatModel(default=librarian_reply)
    result, events = await run_job(env, quarry_home, nav, judge, mode="answer")
    assert result["status"] == "completed" and result["policy"] == "llm" and result["fallbacks"] == []
    assert result["stop_reason"] == "navigator_done" and result["rounds"] == 1
    assert result["ranker"] == HEURISTIC_ORDER, "the verifier was trained on heuristic scores, not a librarian model's"

    # The navigator's checklist (after one repair), with the user's whole requirement kept as c0.
    checklist = [(i["id"], i["kind"], i["text"]) for i in result["checklist"]]
    assert checklist == [
        ("c0", "topic", "graph neural networks for molecular property prediction"),
        ("m1", "topic", "graph neural networks"),
        ("m2", "application", "molecular property prediction"),
        ("x1", "exclusion", "not surveys"),
    ]
    repair = nav.calls[1]["messages"][-1].content
    assert repair.startswith("That was not valid") and "PlanOut" in repair
    # Its query only added words to the user's.
    assert (
        "graph neural networks for molecular property prediction network molecules message passing" in result["queries"]
    )

    # Librarians: 6 candidates in batches of 2 → 3 activities, never more than 2 at once.
    scheduled = [
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "quarry-search.librarian"
    ]
    assert len(scheduled) == 3 and len(judge.calls) == 3 and judge.max_in_flight <= 2
    judged = [r for r in result["ranked"] if any(e.get("judged_by") for e in r["evidence"])]
    assert len(judged) == 6
    for r in judged:
        ev = {e["item"]: e for e in r["evidence"]}
        # A verbatim quote is evidence (with its line); an invented one is not, so m2 keeps the heuristic's passage.
        # The evidence quotes the document's own whole sentence holding the model's quote.
        got = ev["graph neural networks"]
        assert TRUE_QUOTE in got["chunk"].lower() and got["chunk"].endswith(".") and got["score"] == 5.0
        assert literature.corpus.read_span(r["docid"], *got["chars"]) == got["quote"]
        assert "cures every disease" not in ev["molecular property prediction"]["chunk"]
        first, last = got["lines"]
        held = " ".join(literature.corpus.lines(r["docid"])[first - 1 : last])
        assert TRUE_QUOTE in " ".join(held.lower().split()), "the line range holds the quote"
    assert "zzz-not-in-batch" not in result["run"]
    # Every librarian judgement is kept with the collection for self-tuning (stores.judgements).
    kept = [j for j in JudgementStore(judgements_path(literature.paths)).all() if j.job_id == result["job_id"]]
    assert sorted((j.docid, j.relevance, j.judge, j.source) for j in kept) == sorted(
        (r["docid"], 0.9 if r["docid"].startswith("gnn") else 0.1, JUDGE, "model") for r in judged
    )
    assert {j.intent for j in kept} == {INTENT}

    # The answer: one valid citation, one unsupported sentence, one document never opened.
    answer, cites = result["answer"], result["citations"]
    assert answer["exact_answer"] == "graph neural networks" and answer["confidence"] == 80
    assert "[gnn01]" in answer["explanation"] and "[gnn02]" not in answer["explanation"]
    assert "999999" not in answer["explanation"] and "Quantum gravity is solved." in answer["explanation"]
    assert (cites["checked"], cites["valid"]) == (3, 1) and cites["hallucination_rate"] == pytest.approx(
        2 / 3, abs=1e-3
    )
    assert {c["docid"]: c["reason"][:20] for c in cites["removed"]} == {
        "gnn02": "the document does no",
        "999999": "not a document this ",
    }
    assert [r["docid"] for r in result["references"]] == ["gnn01"] and result["cited"] == ["gnn01"]

    # Tokens and dollars: the scripted usage, priced per model.
    u = result["usage"]
    assert u["calls"] == 4 + 3 and u["input_tokens"] == 300 + 400 + 600 + 900 + 3 * 500
    nav_dollars = ((300 + 400 + 600 + 900) * 1.0 + (10 + 60 + 20 + 80) * 4.0) / 1e6
    judge_dollars = (3 * 500 * 0.1 + 3 * 50 * 0.4) / 1e6
    assert u["dollars"] == pytest.approx(nav_dollars + judge_dollars)
    assert u["by_model"][JUDGE]["calls"] == 3 and u["by_model"][NAV]["calls"] == 4


async def test_output_that_stays_malformed_falls_back_to_the_heuristic(env, literature, quarry_home) -> None:
    nav = ScriptedChatModel(default=AIMessage(content="no json at all", usage_metadata=usage(10, 5)))
    judge = ScriptedChatModel(default=AIMessage(content='{"judgements": "nope"}', usage_metadata=usage(10, 5)))
    result, _ = await run_job(env, quarry_home, nav, judge, config=llm_config())
    steps = [f["step"] for f in result["fallbacks"]]
    assert steps[0] == "navigator" and "librarian round 1 batch 0" in steps and "reflection" in steps
    assert "invalid structured output after 1 repair(s)" in result["fallbacks"][0]["reason"]
    # The heuristic plan and judgements stand: the same top as the heuristic policy's.
    assert [i["id"] for i in result["checklist"]][:1] == ["c1"]  # the heuristic's subject (its core is Plan.whole)
    assert {r["docid"] for r in result["ranked"][:6]} <= {f"gnn{k:02d}" for k in range(10)}
    assert not any(e.get("judged_by") for r in result["ranked"] for e in r["evidence"])
    assert result["usage"]["calls"] == len(nav.calls) + len(judge.calls)


async def test_endpoint_down_mid_job_falls_back_after_retries(env, literature, quarry_home) -> None:
    down = ConnectionError("All connection attempts failed")
    nav = ScriptedChatModel(default=down)
    judge = ScriptedChatModel(default=down)
    result, events = await run_job(env, quarry_home, nav, judge, mode="answer", config=llm_config(judge_top=2))
    assert result["status"] == "completed" and result["ranked"]
    reasons = {f["step"]: f["reason"] for f in result["fallbacks"]}
    assert set(reasons) >= {"navigator", "librarian round 1 batch 0", "answer"}
    assert all("All connection attempts failed" in r for r in reasons.values())
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert max(attempts) == 3, "model steps were retried by Temporal before falling back"
    assert result["answer"]["explanation"] and result["citations"]["hallucination_rate"] == 0.0
