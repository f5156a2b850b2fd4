"""`quarry run` and `job rerun`'s submit flow: submit the job (quarry.app.submit) and, with `wait`,
follow it live to its result in the terminal."""

from __future__ import annotations

from typing import Any

from nodes.job.config import JobConfig
from quarry.app.progress import WithStepDetail
from quarry.app.records import exit_for, final
from quarry.app.submit import submitted
from quarry.app.terminal import console, out, print_json, safe
from quarry.cli.options import temporal_run
from quarry.cli.render import render_result
from quarry.cli.watch import watch


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
        info, handle = await submitted(name, intent, mode, policy, config, address, ui_port)
        if not wait:
            return info
        job_id = info["job_id"]
        console.print(f"job {job_id} running (re-attach any time: quarry job watch {job_id})", highlight=False)
        if json_out:  # no live view on the JSON path: stdout carries only the result
            return await final(handle.result(), job_id, address) | info

        def emit(line: str) -> None:
            console.print(line, markup=False, highlight=False)

        return await final(watch(WithStepDetail(handle, job_id, emit), emit), job_id, address) | info

    result = temporal_run(main(), address=address)
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
