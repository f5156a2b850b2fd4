"""Anthropic and native-Ollama jobs from a `quarry worker` process (tests/drill_worker.py), the
way a user's jobs run: the worker finds the stand-in only through its environment, and the
job's trace, written by that process, holds its `chat` spans with the wire's usage."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path
from typing import Any

from nodes.job.config import JobConfig, ModelSettings, Price
from tests.anthropic_standin import AnthropicStandin, rate_limited, tool_use
from tests.drill_kit import Worker, job_spans, result_of, start
from tests.ollama_standin import OllamaStandin, tool_calls

SEARCH = {"reason": "find GNN papers", "query": "graph neural networks molecules"}
SUBMIT = {"reason": "this answers it", "docids": ["gnn01"]}


def run(home: Path, server: Any, env: dict[str, str], model: str, prices: dict[str, Price] | None = None):
    queue = f"drill-provider-{uuid.uuid4().hex[:8]}"
    worker = Worker(home, server.address, queue, env=env | {"NO_PROXY": "127.0.0.1"})
    try:
        config = JobConfig(models=ModelSettings(model=model), prices=prices or {}, max_seconds=120.0)
        handle = asyncio.run(start(server.address, queue, tracing=True, policy="react", config=config))
        return handle.id, result_of(handle)
    finally:
        worker.kill(signal.SIGTERM)


def test_an_anthropic_react_job_from_a_worker_process_caches_and_waits_out_a_429(home: Path, server) -> None:
    model = "anthropic:claude-standin"
    script = [rate_limited(1), tool_use("search", SEARCH), tool_use("submit", SUBMIT)]
    with AnthropicStandin(script) as standin:
        env = {"ANTHROPIC_BASE_URL": standin.base_url, "ANTHROPIC_API_KEY": "sk-ant-drill-" + uuid.uuid4().hex}
        job_id, result = run(home, server, env, model, {model: Price(3.0, 0.3, 15.0, cache_write=3.75)})
    assert standin.rejected == [], "the worker sent a request the Messages API refuses"
    assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01"], result.get("fallbacks")
    u = result["usage"]
    reads = [s["cache_read_input_tokens"] for s in standin.usages]
    assert (u["calls"], u["retries"]) == (2, 1) and reads[0] == 0 and reads[1] > 0
    assert u["cached_input_tokens"] == sum(reads) and u["cache_write_input_tokens"] > 0
    chats = [s for s in job_spans(home, job_id) if s["name"] == f"chat {model}"]
    assert [c["attributes"]["gen_ai.usage.cache_read.input_tokens"] for c in chats] == reads
    assert all(c["attributes"]["gen_ai.provider.name"] == "anthropic" for c in chats)


def test_an_ollama_react_job_from_a_worker_process(home: Path, server) -> None:
    model = "ollama:standin-model"
    with OllamaStandin([tool_calls(("search", SEARCH)), tool_calls(("submit", SUBMIT))]) as standin:
        job_id, result = run(home, server, {"OLLAMA_HOST": standin.base_url}, model)
    assert standin.rejected == [], "the worker sent a request Ollama refuses"
    assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01"], result.get("fallbacks")
    assert result["usage"]["input_tokens"] == sum(s["prompt_eval_count"] for s in standin.usages)
    chats = [s for s in job_spans(home, job_id) if s["name"] == f"chat {model}"]
    assert [c["attributes"]["gen_ai.usage.input_tokens"] for c in chats] == [
        s["prompt_eval_count"] for s in standin.usages
    ]
