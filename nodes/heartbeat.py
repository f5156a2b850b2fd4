"""Run blocking node code in a thread while the activity heartbeats from the event loop.

Temporal's heartbeat must be called on the activity's event loop, and heartbeats are how a
cancelled activity (hard budget stop) learns about it promptly; node bodies are blocking
(Lucene, SQLite), so they run in a worker thread. Outside an activity this is just a thread.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import activity

from observability.tool_spans import node_span

HEARTBEAT_EVERY_S = 5.0


def _in_node_span(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a node body inside its `node {name}` span (job id and round from its state or task)."""
    first = args[0] if args and isinstance(args[0], dict) else {}
    with node_span(getattr(fn, "__name__", "node"), job_id=first.get("job_id"),
                   round_no=first.get("round") if isinstance(first.get("round"), int) else None):
        return fn(*args)


async def with_heartbeats(fn: Callable[..., Any], *args: Any) -> Any:
    task = asyncio.ensure_future(asyncio.to_thread(_in_node_span, fn, *args))
    while True:
        done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY_S)
        if done:
            return task.result()
        if activity.in_activity():
            activity.heartbeat(getattr(fn, "__name__", "node"))


def final_attempt(max_attempts: int) -> bool:
    """Whether this is the activity's last attempt (always true outside an activity).

    Model steps raise on earlier attempts, so Temporal retries a transient failure visibly and
    with backoff; on the last one they fall back to the heuristic decision instead of failing
    the job.
    """
    if not activity.in_activity():
        return True
    return activity.info().attempt >= max_attempts
