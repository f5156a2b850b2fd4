"""A failed job as Temporal shows it, and the way back to its result.

A job that fails (its graph failed after Temporal's retries, or its input is unusable) first stores
its final result — status "failed", its error `{code, message, hint}` — in the job store
(`finish_job`), so nothing is lost; then its workflow raises `job_failure(final)`, so the execution
ends *Failed* in Temporal (the Web UI, `temporal workflow list`), typed by the error's code.

Whoever waits for the job gets a `WorkflowFailureError` instead of the result: `failed_result`
turns it back into the result-shaped record, chosen by the ApplicationError's `type` (the code) and
read from its details — never from the message text. `job_result` is `handle.result()` with that
done: what the Python API, the evaluation and the command line wait with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio.exceptions import ApplicationError

from stores.errors import QuarryError, error_record
from stores.job_status import JobStatus

if TYPE_CHECKING:
    from temporalio.client import WorkflowHandle

# The code of a failure that carries no record (a result stored before errors had codes).
UNKNOWN_CODE = "internal_error"


def job_failure(final: dict[str, Any]) -> ApplicationError:
    """The ApplicationError a failed job's workflow raises once `finish_job` stored `final`: its
    type is the error's code, its message the error's message, its details the record `{code,
    message, hint}` (the convention of nodes.job.heartbeat.application_error) and the final result
    itself; not retryable (running the job again is `quarry job rerun`)."""
    error = final.get("error")
    if isinstance(error, dict) and error.get("code"):
        record = error_record(
            QuarryError(str(error["code"]), str(error.get("message") or ""), str(error.get("hint") or ""))
        )
    else:
        record = error_record(QuarryError(UNKNOWN_CODE, str(error or "the job failed")))
    return ApplicationError(
        record["message"] or f"the job failed ({record['code']})",
        record,
        final,
        type=record["code"],
        non_retryable=True,
    )


def failed_result(err: BaseException, job_id: str) -> dict[str, Any] | None:
    """The result of a job whose workflow failed with `job_failure` (a WorkflowFailureError whose
    cause is an ApplicationError with a type), or None for any other failure (cancelled,
    terminated, timed out: the caller says what happened). The error's code is the failure's
    type; its message and hint come from the details, the rest of the result too when they carry it."""
    cause = getattr(err, "cause", None)
    if not isinstance(cause, ApplicationError) or not cause.type:
        return None
    details = tuple(cause.details or ())
    record = details[0] if details and isinstance(details[0], dict) else {}
    final = details[1] if len(details) > 1 and isinstance(details[1], dict) else {}
    error = {
        "code": cause.type,
        "message": str(record.get("message") or cause.message or ""),
        "hint": str(record.get("hint") or ""),
    }
    return {"job_id": job_id, "ranked": []} | final | {"status": JobStatus.FAILED, "error": error}


async def job_result(handle: WorkflowHandle) -> dict[str, Any]:
    """A job's final result, `handle.result()` — a failed job's too: its record (`failed_result`)
    instead of the WorkflowFailureError. Any other failure is raised."""
    from temporalio.client import WorkflowFailureError  # lazy: the workflow imports this module in its sandbox

    try:
        return await handle.result()
    except WorkflowFailureError as err:
        failed = failed_result(err, handle.id)
        if failed is None:
            raise
        return failed
