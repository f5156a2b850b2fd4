"""The submit flow of `quarry run` and `job rerun`: start the infrastructure when needed, record
the job in the job store under its own trace, submit it, and with `wait` follow it live."""

from __future__ import annotations

from typing import Any

from nodes.job.config import JobConfig
from quarry.app import infrastructure, temporal
from quarry.app.progress import WithStepDetail
from quarry.app.records import exit_for, final, trace_file
from quarry.cli.console import console, out, print_json, safe
from quarry.cli.render import render_result
from quarry.cli.watch import watch
from stores.home import ensure_home, quarry_home
from stores.jobs import JobStore
from workflows.shared import JobInput


async def _submitted(
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
        info, _ = await _submitted(name, intent, mode, policy, config, address, ui_port)
        return info

    return temporal.attempt(main(), address=address)


def submit_job(
    name: str,
    intent: str,
    *,
    mode: str,
    policy: str,
    config: JobConfig,
    wait: bool,
    json_out: bool,
    address: str | None = None,
    ui_port: int | None = None,
) -> None:
    """Submit a job (starting the embedded server and a worker when needed) and, with `wait`,
    follow it live to its result. Its budgets (time, tokens, dollars) are `config`'s. `address`
    is the command's --temporal-address and `ui_port` its --ui-port, None when not given."""
    from observability import shutdown_tracing  # lazy: observability costs ~40 ms of start-up

    async def main() -> dict[str, Any]:
        info, handle = await _submitted(name, intent, mode, policy, config, address, ui_port)
        if not wait:
            return info
        job_id = info["job_id"]
        console.print(f"job {job_id} running (re-attach any time: quarry job watch {job_id})", highlight=False)
        if json_out:  # no live view on the JSON path: stdout carries only the result
            return await final(handle.result(), job_id, address) | info

        def emit(line: str) -> None:
            console.print(line, markup=False, highlight=False)

        return await final(watch(WithStepDetail(handle, job_id, emit), emit), job_id, address) | info

    result = temporal.run(main(), address=address)
    shutdown_tracing()
    if json_out:
        print_json(result)
    elif wait:
        render_result(result, web_ui=result["web_ui"], trace_file=result["trace_file"])
    else:
        out.print(
            f"submitted {safe(result['job_id'])}"
            + (f"\nWeb UI: {safe(result['web_ui'])}" if result["web_ui"] else "")
            + f"\nprogress: quarry job watch {result['job_id']}\nresult: quarry job result {result['job_id']} --wait",
            highlight=False,
        )
    if wait:
        exit_for(result)
