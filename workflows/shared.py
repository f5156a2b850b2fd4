"""Names and the one input dataclass shared by client, worker, workflow and activities."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

TASK_QUEUE_DEFAULT = "quarry-jobs"
NAMESPACE_DEFAULT = "default"
ADDRESS_DEFAULT = "127.0.0.1:7233"
UI_PORT_DEFAULT = 8233
DEFAULT_BUDGET_S = 300.0
STEER_FRACTION = 0.7


def temporal_address() -> str:
    return os.environ.get("QUARRY_TEMPORAL_ADDRESS", ADDRESS_DEFAULT)


def temporal_namespace() -> str:
    return os.environ.get("QUARRY_TEMPORAL_NAMESPACE", NAMESPACE_DEFAULT)


def task_queue() -> str:
    return os.environ.get("QUARRY_TASK_QUEUE", TASK_QUEUE_DEFAULT)


@dataclass
class JobInput:
    job_id: str
    collection: str
    intent: str
    mode: str = "list"
    policy: str = "heuristic"
    budget_seconds: float = DEFAULT_BUDGET_S
    max_rounds: int = 3
    max_tool_calls: int = 400
    # Carried across continue-as-new so budgets count from the job's real start.
    started_at: float | None = None
    steer_fired: bool = False
    state: dict[str, Any] | None = None
    pending_steering: list[dict[str, Any]] | None = None
