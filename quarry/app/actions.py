"""What acts on a job — cancel, stop, steer, and a researcher's mark on one of its documents — as
functions that raise QuarryError, so every front door (the command line's `quarry job cancel | stop
| steer | mark`, `quarry mcp`'s tools, the HTTP API of `quarry serve`) sends the same request to the
same workflow with the same checks; each door only prints or serialises what these return."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from quarry.app import temporal
from quarry.app.records import known_job, store
from stores.errors import QuarryError
from stores.jobs import FINAL
from workflows.job_input import check_text
from workflows.rpc_errors import no_worker

STEER_MAX_CHARS = 500
STEER_WAIT_S = 10


def refuse_if_finished(job_id: str, hint: str) -> None:
    """QuarryError `job_finished` when the job store says the job has ended."""
    row = known_job(job_id)
    if row and row["status"] in FINAL:
        raise QuarryError("job_finished", f"job {job_id} has already finished ({row['status']})", hint)


def ended_hint(job_id: str) -> str:
    """What to do about a job that has ended instead of cancelling or terminating it."""
    return f"see its result: quarry job result {job_id}, or run it again: quarry job rerun {job_id}"


def cancel_job(job_id: str, address: str | None = None) -> None:
    """Cancel a job: it stops now, keeps its best result so far and ends as cancelled."""
    refuse_if_finished(job_id, ended_hint(job_id))

    async def main() -> None:
        client = await temporal.client(address)
        await client.get_workflow_handle(job_id).cancel()

    temporal.attempt(main(), job_id, address)


def stop_job(job_id: str, address: str | None = None) -> None:
    """Ask a job to answer now with what it has (a signal: it answers at its next step)."""
    refuse_if_finished(job_id, f"see its result: quarry job result {job_id}")

    async def main() -> None:
        client = await temporal.client(address)
        await client.get_workflow_handle(job_id).signal("stop")

    temporal.attempt(main(), job_id, address)


def steer_job(job_id: str, text: str, address: str | None = None) -> dict[str, Any]:
    """Add a requirement or exclusion to a running job; {accepted, applies_from_round} once the
    workflow has taken it (an update, so a rejected text is an error, not a lost note)."""
    # lazy: temporalio's client costs ~170 ms of start-up
    from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError

    text = check_text(text, "steering text", STEER_MAX_CHARS)
    refuse_if_finished(job_id, "start a new job with the added requirement")

    async def main() -> dict[str, Any]:
        client = await temporal.client(address)
        try:
            return await client.get_workflow_handle(job_id).execute_update(
                "steer", text, rpc_timeout=timedelta(seconds=STEER_WAIT_S)
            )
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise no_worker(
                f"no worker answered the steering of job {job_id} within {STEER_WAIT_S} s", job_id
            ) from None
        except WorkflowUpdateFailedError as err:
            cause = getattr(err, "cause", None)
            raise QuarryError(
                "steer_rejected",
                f"steering rejected: {getattr(cause, 'message', None) or cause or err}",
                'phrase one requirement, e.g. "must use hospital data" or "not surveys"',
            ) from None

    return temporal.attempt(main(), job_id, address)


def mark_document(job_id: str, docid: str, relevant: bool) -> tuple[str, str]:
    """Keep a researcher's mark on one document of a job's collection (stores.judgements), for
    self-tuning to learn from; (collection, docid) as stored. Only documents the collection holds."""
    from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up
    from stores.judgements import Judgement, JudgementStore, judgements_path

    row = store().get(job_id)
    col = Collection(row["collection"])
    if not col.corpus.has(docid):
        raise QuarryError(
            "unknown_docid",
            f"{docid!r} is not a document of collection {row['collection']!r}",
            f"give a docid from the job's result: quarry job result {job_id}",
        )
    mark = Judgement(job_id, row["intent"], docid, "user", 1.0 if relevant else 0.0)
    JudgementStore(judgements_path(col.paths)).record([mark])
    return row["collection"], docid
