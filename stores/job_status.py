"""Every status a Quarry job can have, and the groups of them the code asks about.

The job store owns a job's status (stores.jobs): the workflow sets it as the job goes, the store
keeps its last one, and every front door shows it. A `JobStatus` is a `StrEnum`: each member *is*
its value (`JobStatus.COMPLETED == "completed"`, `f"{JobStatus.COMPLETED}"` is `completed`), so
stored rows, Temporal payloads and JSON outputs carry the same strings as before there was a name
for them. Compare statuses with these members, never with string literals
(tests/test_named_seams.py checks it).

Temporal's own execution statuses (`WorkflowExecutionStatus`: running, completed, terminated,
timed_out, continued_as_new, …) are another vocabulary; a job listed while Temporal says it ended
outside Quarry shows Temporal's word.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    RUNNING = "running"  # submitted, or between rounds; the only status that is not final
    COMPLETED = "completed"  # it answered when its graph said so
    STOPPED = "stopped"  # it answered early because it was asked to stop
    BUDGET_EXHAUSTED = "budget_exhausted"  # its time budget ran out: the best result so far
    FAILED = "failed"  # its graph failed; its result carries the error `{code, message, hint}`
    CANCELLED = "cancelled"  # `quarry job cancel`: the best result so far, then the run is cancelled
    TERMINATED = "terminated"  # ended from outside (Temporal's terminate), marked by whoever saw it


# A job's last statuses: once a job has one, the store never reopens it.
FINAL = frozenset(JobStatus) - {JobStatus.RUNNING}
# Ended by a failure or from outside, before finishing its work (exit status 1; a result, if any,
# was not built by the job's answer step).
CUT_SHORT = frozenset({JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.TERMINATED})
# Ended with an error the job store keeps beside the row (the failure, or why it was terminated).
WITH_ERROR = frozenset({JobStatus.FAILED, JobStatus.TERMINATED})
# Ended with its answer built: on time, when stopped, or when its time budget ran out.
ANSWERED = frozenset({JobStatus.COMPLETED, JobStatus.STOPPED, JobStatus.BUDGET_EXHAUSTED})
# Ended by the workflow halting its graph: the status is also why the job answered (its stop reason).
HALTED = frozenset({JobStatus.BUDGET_EXHAUSTED, JobStatus.CANCELLED})
