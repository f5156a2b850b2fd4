"""The provider stand-ins refuse what the real services refuse (so a wire-format test can fail)."""

from __future__ import annotations

from typing import Any

from tests.anthropic_standin import AnthropicStandin
from tests.ollama_standin import OllamaStandin
from tests.openai_standin import Request, chat_request_problem, strict_problem


def request(body: dict[str, Any], **headers: str) -> Request:
    return Request("POST", "/", {k.replace("_", "-"): v for k, v in headers.items()}, body)


def test_openai_refuses_unanswered_parallel_calls_stray_results_and_loose_strict_schemas() -> None:
    calls = [{"id": i, "type": "function", "function": {"name": "search", "arguments": "{}"}} for i in ("a", "b")]
    convo = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    answered = [{"role": "tool", "tool_call_id": "a", "content": "x"}, {"role": "tool", "tool_call_id": "b", "content": "y"}]  # fmt: skip
    assert chat_request_problem({"model": "m", "messages": convo + answered}) is None
    status, body = chat_request_problem({"model": "m", "messages": convo + answered[:1]})
    assert status == 400 and "did not have response messages: b" in body["error"]["message"]
    status, body = chat_request_problem({"model": "m", "messages": [*convo[:1], answered[0]]})
    assert "must be a response to a preceeding message with 'tool_calls'" in body["error"]["message"]
    loose = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]}
    assert "'additionalProperties' is required" in strict_problem(loose)
    assert "Missing 'n'" in strict_problem(loose | {"additionalProperties": False})
    nested = {"type": "object", "additionalProperties": False, "required": ["x"], "properties": {"x": {"type": "array", "items": {"$ref": "#/$defs/I"}}}, "$defs": {"I": {"type": "object", "properties": {"k": {}}}}}  # fmt: skip
    assert strict_problem(nested) is not None
    tool = {"type": "function", "function": {"name": "search", "strict": True, "parameters": loose}}
    status, body = chat_request_problem({"model": "m", "messages": convo[:1], "tools": [tool]})
    assert body["error"]["code"] == "invalid_function_parameters"


def test_anthropic_refuses_what_the_messages_api_refuses() -> None:
    server = AnthropicStandin([])
    ok = {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    keyed = {"x_api_key": "k", "anthropic_version": "2023-06-01"}
    assert server.reject(request(ok, **keyed)) is None
    assert server.reject(request(ok, anthropic_version="2023-06-01"))[0] == 401

    def refused(body: dict[str, Any]) -> str:
        answer = server.reject(request(body, **keyed))
        assert answer is not None and answer[0] == 400, body
        return answer[1]["error"]["message"]

    assert "max_tokens" in refused({k: v for k, v in ok.items() if k != "max_tokens"})
    assert "Unexpected role" in refused(ok | {"messages": [{"role": "system", "content": "s"}, *ok["messages"]]})
    assert "non-whitespace" in refused(
        ok | {"messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}
    )
    assert "Extra inputs" in refused(ok | {"frequency_penalty": 1})
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}]}
    assert "without `tool_result`" in refused(
        ok | {"messages": [*ok["messages"], use, {"role": "user", "content": "go on"}]}
    )
    stray = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}
    assert "unexpected `tool_use_id`" in refused(ok | {"messages": [*ok["messages"], use, stray]})
    marked = [{"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    assert "maximum of 4" in refused(ok | {"messages": [{"role": "user", "content": marked}]})


def test_anthropic_caches_a_marked_prefix_and_reads_it_on_the_next_request() -> None:
    server = AnthropicStandin([])
    system = [{"type": "text", "text": "rules " * 1500, "cache_control": {"type": "ephemeral"}}]
    first = {"system": system, "messages": [{"role": "user", "content": "one"}]}
    second = {"system": system, "messages": [{"role": "user", "content": "two, a different question"}]}
    u1, u2 = server._usage(first), server._usage(second)
    assert u1["cache_creation_input_tokens"] > 1024 and u1["cache_read_input_tokens"] == 0
    assert u2["cache_read_input_tokens"] == u1["cache_creation_input_tokens"] and u2["cache_creation_input_tokens"] == 0
    unmarked = {"system": "rules " * 1500, "messages": [{"role": "user", "content": "one"}]}
    assert server._usage(unmarked)["cache_read_input_tokens"] == 0, "nothing is cached without a breakpoint"


def test_ollama_refuses_list_content_string_arguments_and_unknown_models() -> None:
    server = OllamaStandin([])
    ok = {"model": "standin-model", "messages": [{"role": "user", "content": "hi"}]}
    assert server.reject(request(ok)) is None
    assert server.reject(request(ok | {"model": "other"}))[0] == 404
    listed = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert "of type string" in server.reject(request(ok | {"messages": [listed]}))[1]["error"]
    call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "search", "arguments": "{}"}}]}
    assert "ToolCallFunctionArguments" in server.reject(request(ok | {"messages": [*ok["messages"], call]}))[1]["error"]


def test_usage_line_shows_cache_reads_writes_and_rate_limit_retries() -> None:
    from quarry.cli.render import usage_line

    usage = {"calls": 3, "input_tokens": 9000, "cached_input_tokens": 6000, "cache_write_input_tokens": 2500,
             "output_tokens": 90, "dollars": 0.0123, "retries": 2}  # fmt: skip
    line = usage_line(usage)
    assert "9,000 tokens in (6,000 cached, 2,500 written to cache)" in line and line.endswith("2 rate-limit retries")
    assert "retr" not in usage_line(usage | {"retries": 0}) and "1 rate-limit retry" in usage_line(
        usage | {"retries": 1}
    )


def test_prices_price_cache_writes_at_their_own_rate() -> None:
    from nodes.job.config import Price
    from nodes.job.usage import usage_from_metadata

    meta = {
        "input_tokens": 1000,
        "output_tokens": 10,
        "input_token_details": {"cache_read": 600, "cache_creation": 300},
    }
    u = usage_from_metadata(meta, "anthropic:m", {"anthropic:m": Price(3.0, 0.3, 15.0, cache_write=3.75)})
    assert (u.input_tokens, u.cached_input_tokens, u.cache_write_input_tokens) == (1000, 600, 300)
    assert u.dollars == (100 * 3.0 + 600 * 0.3 + 300 * 3.75 + 10 * 15.0) / 1e6
    plain = usage_from_metadata(meta, "anthropic:m", {"anthropic:m": Price(3.0, 0.3, 15.0)})
    assert plain.dollars == (400 * 3.0 + 600 * 0.3 + 10 * 15.0) / 1e6, "no cache_write price: writes at the input price"


def test_a_rate_limit_wait_reads_as_one_in_job_progress() -> None:
    from nodes.llm.rate_limits import RATE_LIMIT_STAGE, retry_after_s
    from quarry.app.progress import step_text

    step = {"stage": RATE_LIMIT_STAGE, "done": 1, "total": 4, "text": "rate_limit 1/4 chunks"}
    assert step_text(step) == "waiting out the model's rate limit (retry 1 of at most 4)"

    class Refused(Exception):
        def __init__(self, status: int, headers: dict[str, str]) -> None:
            self.status_code, self.response = status, type("R", (), {"headers": headers})()

    assert retry_after_s(Refused(429, {"retry-after": "7"}), 0) == 7.0
    assert retry_after_s(Refused(429, {"retry-after-ms": "1500"}), 0) == 1.5
    assert retry_after_s(Refused(529, {}), 2) == 4.0, "no retry-after: 1, 2, 4 … seconds"
    assert retry_after_s(Refused(500, {"retry-after": "1"}), 0) is None, "a server error is not a slow-down"
    assert retry_after_s(Refused(429, {"retry-after": "soon"}), 0) == 1.0, "unreadable: the default wait"


def test_a_rate_limit_wait_outlasts_a_steer_but_not_a_stop_or_the_deadline(monkeypatch) -> None:
    import threading

    import nodes.llm.rate_limits as rate_limits
    from nodes.job.step_control import StepControl
    from nodes.llm.rate_limits import wait_out

    steered = StepControl()
    steered.stop("budget_steer")  # the job wants to submit: it still needs the model's answer
    assert wait_out(0.3, steered) is True and steered.ended() == ""
    steered.stop("stopped")
    assert wait_out(30.0, steered) is False and steered.ended() == "stopped"
    # Past the deadline the wait leaves the job's hard stop time to come first (it cancels the step) ...
    late = StepControl(deadline=0.0)  # the clock is past it
    threading.Timer(0.2, late.stop, ["cancelled"]).start()
    assert wait_out(30.0, late) is False and late.ended() == "cancelled", "it was still waiting at 0.2 s"
    # ... and gives up by itself once that grace is over.
    monkeypatch.setattr(rate_limits, "DEADLINE_GRACE_S", 0.3)
    alone = StepControl(deadline=0.0)
    assert wait_out(30.0, alone) is False and alone.ended() == "deadline"


def test_strict_tools_are_refused_for_a_model_that_is_not_openai() -> None:
    import pytest

    from quarry.app.options import job_config
    from stores.errors import QuarryError

    with pytest.raises(QuarryError) as err:
        job_config("react", "anthropic:claude-standin", None, strict_tools=True)
    assert err.value.code == "bad_option" and "--strict-tools" in err.value.message
