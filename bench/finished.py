"""A benchmark job's result, or the benchmark stops with the job's error as one line: a figure
measured on a failed job means nothing, and a WorkflowFailureError traceback says less than its code."""

from __future__ import annotations

import asyncio
from typing import Any


async def finished(handle: Any, timeout: float | None = None) -> dict[str, Any]:
    from workflows.job_failure import job_result

    result = await asyncio.wait_for(job_result(handle), timeout)
    if result.get("status") != "completed":
        error = result.get("error") or {}
        detail = f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else str(error)
        raise SystemExit(f"benchmark job {handle.id} ended {result.get('status')!r} ({detail}); no figure")
    return result
