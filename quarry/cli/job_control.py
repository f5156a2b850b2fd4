"""`quarry job cancel | terminate | stop | steer | rerun`: the commands that act on a job — a
cancellation, termination, signal or update sent to its workflow on Temporal (and recorded in the
job store), or the same job submitted again. They live apart from the commands that only read a
job (quarry.cli.job_inspect) so each module stays one concern."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from nodes.job.config import JobConfig
from nodes.policy.registry import DEFAULT_POLICY
from quarry.app import temporal
from quarry.app.actions import cancel_job, ended_hint, mark_document, refuse_if_finished, steer_job, stop_job
from quarry.app.dense_build import is_dense_build
from quarry.app.records import close_terminated_trace, known_job, store
from quarry.app.terminal import out, safe
from quarry.cli.console import fail
from quarry.cli.options import AddressOpt, temporal_run
from quarry.cli.submit import submit_job
from stores.errors import QuarryError
from stores.job_status import JobStatus

commands = typer.Typer()


@commands.command("cancel")
def job_cancel(job_id: str, address: AddressOpt = None) -> None:
    """Cancel a job: it stops now, keeps its best result so far and ends as cancelled."""
    try:
        cancel_job(job_id, address)
    except QuarryError as err:
        fail(err)
    if is_dense_build(job_id):
        out.print(
            f"cancel sent to {safe(job_id)}; the live dense index stays as it was, and the batches embedded "
            "so far are kept: running `quarry index NAME --dense` again resumes from them",
            highlight=False,
        )
        return
    out.print(
        f"cancel sent to {safe(job_id)}; its best result so far: quarry job result {safe(job_id)} --wait",
        highlight=False,
    )


@commands.command("terminate")
def job_terminate(
    job_id: str,
    reason: Annotated[str, typer.Option(help="Recorded with the job")] = "terminated by the user",
    address: AddressOpt = None,
) -> None:
    """Terminate a job at once (no result is built; its last checkpoint stays in the job store)."""
    try:
        refuse_if_finished(job_id, ended_hint(job_id))
    except QuarryError as err:
        fail(err)
    from workflows.client import terminate_job  # lazy: temporalio's client costs over a second of start-up

    async def main():
        client = await temporal.client(address)
        return await terminate_job(client, job_id, reason[:300])

    trace = temporal_run(main(), job_id, address)
    row = known_job(job_id)
    marked = store().mark(job_id, JobStatus.TERMINATED, reason[:300]) if row else True
    if trace and marked:
        close_terminated_trace(trace, job_id, row, reason[:300])
    out.print(f"{safe(job_id)} terminated", highlight=False)


@commands.command("stop")
def job_stop(job_id: str, address: AddressOpt = None) -> None:
    """Ask a job to answer now with what it has."""
    try:
        stop_job(job_id, address)
    except QuarryError as err:
        fail(err)
    out.print(f"stop sent to {safe(job_id)}; it answers at its next step", highlight=False)


@commands.command("steer")
def job_steer(job_id: str, text: str, address: AddressOpt = None) -> None:
    """Add a requirement or exclusion to a running job (e.g. "not surveys", "2019-2023")."""
    try:
        accepted = steer_job(job_id, text, address)
    except QuarryError as err:
        fail(err)
    # The steer is applied by now: printing must not fail (a retry would steer twice), so the
    # accepted text goes through `safe` — `[/z]` or an escape sequence in it is shown as written.
    out.print(f"accepted: {safe(repr(accepted['accepted']))} ({safe(steer_applies(accepted))})", highlight=False)


def steer_applies(accepted: dict[str, Any]) -> str:
    """When an accepted steer takes effect, as the workflow said (workflows.search_job.SearchJob.steer)."""
    round_no = accepted.get("applies_from_round")
    if accepted.get("extra_round"):
        return f"the job was in its last planned round: one more, round {round_no}, applies it to the final list"
    return f"applies from round {round_no}"


@commands.command("rerun")
def job_rerun(job_id: str, wait: Annotated[bool, typer.Option("--wait")] = False, address: AddressOpt = None) -> None:
    """Run a job again with the same collection, intent, mode, policy, budget and configuration."""
    try:
        row = store().get(job_id)
    except QuarryError as err:
        fail(err)
    params = row.get("params") or {}
    state = row.get("state") or {}
    config = JobConfig.from_dict(params.get("config") or state.get("config"))
    if params.get("budget_seconds") is not None:  # a job submitted before the budget moved into the config
        config = replace(config, max_seconds=float(params["budget_seconds"]))
    submit_job(
        row["collection"],
        row["intent"],
        mode=params.get("mode", state.get("mode", "list")),
        policy=params.get("policy", state.get("policy", DEFAULT_POLICY)),
        config=config,
        wait=wait,
        json_out=False,
        address=address,
    )


@commands.command("mark")
def job_mark(
    job_id: str, docid: str, label: Annotated[str, typer.Argument(metavar="relevant|not", help="relevant, or not")]
) -> None:
    """Mark a document relevant or not for a job's intent; `quarry tune NAME --self` learns from marks."""
    try:
        if label not in ("relevant", "not"):
            raise QuarryError("bad_label", f"unknown mark {label!r}", "mark a document relevant or not")
        collection, docid = mark_document(job_id, docid, label == "relevant")
    except QuarryError as err:
        fail(err)
    out.print(
        f"marked {safe(docid)} {label} for job {safe(job_id)}; quarry tune {safe(collection)} --self learns from it",
        highlight=False,
    )
