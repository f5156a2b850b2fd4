"""Names and the one input dataclass shared by client, worker, workflow and activities."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodes.job.config import STEER_FRACTION, JobConfig  # noqa: F401  (STEER_FRACTION re-exported)
from nodes.policy.registry import DEFAULT_POLICY
from stores import settings
from workflows.processes.address import ADDRESS_DEFAULT  # noqa: F401  (re-exported)

TASK_QUEUE_DEFAULT = "quarry-jobs"
NAMESPACE_DEFAULT = settings.temporal_namespace({})  # what an unset variable means (stores.settings)
UI_PORT_DEFAULT = settings.ui_port({})


class ServerUnreachable(RuntimeError):
    """No connection to the Temporal server could be made (`workflows.client.connect` raises it,
    `workflows.rpc_errors.quarry_error` maps it to no_server): nothing listens at `address`, or what
    listens there did not answer as a Temporal server in time. It lives here, below both modules."""

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address


def temporal_address(home: Path | None = None) -> str:
    """The Temporal server every command and worker uses: --temporal-address /
    QUARRY_TEMPORAL_ADDRESS, else the running server this home recorded, else the default
    (one rule, `workflows.processes.address.resolve_address`, so `quarry run --port P` is not forgotten)."""
    from workflows.processes.address import temporal_address as resolved

    return resolved(home)


def temporal_namespace() -> str:
    return settings.temporal_namespace()


def task_queue(home: Path | None = None) -> str:
    """The task queue of a QUARRY_HOME: jobs of one home run only on that home's workers, even when
    several homes share one Temporal server (`QUARRY_TASK_QUEUE` overrides it for a cluster)."""
    if chosen := settings.task_queue():
        return chosen
    from stores.home import quarry_home

    digest = hashlib.sha1(str((home or quarry_home()).resolve()).encode()).hexdigest()[:10]
    return f"{TASK_QUEUE_DEFAULT}-{digest}"


def web_ui_url(job_id: str, ui_base: str | None, namespace: str | None = None) -> str:
    """The job's page in the Web UI at `ui_base` ('' when the UI of the server in use is unknown)."""
    if not ui_base:
        return ""
    return f"{ui_base.rstrip('/')}/namespaces/{namespace or temporal_namespace()}/workflows/{job_id}"


@dataclass
class JobInput:
    job_id: str
    collection: str
    intent: str
    mode: str = "list"
    policy: str = DEFAULT_POLICY
    # Inputs written before the budget moved into the config: a job already running in Temporal
    # whose history carries its wall-clock budget here. The workflow moves it into
    # `config.max_seconds` (it wins when not None: workflows.job_input.migrated); a new submission
    # writes the config's budget here too (the same value), so Temporal's Web UI shows it.
    budget_seconds: float | None = None
    # Caps, depths, models, the time/token/dollar budgets and prices: one object (nodes.job.config).
    config: JobConfig = field(default_factory=JobConfig)
    # Carried across continue-as-new so budgets count from the job's real start.
    started_at: float | None = None
    steer_fired: bool = False
    state: dict[str, Any] | None = None
    pending_steering: list[dict[str, Any]] | None = None
    # Whether the job was started with Quarry's search attributes (so the workflow may update them).
    indexed: bool = False
    # The job's `invoke_agent` span identity (observability.agent_span.AgentTrace as a dict),
    # fixed at submission; the final activity emits the span.
    trace: dict[str, Any] | None = None
