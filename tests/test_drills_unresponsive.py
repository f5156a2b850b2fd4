"""Drills of a worker that does not answer (tests/drill_worker.py, a real `quarry worker` process): a
SIGSTOPped worker is reported as unresponsive — never as a finished job, never as "no worker" — by
`quarry job progress`'s function (quarry.app.jobs.progress_of) and by the service every
server door calls; and resumed, it finishes the job. The dev server is the module's (conftest.py)."""

from __future__ import annotations

import asyncio
import signal

import pytest
from temporalio.api.common.v1 import GrpcStatus
from temporalio.service import RPCError, RPCStatusCode

from quarry.app.service import QuarryService
from quarry.cli.job_inspect import progress_of
from stores.errors import QuarryError
from tests.drill_kit import RESULT_TIMEOUT_S, Gate, Worker, client_for, start, wait_for
from workflows.rpc_errors import quarry_error
from workflows.shared import task_queue


def failed_precondition() -> RPCError:
    """The refusal Temporal answers a query with when the workflow cannot take it now."""
    status = GrpcStatus(code=int(RPCStatusCode.FAILED_PRECONDITION), message="workflow task in failed state")
    return RPCError("workflow task in failed state", RPCStatusCode.FAILED_PRECONDITION, status.SerializeToString())


def test_a_stopped_worker_is_unresponsive_not_finished(home, server, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("QUARRY_HOME", str(home))
    monkeypatch.setenv("QUARRY_TEMPORAL_ADDRESS", server.address)
    gate = Gate(tmp_path / "gate")
    gate.hold()  # the job stays in its verification step: running, with its worker alive
    worker = Worker(home, server.address, task_queue(home), gate=gate.folder)
    try:
        handle = asyncio.run(start(server.address, task_queue(home)))
        wait_for(lambda: bool(gate.entered()), "the job's verification step")
        assert progress_of(handle.id, server.address)["status"] == "running"  # it answers while it runs

        worker.proc.send_signal(signal.SIGSTOP)
        with pytest.raises(QuarryError) as asked:
            progress_of(handle.id, server.address)
        status = QuarryService(server.address).job_status(handle.id)
        # Temporal also refuses a query with FAILED_PRECONDITION when the workflow task of a running
        # job is stuck with such a worker — which used to be read as "the job has finished": the
        # workflow, described, is still running.
        refused = quarry_error(failed_precondition(), handle.id, address=server.address)

        worker.proc.send_signal(signal.SIGCONT)
        gate.release()

        async def result():
            client = await client_for(server.address)
            return await asyncio.wait_for(client.get_workflow_handle(handle.id).result(), RESULT_TIMEOUT_S)

        final = asyncio.run(result())
    finally:
        gate.release()
        worker.proc.send_signal(signal.SIGCONT)
        worker.kill(signal.SIGTERM)
    assert refused.code == "worker_unresponsive", (refused.code, refused.message)
    ended = quarry_error(failed_precondition(), handle.id, address=server.address)
    assert ended.code == "job_finished", "once it has ended, the same refusal means finished"
    err = asked.value
    assert err.code == "worker_unresponsive", (err.code, err.message)
    assert "not answering (unresponsive)" in err.message and str(worker.proc.pid) in err.message
    assert f"kill -CONT {worker.proc.pid}" in err.hint
    assert (status.status, status.finished) == ("running", False), status
    assert "unresponsive" in status.note, status.note
    assert final["status"] == "completed", final.get("error")
