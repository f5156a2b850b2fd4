"""Names and the one input dataclass shared by client, worker, workflow and activities."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from nodes.config import STEER_FRACTION, JobConfig  # noqa: F401  (STEER_FRACTION re-exported)

TASK_QUEUE_DEFAULT = "quarry-jobs"
NAMESPACE_DEFAULT = "default"
ADDRESS_DEFAULT = "127.0.0.1:7233"
UI_PORT_DEFAULT = 8233
DEFAULT_BUDGET_S = 300.0


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
    # Caps, depths, models, token/dollar budgets and prices: one object (nodes.config).
    config: JobConfig = field(default_factory=JobConfig)
    # Carried across continue-as-new so budgets count from the job's real start.
    started_at: float | None = None
    steer_fired: bool = False
    state: dict[str, Any] | None = None
    pending_steering: list[dict[str, Any]] | None = None
