"""A react job over real HTTP: langchain-openai → openai SDK → a stand-in server on loopback.

tests/test_react.py scripts LangChain models directly, which skips everything between Quarry and
the wire. Here the worker uses its default model factory (`nodes.llm.models.make_chat_model`) and
finds the endpoint only through OPENAI_BASE_URL / OPENAI_API_KEY, as a user's job does, so the
test sees what a real OpenAI-compatible server receives (tool schemas, token limit, the
conversation, the key) and how Quarry copes with what it sends back (an error that leaks the
key, usage with cache hits and reasoning tokens, an invented docid).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodes.job.config import JobConfig, ModelSettings, Price
from stores.redact import REDACTED
from tests.conftest import LITERATURE
from tests.fakes import files_holding
from tests.openai_standin import Request, StandinServer, rate_limited, tool_call_response
from workflows.client import new_job_id, submit
from workflows.shared import JobInput
from workflows.worker import build_worker

MODEL = "openai:standin-model"
INTENT = "graph neural networks for molecular property prediction"
RESULT_TIMEOUT_S = 90.0
PRICE = Price(input=2.0, cached_input=0.5, output=8.0)
# (prompt, completion, cached, reasoning) per successful call: distinct, so a dropped or doubled
# call changes every total.
USAGE = [(1200, 40, 0, 8), (2100, 35, 1024, 0), (3300, 60, 2048, 16)]


@pytest.fixture
def sentinel(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique API key in the (in-process) worker's environment; nothing may ever write it."""
    key = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)  # would win over OPENAI_BASE_URL in LangChain
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # loopback never goes through a proxy
    return key


def leaky_500(request: Request) -> tuple[int, dict[str, Any]]:
    """An endpoint error that echoes the caller's Authorization header (the key) back."""
    return 500, {
        "error": {
            "message": f"upstream exploded; request had {request.headers.get('authorization')}",
            "type": "server_error",
        }
    }


def leaky_search(request: Request) -> dict[str, Any]:
    """A model talked into repeating the key: it is in the tool call's reason (stored, traced, shown)."""
    reason = f"find GNN papers as {request.headers.get('authorization')}"
    args = {"reason": reason, "query": "graph neural networks"}
    return tool_call_response("search", args, *USAGE[0], call_id="call_0")


async def test_react_job_over_http_reports_usage_sends_tools_and_never_stores_the_key(
    env, literature, quarry_home: Path, sentinel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        leaky_500,
        leaky_search,
        tool_call_response(
            "read_document", {"reason": "check the best hit", "docid": "gnn01"}, *USAGE[1], call_id="call_1"
        ),
        tool_call_response(
            "submit", {"reason": "this answers it", "docids": ["gnn01", "999999"]}, *USAGE[2], call_id="call_2"
        ),
    ]
    with StandinServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        queue = f"quarry-test-{uuid.uuid4().hex}"
        config = JobConfig(models=ModelSettings(model=MODEL), prices={MODEL: PRICE}, max_seconds=120.0)
        async with build_worker(env.client, home=quarry_home, queue=queue):  # no models=: the real client
            inp = JobInput(job_id=new_job_id(), collection=LITERATURE, intent=INTENT, policy="react", config=config)
            handle = await submit(env.client, inp, queue=queue)
            result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
            history = (await handle.fetch_history()).to_json()
    requests = server.chat_requests()

    # The 500 was retried by Temporal (one failed activity attempt), then the job ran to its submit.
    assert len(requests) == 4, [r.path for r in server.requests]
    assert result["status"] == "completed" and result["stop_reason"] == "submitted", result.get("fallbacks")
    assert not result.get("fallbacks")
    assert result["submitted"] == {"docids": ["gnn01"], "dropped": ["999999"]}
    assert result["trajectory"]["opened"] == ["gnn01"]

    # Usage is parsed from the wire format (cached_tokens, reasoning_tokens) and priced.
    inp_t, out_t, cached, reasoning = (sum(u[i] for u in USAGE) for i in range(4))
    u = result["usage"]
    assert (u["input_tokens"], u["cached_input_tokens"], u["output_tokens"], u["reasoning_tokens"], u["calls"]) == (
        inp_t,
        cached,
        out_t,
        reasoning,
        3,
    )
    assert u["dollars"] == pytest.approx(
        ((inp_t - cached) * PRICE.input + cached * PRICE.cached_input + out_t * PRICE.output) / 1e6
    )

    # What the server received: the four tools, each asking for a reason, and a max_tokens that
    # OpenAI-compatible servers honour (LangChain itself sends only max_completion_tokens).
    first = requests[1].body
    assert first["model"] == "standin-model"
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in first["tools"]}
    assert set(tools) == {"search", "read_search_results", "read_document", "submit"}
    assert all("reason" in p["properties"] for p in tools.values())
    assert all(r.body["max_tokens"] == ModelSettings().max_output_tokens for r in requests)
    assert first.get("tool_choice") in (None, "auto")  # the agent may answer without a tool

    # The retry re-sent the same prompt; each turn extends the previous one, append-only.
    assert requests[0].body["messages"] == first["messages"]
    before, after = first["messages"], requests[2].body["messages"]
    assert before[0]["role"] == "system" and after[: len(before)] == before
    assistant, tool = after[len(before) :]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == "call_0"
    assert assistant["tool_calls"][0]["function"]["name"] == "search"
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_0" and "search_results" in tool["content"]
    assert requests[3].body["messages"][: len(after)] == after

    # The key went to the endpoint as its credential and nowhere else, although the endpoint echoed
    # it in an error and the model repeated it in a tool call.
    assert all(r.headers["authorization"] == f"Bearer {sentinel}" for r in requests)
    assert f"upstream exploded; request had Bearer {REDACTED}" in history, "the leaky error reached Temporal, redacted"
    repeated = f"find GNN papers as Bearer {REDACTED}"
    assert result["trajectory"]["steps"][0]["reason"] == repeated
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["reason"] == repeated
    assert not [k for k, r in enumerate(requests) if sentinel in json.dumps(r.body)], "never sent back in a prompt"
    assert sentinel not in history
    assert sentinel not in json.dumps(result)
    assert files_holding(quarry_home, [sentinel]) == []


def free_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_run_fails_fast_naming_an_endpoint_that_is_down(
    literature, quarry_home: Path, sentinel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`quarry run --policy react --model openai:…` checks the endpoint before anything starts."""
    import quarry.app.infrastructure as infrastructure
    from quarry.cli import app

    url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("QUARRY_HOME", str(quarry_home))  # the --home callback exports it; restore after

    def no_infrastructure(home: Path, *args, **kwargs) -> None:  # never start a dev server or worker from this test
        raise AssertionError("the endpoint pre-flight must fail before any infrastructure starts")

    monkeypatch.setattr(infrastructure, "ensure_infrastructure", no_infrastructure)
    began = time.monotonic()
    result = CliRunner().invoke(
        app, ["--home", str(quarry_home), "run", LITERATURE, INTENT, "--policy", "react", "--model", MODEL]
    )
    elapsed = time.monotonic() - began
    assert elapsed < 15, f"took {elapsed:.1f}s to fail"
    assert result.exit_code != 0 and not isinstance(result.exception, AssertionError), result.output
    assert "(endpoint_down)" in result.output and f"cannot reach the model endpoint {url}" in result.output, (
        result.output
    )
    assert sentinel not in result.output


def turn(calls: list[tuple[str, str, str]], finish_reason: str, usage: tuple[int, int]) -> dict[str, Any]:
    """A chat.completion whose one choice makes `calls` (id, name, raw argument text) at once."""
    body = tool_call_response("search", {}, *usage)
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": raw}} for cid, name, raw in calls
    ]
    body["choices"][0]["finish_reason"] = finish_reason
    return body


async def test_parallel_calls_a_truncated_call_and_a_rate_limit_over_http(
    env, literature, quarry_home: Path, sentinel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tool calls in one turn both run and are both answered; a turn cut off by max_tokens in the
    middle of its arguments (`finish_reason: length`) gets a repair reply, not a crash; a 429 is
    waited out for its `retry-after` and counted, without a failed activity attempt."""
    both = [
        ("call_a", "search", json.dumps({"reason": "GNN side", "query": "graph neural networks"})),
        ("call_b", "search", json.dumps({"reason": "chemistry side", "query": "molecular property prediction"})),
    ]
    cut = [("call_c", "read_document", '{"reason": "check it", "docid": "gn')]
    script = [
        rate_limited(retry_after_s=1),
        turn(both, "tool_calls", (900, 30)),
        turn(cut, "length", (1500, 64)),
        tool_call_response("submit", {"reason": "done", "docids": ["gnn01"]}, 1700, 20, call_id="call_d"),
    ]
    with StandinServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        queue = f"quarry-test-{uuid.uuid4().hex}"
        config = JobConfig(models=ModelSettings(model=MODEL), max_seconds=120.0)
        async with build_worker(env.client, home=quarry_home, queue=queue):
            inp = JobInput(job_id=new_job_id(), collection=LITERATURE, intent=INTENT, policy="react", config=config)
            handle = await submit(env.client, inp, queue=queue)
            result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
            history = [e async for e in handle.fetch_history_events()]
    requests = server.chat_requests()

    assert server.rejected == [], "Quarry sent a request the API refuses"
    assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01"], result.get("fallbacks")
    assert len(requests) == 4 and requests[0].body == requests[1].body
    assert result["usage"]["retries"] == 1 and result["usage"]["calls"] == 3
    failed = [e for e in history if e.HasField("activity_task_failed_event_attributes")]
    assert failed == [], "the rate limit was waited out inside the call, not by failing the activity"

    # Both parallel calls ran and were answered, in order, right after the turn that made them.
    after_both = requests[2].body["messages"]
    tools_answered = [m for m in after_both if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools_answered] == ["call_a", "call_b"]
    assert all("search_results" in m["content"] for m in tools_answered)
    # The truncated call was answered with what went wrong, so the model could try again.
    after_cut = requests[3].body["messages"]
    assert after_cut[-1]["role"] == "tool" and after_cut[-1]["tool_call_id"] == "call_c"
    assert after_cut[-1]["content"].startswith("Error in read_document: the tool call was malformed JSON")


@pytest.mark.parametrize("policy", ["react", "llm"])
async def test_strict_tool_schemas_pass_openais_strict_rules(
    env, literature, quarry_home: Path, sentinel: str, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """With `strict_tools`, every tool goes out with `strict: true` and a schema OpenAI's strict
    mode accepts (closed objects, every property required, nested ones too): the stand-in refuses
    anything else, and both policies' jobs complete through it."""
    from tests.fakes import structured_args

    def reply(request: Request) -> dict[str, Any]:
        tools = request.body["tools"]
        forced = (request.body.get("tool_choice") or {}).get("function", {}).get("name")
        if forced:  # the llm policy's structured calls
            args = structured_args(forced, json.dumps(request.body["messages"]))
            return tool_call_response(forced, args, 500, 20)
        turns = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        assert {t["function"]["name"] for t in tools} >= {"search", "submit"}
        if turns == 0:
            args = {"reason": "find", "query": "graph neural networks", "channel": "lexical"}
            return tool_call_response("search", args, 500, 20)
        args = {"reason": "done", "docids": ["gnn01"], "explanation": "", "exact_answer": "", "confidence": 50,
                "insufficient_evidence": False, "ranked": False}  # fmt: skip
        return tool_call_response("submit", args, 600, 20)

    with StandinServer([reply] * 40) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        models = ModelSettings(model=MODEL, strict_tools=True, judge_top=4, judge_batch_size=2)
        config = JobConfig(models=models, max_seconds=120.0)
        queue = f"quarry-test-{uuid.uuid4().hex}"
        async with build_worker(env.client, home=quarry_home, queue=queue):
            inp = JobInput(job_id=new_job_id(), collection=LITERATURE, intent=INTENT, policy=policy, config=config)
            handle = await submit(env.client, inp, queue=queue)
            result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
    requests = server.chat_requests()
    assert server.rejected == [], [r for _, r in server.rejected][:1]
    assert result["status"] == "completed" and result["fallbacks"] == [], result.get("fallbacks")
    sent = [t["function"] for r in requests for t in r.body["tools"]]
    assert sent and all(f.get("strict") is True for f in sent)
    assert all(f["parameters"]["additionalProperties"] is False for f in sent)
