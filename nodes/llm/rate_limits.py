"""A provider's "slow down" (HTTP 429 rate limit, Anthropic's 529 overloaded): wait as told, then ask again.

Providers say how long to wait in `retry-after` (seconds or an HTTP date; OpenAI also sends
`retry-after-ms`). Such a refusal is not a failure of the call, so it is retried here, inside the
one model call, rather than by failing the Temporal activity: the job's activity attempts
(`MODEL_ATTEMPTS`) stay for real failures, and each wait is counted (`Usage.retries`, shown by
`job watch`). The wait is bounded (`ModelSettings.rate_limit_wait_max_s` per wait,
`rate_limit_retries` waits per call) and is spent in short slices that watch the step's control
(nodes.job.step_control), so a job's budget, stop or cancellation still ends it on time.

The provider SDKs' own retries are off (nodes.llm.models), so nothing else waits behind Quarry's back.
"""

from __future__ import annotations

import email.utils
import time

from nodes.job.step_control import StepControl

SLOW_DOWN = frozenset({429, 529})  # rate limited; overloaded (Anthropic)
FIRST_WAIT_S = 1.0  # without a retry-after: 1, 2, 4 … seconds
SLICE_S = 0.25  # how often a wait looks at the step's control
# Past the job's deadline a wait goes on this much longer, so the job's own hard stop (a workflow
# timer at the same instant, which cancels this step) ends the job "budget_exhausted". Giving up at
# the very deadline raced it: the step's fallback could finish the job "completed" first.
DEADLINE_GRACE_S = 5.0
RATE_LIMIT_STAGE = (
    "rate_limit"  # the step stage a wait reports (`job progress` says "waiting out the model's rate limit")
)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a provider SDK's error (openai, anthropic, ollama, httpx), else None."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _header(exc: BaseException, name: str) -> str | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        return headers.get(name) if headers is not None else None
    except Exception:  # an SDK's odd header object: no hint, the default wait applies
        return None


def retry_after_s(exc: BaseException, retries_so_far: int) -> float | None:
    """How long to wait before asking again, or None when `exc` is not a provider's slow-down."""
    if status_of(exc) not in SLOW_DOWN:
        return None
    ms = _header(exc, "retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = _header(exc, "retry-after")
    if value:
        try:
            return max(float(value), 0.0)
        except ValueError:
            try:
                return max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
            except (TypeError, ValueError):
                pass  # unreadable: the default wait
    return FIRST_WAIT_S * (2**retries_so_far)


def wait_out(seconds: float, step: StepControl) -> bool:
    """Sleep `seconds` unless the job's work ends first (then False: the caller gives up). A steer
    does not end it: the steered job still needs the model's next answer. The job's deadline ends
    it DEADLINE_GRACE_S late, for the job's hard stop to come first."""
    now = time.monotonic()
    end, grace_end = now + seconds, None
    while (left := end - now) > 0:
        reason = step.ended()
        if reason == "deadline":
            grace_end = grace_end if grace_end is not None else now + DEADLINE_GRACE_S
        if (reason and reason != "deadline") or (grace_end is not None and now >= grace_end):
            return False
        time.sleep(min(SLICE_S, left))  # not step.wait(): a steer sets the step's event for good
        now = time.monotonic()
    return not step.ended()


__all__ = ["RATE_LIMIT_STAGE", "SLOW_DOWN", "retry_after_s", "status_of", "wait_out"]
