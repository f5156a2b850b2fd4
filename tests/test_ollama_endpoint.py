"""`react` and `llm` jobs over Ollama's native API: a worker's default model factory →
langchain-ollama → the `ollama` client → a stand-in `/api/chat` on loopback (tests.ollama_standin)
that refuses what Ollama refuses and streams NDJSON with Ollama's usage counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nodes.job.config import JobConfig, ModelSettings
from tests.conftest import LITERATURE
from tests.fakes import job_over_the_wire, structured_args
from tests.ollama_standin import OllamaStandin, tool_calls
from tests.openai_standin import Request

MODEL = "ollama:standin-model"
INTENT = "graph neural networks for molecular property prediction"
RESULT_TIMEOUT_S = 120.0


async def run(env, home: Path, policy: str, config: JobConfig, mode: str = "list") -> dict[str, Any]:
    return await job_over_the_wire(env, home, LITERATURE, INTENT, policy, config, mode, RESULT_TIMEOUT_S)


async def test_react_job_over_ollamas_native_api(env, literature, quarry_home: Path, monkeypatch, spans) -> None:
    script = [
        tool_calls(("search", {"reason": "find GNN papers", "query": "graph neural networks molecules"})),
        tool_calls(("read_document", {"reason": "check the best hit", "docid": "gnn01"})),
        tool_calls(("submit", {"reason": "this answers it", "docids": ["gnn01"]})),
    ]
    with OllamaStandin(script) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.base_url)
        config = JobConfig(models=ModelSettings(model=MODEL), max_seconds=120.0)
        result = await run(env, quarry_home, "react", config)
    requests = server.chat_requests()

    assert server.rejected == [], "Quarry sent a request Ollama refuses"
    assert result["status"] == "completed" and result["stop_reason"] == "submitted", result.get("fallbacks")
    assert result["submitted"]["docids"] == ["gnn01"]
    first, last = requests[0].body, requests[-1].body
    assert first["model"] == "standin-model" and first["options"]["num_predict"] == ModelSettings().max_output_tokens
    assert {t["function"]["name"] for t in first["tools"]} == {
        "search",
        "read_search_results",
        "read_document",
        "submit",
    }
    # The conversation went back in Ollama's shape: the call with object arguments, then its result.
    calls = [m for m in last["messages"] if m.get("tool_calls")]
    assert [c["tool_calls"][0]["function"]["name"] for c in calls] == ["search", "read_document"]
    assert [m["role"] for m in last["messages"]].count("tool") == 2
    # Usage is Ollama's prompt_eval_count / eval_count; a local model costs nothing and is not "unpriced".
    u = result["usage"]
    assert (u["calls"], u["input_tokens"], u["output_tokens"]) == (
        3,
        sum(s["prompt_eval_count"] for s in server.usages),
        sum(s["eval_count"] for s in server.usages),
    )
    assert u["dollars"] == 0.0 and u["unpriced"] == []
    chats = [s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}"]
    assert [c.attributes["gen_ai.usage.input_tokens"] for c in chats] == [s["prompt_eval_count"] for s in server.usages]
    assert all(c.attributes["gen_ai.provider.name"] == "ollama" for c in chats)


def structured_reply(request: Request) -> dict[str, Any]:
    """Ollama has no tool_choice: the structured call offers one tool, its schema; answer with it."""
    (tool,) = request.body["tools"]
    name = tool["function"]["name"]
    return tool_calls((name, structured_args(name, json.dumps(request.body["messages"]))), eval_count=20)


async def test_llm_job_over_ollamas_native_api(env, literature, quarry_home: Path, monkeypatch) -> None:
    with OllamaStandin([structured_reply] * 40) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.base_url)
        models = ModelSettings(model=MODEL, judge_top=4, judge_batch_size=2, judge_concurrency=2)
        result = await run(env, quarry_home, "llm", JobConfig(models=models, max_seconds=120.0), mode="answer")

    assert server.rejected == [], "Quarry sent a request Ollama refuses"
    assert result["status"] == "completed" and result["fallbacks"] == [], result.get("fallbacks")
    offered = [r.body["tools"][0]["function"]["name"] for r in server.chat_requests()]
    assert offered[0] == "PlanOut" and "JudgementsOut" in offered and offered[-1] == "AnswerOut"
    assert result["usage"]["calls"] == len(offered) and result["usage"]["output_tokens"] == 20 * len(offered)
    assert "[gnn01]" in result["answer"]["explanation"]
