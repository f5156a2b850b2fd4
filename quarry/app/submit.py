"""Submitting a job, for every front door: start the infrastructure when needed, record the job in
the job store under its own trace, and submit it. The command line's live follow is quarry.cli.submit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from nodes.job.config import JobConfig
from nodes.policy.registry import DEFAULT_POLICY
from quarry.app import infrastructure, temporal
from quarry.app.options import check_profile, job_config
from quarry.app.records import trace_file
from stores.errors import QuarryError
from stores.home import ensure_home, quarry_home
from stores.jobs import JobStore
from workflows.job_input import MAX_INTENT_CHARS, MODES, check_budget, check_text
from workflows.shared import JobInput

DEFAULTS = JobConfig()  # a request's defaults are the job's own (nodes.job.config), never copies


async def submitted(
    name: str, intent: str, mode: str, policy: str, config: JobConfig, address: str | None, ui_port: int | None
) -> tuple[dict[str, Any], Any]:
    """Start the infrastructure when needed, record the job in the job store under its own trace
    and submit it: ({job_id, web_ui, trace_file}, its workflow handle)."""
    # lazy: observability and temporalio's client cost over a second of start-up
    from observability import current_trace_id, get_tracer, setup_tracing
    from observability.agent_span import new_agent_trace, under_agent
    from workflows.client import new_job_id, submit

    home = ensure_home(quarry_home())  # 0700: the job store, traces, logs and Temporal's database are private
    setup_tracing("quarry-cli", home)
    infrastructure.ensure_infrastructure(home, address, ui_port)
    client = await temporal.client(address)
    job_id = new_job_id()
    agent = new_agent_trace()  # the job's invoke_agent span: this command's span sits under it
    inp = JobInput(
        job_id=job_id, collection=name, intent=intent, mode=mode, policy=policy, config=config, trace=agent.to_dict()
    )
    with under_agent(agent), get_tracer().start_as_current_span("quarry run", attributes={"quarry.job_id": job_id}):
        trace_id = current_trace_id()
        JobStore(home / "jobs.sqlite").create(
            job_id,
            name,
            intent,
            workflow_id=job_id,
            trace_id=trace_id,
            params={"mode": mode, "policy": policy, "config": config.to_dict()},
        )
        handle = await submit(client, inp)
    info = {"job_id": job_id, "web_ui": temporal.web_ui(job_id, address), "trace_file": trace_file(trace_id)}
    return info, handle


def start_job(
    name: str,
    intent: str,
    *,
    mode: str,
    policy: str,
    config: JobConfig,
    address: str | None = None,
    ui_port: int | None = None,
) -> dict[str, Any]:
    """Submit a job and return at once with {job_id, web_ui, trace_file} — `quarry run` without
    --wait, for a front door that is not a terminal (`quarry mcp`). Runs its own event loop (call it
    from a thread, not from inside one); a failure comes out as one QuarryError."""

    async def main() -> dict[str, Any]:
        info, _ = await submitted(name, intent, mode, policy, config, address, ui_port)
        return info

    return temporal.attempt(main(), address=address)


def checked_job(
    name: str,
    intent: str,
    *,
    mode: str = "list",
    policy: str = DEFAULT_POLICY,
    budget: float = DEFAULTS.max_seconds,
    rounds: int = DEFAULTS.max_rounds,
    model: str | None = None,
    judge_model: str | None = None,
    max_tokens: int | None = None,
    max_dollars: float | None = None,
    prices: Path | None = None,
    max_output_tokens: int = DEFAULTS.models.max_output_tokens,
    profile: str = DEFAULTS.profile,
    strict_tools: bool = DEFAULTS.models.strict_tools,
) -> tuple[str, JobConfig]:
    """A job's checked intent and configuration, the same for every front door that submits one
    (`quarry run`, `quarry mcp`'s start_job): mode, intent, budget, policy and models, the
    collection's index (a clear error now rather than a failed job later) and its search profile.
    Raises QuarryError."""
    if mode not in MODES:
        raise QuarryError("bad_mode", f"unknown mode {mode!r}", "use --mode list or --mode answer")
    intent = check_text(intent, "intent", MAX_INTENT_CHARS)
    budget = check_budget(budget)
    from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up

    config = job_config(
        policy,
        model,
        judge_model,
        rounds=rounds,
        max_seconds=budget,
        max_tokens=max_tokens,
        max_dollars=max_dollars,
        prices=prices,
        max_output_tokens=max_output_tokens,
        strict_tools=strict_tools,
    )
    col = Collection(name)
    _ = col.lucene  # clear error now rather than a failed job later
    return intent, replace(config, profile=check_profile(col, profile))
