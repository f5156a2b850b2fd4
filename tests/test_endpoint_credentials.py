"""A credential inside a model's base URL reaches the endpoint and nothing else.

`OPENAI_BASE_URL=http://user:password@proxy/v1?api_key=…` and `ANTHROPIC_BASE_URL=http://user:
password@proxy` are how users reach a proxy or gateway that wants credentials. Here a real worker
process (tests.drill_kit.Worker) runs jobs against the loopback stand-ins with such URLs, on a
Temporal dev server whose database lies under the home: one endpoint that echoes the caller's
credentials in an error, one that answers, and one that is down. The stand-ins see the credentials
as a real server would (a Basic `Authorization` header, the query key); afterwards no file under
the home — job store and its `-wal`, trace files, the worker's log, Temporal's database — holds
any of them, and neither does any line the command line prints (the `endpoint_down` pre-flight,
`job show`, `trace`).
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from nodes.job.config import JobConfig, ModelSettings
from stores.redact import REDACTED, redact, shown_url
from tests.anthropic_standin import AnthropicStandin, tool_use
from tests.drill_kit import ROOT, Worker, result_of, start
from tests.fakes import files_holding
from tests.ollama_standin import tool_calls
from tests.openai_standin import Request, StandinServer, Step, tool_call_response

OPENAI_MODEL = "openai:standin-model"
ANTHROPIC_MODEL = "anthropic:claude-standin"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def with_userinfo(url: str, user: str, password: str, query: str = "") -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1) + query


def echo_credentials(request: Request) -> tuple[int, dict[str, Any]]:
    """A careless proxy's error that repeats the caller's Authorization header and request line."""
    said = f"upstream refused {request.headers.get('authorization')} for {request.path}"
    return 500, {"error": {"message": said, "type": "server_error"}}


def quarry(home: Path, address: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The `quarry` executable as a user runs it: what it prints is stdout and stderr."""
    full = os.environ | env | {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": address, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "quarry", *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=300
    )


def test_credentials_in_base_urls_reach_the_endpoint_and_are_written_and_printed_nowhere(
    home: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = {name: f"{name}-{uuid.uuid4().hex}" for name in ("openai-pw", "openai-token", "anthropic-pw", "key")}
    openai_auth, anthropic_auth = basic("ouser", secret["openai-pw"]), basic("auser", secret["anthropic-pw"])
    for name in ("OPENAI_API_BASE", "ANTHROPIC_API_URL"):  # would win over the *_BASE_URL below
        monkeypatch.delenv(name, raising=False)
    openai_script: list[Step] = [
        echo_credentials,  # one failed attempt; Temporal retries the activity
        tool_call_response("search", {"reason": "find", "query": "graph neural networks"}, 900, 20),
        tool_call_response("submit", {"reason": "done", "docids": ["gnn01"]}, 1000, 20),
    ]
    anthropic_script = [
        tool_use("search", {"reason": "find", "query": "graph neural networks molecules"}),
        tool_use("submit", {"reason": "done", "docids": ["gnn01"]}),
    ]
    queue = f"credentials-{uuid.uuid4().hex[:8]}"
    with StandinServer(openai_script) as openai_server, AnthropicStandin(anthropic_script) as anthropic_server:
        env = {
            "OPENAI_BASE_URL": with_userinfo(
                openai_server.base_url, "ouser", secret["openai-pw"], f"?api_key={secret['openai-token']}"
            ),
            "OPENAI_API_KEY": f"sk-test-{secret['key']}",
            "ANTHROPIC_BASE_URL": with_userinfo(anthropic_server.base_url, "auser", secret["anthropic-pw"]),
            "ANTHROPIC_API_KEY": f"sk-ant-test-{secret['key']}",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        worker = Worker(home, server.address, queue, env=env)
        try:

            def job(model: str) -> dict[str, Any]:
                config = JobConfig(models=ModelSettings(model=model), max_seconds=120.0)
                handle = asyncio.run(start(server.address, queue, policy="react", config=config))
                return result_of(handle)

            answered = {model: job(model) for model in (OPENAI_MODEL, ANTHROPIC_MODEL)}
            anthropic_url = anthropic_server.base_url
            anthropic_server.stop()  # the next job finds its endpoint down
            down = job(ANTHROPIC_MODEL)
        finally:
            worker.kill(signal.SIGTERM)  # a graceful stop: its spans are flushed to the trace files

    # The credentials reached the endpoints as a real server receives them: the user-info as Basic
    # auth (what an HTTP client derives from it), the query key on the request line.
    openai_calls, anthropic_calls = openai_server.chat_requests(), anthropic_server.chat_requests()
    assert len(openai_calls) == 3 and len(anthropic_calls) == 2, [r.path for r in openai_server.requests]
    assert all(r.headers["authorization"] == openai_auth for r in openai_calls)
    assert all(r.path.endswith(f"?api_key={secret['openai-token']}") for r in openai_calls)
    assert all(r.headers["authorization"] == anthropic_auth for r in anthropic_calls)
    for result in answered.values():
        assert result["status"] == "completed" and result["submitted"]["docids"] == ["gnn01"], result
        assert not result.get("fallbacks"), result["fallbacks"]

    # The job whose endpoint was down fell back, naming the endpoint without its credential.
    assert down["status"] == "completed" and down["fallbacks"], down
    said = " ".join(f["reason"] for f in down["fallbacks"])
    assert f"{ANTHROPIC_MODEL} at {anthropic_url} failed" in said, said

    # What the command line prints: the endpoint_down pre-flight for both providers (nothing
    # listens any more), a job's record and its trace.
    printed = []
    for model in (OPENAI_MODEL, ANTHROPIC_MODEL):
        ran = quarry(
            home, server.address, env, "run", "lit", "graph neural networks", "--policy", "react", "--model", model
        )
        assert ran.returncode != 0 and "(endpoint_down)" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
        assert "Traceback" not in ran.stderr, ran.stderr
        printed.append(ran.stdout + ran.stderr)
    assert f"cannot reach the model endpoint {anthropic_url} for {ANTHROPIC_MODEL}" in printed[1], printed[1]
    assert f"?api_key={secret['openai-token']}" not in printed[0] and "127.0.0.1" in printed[0], printed[0]
    for args in (("job", "show", down["job_id"], "--full"), ("trace", down["job_id"])):
        shown = quarry(home, server.address, env, *args)
        assert shown.returncode == 0, shown.stderr[-2000:]
        printed.append(shown.stdout + shown.stderr)
    assert anthropic_url in printed[2], printed[2]

    needles = [*secret.values(), openai_auth.split()[1], anthropic_auth.split()[1]]
    leaked = {needle: [line for line in text.splitlines() if needle in line] for text in printed for needle in needles}
    assert not any(leaked.values()), {k: v for k, v in leaked.items() if v}
    assert files_holding(home, needles) == []


def test_redact_scrubs_url_credentials_for_any_writer_handed_one() -> None:
    """A defence in depth for every writer that already calls `redact`: a URL's user-info, its
    credential query values, a Basic header, and the password of any URL in the environment."""
    env = {"SOME_PROXY": "https://me:hunter2-long-pass@proxy.example/v1"}
    text = (
        "POST http://user:p%40ss@h:8/v1/chat?api_key=abc&x=1&sig=zz failed; "
        "had Basic dXNlcjpwYXNzd29yZA== and hunter2-long-pass"
    )
    assert redact(text, env) == (
        f"POST http://{REDACTED}@h:8/v1/chat?api_key={REDACTED}&x=1&sig={REDACTED} failed; "
        f"had {REDACTED} and {REDACTED}"
    )
    assert shown_url("https://u:pw@gw.example/v1?key=k1&api-version=2024&access_token=t") == (
        f"https://gw.example/v1?api-version=2024&key={REDACTED}&access_token={REDACTED}"
    )
    assert redact("see https://example.org/page?id=3 and mail a@b.org", {}) == (
        "see https://example.org/page?id=3 and mail a@b.org"
    )


def test_an_ollama_host_with_user_info_authenticates_and_is_shown_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """OLLAMA_HOST, scheme-less as Ollama reads it: the call carries the user-info as Basic auth,
    and the model, the endpoint named in messages and a failed call's error carry none of it."""
    from nodes.llm.calls import ModelError, invoke
    from nodes.llm.models import ModelSpec, endpoint, make_chat_model
    from tests.ollama_standin import OllamaStandin, error

    password = f"ollama-pw-{uuid.uuid4().hex}"
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with OllamaStandin([tool_calls(("search", {"reason": "r", "query": "q"})), error(500, "boom")]) as server:
        url = server.base_url
        host = url.removeprefix("http://")
        monkeypatch.setenv("OLLAMA_HOST", f"quser:{password}@{host}")
        model = make_chat_model("ollama:standin-model", ModelSettings())
        invoke(model, [("human", "hi")], spec="ollama:standin-model", purpose="test", prices={})
        with pytest.raises(ModelError) as failed:
            invoke(model, [("human", "hi")], spec="ollama:standin-model", purpose="test", prices={})
    assert [r.headers.get("authorization") for r in server.chat_requests()] == [basic("quser", password)] * 2
    assert endpoint(ModelSpec.parse("ollama:standin-model")) == url
    assert password not in repr(model.model_dump()) and password not in str(failed.value)
    assert f"at {url} failed" in str(failed.value), failed.value
