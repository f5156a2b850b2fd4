"""`react` and `llm` jobs over Anthropic's own wire format: a worker's default model factory →
langchain-anthropic → the anthropic SDK → a stand-in Messages API on loopback
(tests.anthropic_standin) that refuses what the real service refuses, computes usage and prompt
caching from what it is sent, and answers 429/529 with `retry-after` when scripted to."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from nodes.job.config import JobConfig, ModelSettings, Price
from tests.anthropic_standin import AnthropicStandin, overloaded, rate_limited, tool_use
from tests.conftest import LITERATURE
from tests.fakes import files_holding, job_over_the_wire, structured_args
from tests.openai_standin import Request

MODEL = "anthropic:claude-standin"
INTENT = "graph neural networks for molecular property prediction"
RESULT_TIMEOUT_S = 120.0
PRICE = Price(input=3.0, cached_input=0.3, output=15.0, cache_write=3.75)


@pytest.fixture
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique key in the (in-process) worker's environment; nothing may ever write it."""
    key = "sk-ant-test-" + uuid.uuid4().hex
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)  # would win over ANTHROPIC_BASE_URL
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return key


async def run(env, home: Path, policy: str, config: JobConfig, mode: str = "list") -> dict[str, Any]:
    return await job_over_the_wire(env, home, LITERATURE, INTENT, policy, config, mode, RESULT_TIMEOUT_S)


def marked(body: dict[str, Any]) -> list[str]:
    """Where a request put its cache breakpoints: 'system', or 'messages.N'."""
    out = []
    system = body.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in system):
        out.append("system")
    for i, m in enumerate(body["messages"]):
        content = m["content"] if isinstance(m["content"], list) else []
        if any("cache_control" in b for b in content) or any(
            isinstance(b.get("content"), list) and any("cache_control" in c for c in b["content"]) for b in content
        ):
            out.append(f"messages.{i}")
    return out


def priced(usages: list[dict[str, int]], price: Price) -> float:
    return (
        sum(
            u["input_tokens"] * price.input
            + u["cache_read_input_tokens"] * price.cached_input
            + u["cache_creation_input_tokens"] * (price.cache_write or price.input)
            + u["output_tokens"] * price.output
            for u in usages
        )
        / 1e6
    )


async def test_react_job_caches_its_prefix_on_anthropic_and_waits_out_a_rate_limit(
    env, literature, quarry_home: Path, anthropic_key: str, spans, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        rate_limited(retry_after_s=1),
        tool_use("search", {"reason": "find GNN papers", "query": "graph neural networks molecules"}),
        tool_use("read_document", {"reason": "check the best hit", "docid": "gnn01"}),
        tool_use("submit", {"reason": "this answers it", "docids": ["gnn01"]}),
    ]
    with AnthropicStandin(script) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        config = JobConfig(models=ModelSettings(model=MODEL), prices={MODEL: PRICE}, max_seconds=120.0)
        result = await run(env, quarry_home, "react", config)
    requests = server.chat_requests()

    assert server.rejected == [], "Quarry sent a request the Messages API refuses"
    assert result["status"] == "completed" and result["stop_reason"] == "submitted", result.get("fallbacks")
    assert result["submitted"]["docids"] == ["gnn01"] and not result.get("fallbacks")

    # The 429 was waited out inside the call (no failed activity attempt) and counted.
    assert len(requests) == 4 and requests[0].body == requests[1].body
    u = result["usage"]
    assert (u["calls"], u["retries"]) == (3, 1)

    # The stable prefix carries the breakpoints: system (tools come before it) and the task,
    # plus the newest message; never more than the API's four.
    first, second = requests[1].body, requests[2].body
    assert marked(first) == ["system", "messages.0"]
    assert marked(second) == ["system", "messages.0", f"messages.{len(second['messages']) - 1}"]
    assert "<task" in json.dumps(first["messages"][0]) and INTENT in json.dumps(first["messages"][0])
    # … so the second turn read the first turn's prefix from the cache, and the third the second's.
    reads = [s["cache_read_input_tokens"] for s in server.usages]
    assert reads[0] == 0 and reads[1] > 0 and reads[2] > reads[1]

    # Usage is what the wire said, cache reads and writes apart, priced at their own rates.
    assert u["input_tokens"] == sum(
        s["input_tokens"] + s["cache_read_input_tokens"] + s["cache_creation_input_tokens"] for s in server.usages
    )
    assert u["cached_input_tokens"] == sum(reads)
    assert u["cache_write_input_tokens"] == sum(s["cache_creation_input_tokens"] for s in server.usages)
    assert u["output_tokens"] == sum(s["output_tokens"] for s in server.usages)
    assert u["dollars"] == pytest.approx(priced(server.usages, PRICE))

    # One `chat` span per model call, with the cache figures and the wait it made.
    chats = [s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}"]
    assert len(chats) == 3
    assert [c.attributes["gen_ai.usage.cache_read.input_tokens"] for c in chats] == reads
    assert [c.attributes["quarry.model.retries"] for c in chats] == [1, 0, 0]
    assert [e.name for e in chats[0].events] == ["rate_limited"]

    # Each turn is a span holding its chat call and, from the next activity, the tools it called.
    finished = spans.get_finished_spans()
    turns = {s.context.span_id: s for s in finished if s.name.startswith("react turn ")}
    assert sorted(s.attributes["quarry.turn"] for s in turns.values()) == [1, 2, 3]
    assert all(c.parent is not None and c.parent.span_id in turns for c in chats)
    tool_spans = [s for s in finished if s.name.startswith("execute_tool ") and s.attributes.get("gen_ai.tool.type") == "function"]  # fmt: skip
    under = {turns[t.parent.span_id].attributes["quarry.turn"]: t.name for t in tool_spans if t.parent and t.parent.span_id in turns}  # fmt: skip
    assert under == {1: "execute_tool search", 2: "execute_tool read_document"}, [t.name for t in tool_spans]

    # The key went only where it belongs.
    assert all(anthropic_key in (r.headers.get("x-api-key", "") + r.headers.get("authorization", "")) for r in requests)
    assert anthropic_key not in json.dumps(result)
    assert files_holding(quarry_home, [anthropic_key]) == []


def navigator_and_librarians(request: Request) -> dict[str, Any]:
    """Answers whichever structured call the `llm` policy forces (tool_choice names the schema)."""
    name = (request.body.get("tool_choice") or {}).get("name")
    return tool_use(name, structured_args(name, json.dumps(request.body["messages"])), output_tokens=25)


async def test_llm_job_over_the_anthropic_wire_format_survives_an_overload(
    env, literature, quarry_home: Path, anthropic_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script: list[Any] = [overloaded(retry_after_s=1)] + [navigator_and_librarians] * 40
    with AnthropicStandin(script) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        models = ModelSettings(model=MODEL, judge_top=4, judge_batch_size=2, judge_concurrency=2)
        config = JobConfig(models=models, prices={MODEL: PRICE}, max_seconds=120.0)
        result = await run(env, quarry_home, "llm", config, mode="answer")

    assert server.rejected == [], "Quarry sent a request the Messages API refuses"
    assert result["status"] == "completed" and result["fallbacks"] == [], result.get("fallbacks")
    forced = [(r.body.get("tool_choice") or {}).get("name") for r in server.chat_requests()]
    assert forced[:2] == ["PlanOut", "PlanOut"] and "JudgementsOut" in forced and forced[-1] == "AnswerOut"
    assert all(r.body.get("tool_choice", {}).get("type") == "tool" for r in server.chat_requests())
    u = result["usage"]
    assert u["retries"] == 1 and u["calls"] == len(forced) - 1
    assert u["output_tokens"] == 25 * u["calls"]
    assert "[gnn01]" in result["answer"]["explanation"]


async def test_a_long_rate_limit_wait_still_ends_the_job_at_its_budget(
    env, literature, quarry_home: Path, anthropic_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry-after longer than the job's remaining time: the wait watches the job's deadline and
    gives up, so the job ends on its budget instead of sleeping through it and asking again."""
    script: list[Any] = [rate_limited(retry_after_s=50), tool_use("submit", {"reason": "late", "docids": ["gnn01"]})]
    with AnthropicStandin(script) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        config = JobConfig(models=ModelSettings(model=MODEL), prices={MODEL: PRICE}, max_seconds=10.0)
        result = await run(env, quarry_home, "react", config)
    assert len(server.chat_requests()) == 1, "the job asked again after the wait instead of ending on its budget"
    assert result["status"] == "budget_exhausted" and result["stop_reason"] == "budget_exhausted"
