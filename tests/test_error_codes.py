"""Codes across Temporal (issue 21, item 4): a QuarryError raised in an activity reaches the workflow
as an ApplicationError typed by its code, a failed job's result carries `{code, message, hint}`,
the terminal shows "error (CODE): message" and its hint, and Temporal's own failures are mapped to
Quarry's codes by gRPC status — the assertions here are on codes, never on message text."""

from __future__ import annotations

import asyncio
import errno
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import GrpcStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutError, TimeoutType
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from stores.errors import QuarryError, error_line, error_record
from tests.conftest import LITERATURE
from workflows.job_failure import job_result

# -- activities: one conversion --------------------------------------------------------------------


def test_a_quarry_error_leaves_an_activity_typed_by_its_code_and_not_retried() -> None:
    from nodes.job.heartbeat import RETRYABLE_CODES, application_error

    err = application_error(QuarryError("version_gone", "version v1 is gone", "rerun it"))
    assert isinstance(err, ApplicationError)
    assert err.type == "version_gone" and err.non_retryable
    assert err.details == ({"code": "version_gone", "message": "version v1 is gone", "hint": "rerun it"},)
    assert err.message == "version v1 is gone", "the hint travels in the details, not in the message"
    for code in RETRYABLE_CODES:
        retryable = application_error(QuarryError(code, "m", "h"))
        assert retryable is not None and retryable.type == code and not retryable.non_retryable
    full = application_error(OSError(errno.ENOSPC, "No space left on device", "/x/jobs.sqlite"))
    assert full is not None and full.type == "disk_full" and full.non_retryable
    assert application_error(KeyError("bug")) is None, "other errors keep Temporal's own conversion"


def test_the_activity_wrappers_raise_it_inside_an_activity_only() -> None:
    from temporalio import activity

    from nodes.job.heartbeat import beating, with_heartbeats

    def gone(_: Any = None) -> None:
        raise QuarryError("no_collection", "collection 'x' does not exist", "ingest it")

    @activity.defn(name="gone_beating")
    @beating
    def gone_beating() -> None:
        gone()

    @activity.defn(name="gone_node")
    async def gone_node() -> None:
        await with_heartbeats(gone, {})

    for fn in (gone_beating, gone_node):
        with pytest.raises(ApplicationError) as info:
            result = ActivityEnvironment().run(fn)
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        assert info.value.type == "no_collection" and info.value.non_retryable
        assert info.value.details[0]["code"] == "no_collection"
    with pytest.raises(QuarryError) as raw:  # in-process runs (tests, evaluation) see the QuarryError itself
        asyncio.run(with_heartbeats(gone, {}))
    assert raw.value.code == "no_collection"


# -- the workflow: what a failure reports -----------------------------------------------------------


def _activity_error(cause: BaseException) -> ActivityError:
    err = ActivityError(
        "Activity task failed",
        scheduled_event_id=1,
        started_event_id=2,
        identity="w",
        activity_type="navigator",
        activity_id="1",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    err.__cause__ = cause
    return err


def test_failure_of_finds_the_record_in_the_cause_chain() -> None:
    from workflows.search_job import failure_of

    record = {"code": "version_gone", "message": "gone", "hint": "rerun"}
    app = ApplicationError("gone", record, type="version_gone", non_retryable=True)
    app.__cause__ = ApplicationError("gone\n  hint: rerun", type="QuarryError")  # the original, as Temporal chains it
    assert failure_of(_activity_error(app), "job-1") == record
    bug = failure_of(_activity_error(ApplicationError("boom", type="KeyError")), "job-1")
    assert bug["code"] == "internal_error" and bug["message"] == "KeyError: boom" and "job-1" in bug["hint"]
    timed = failure_of(
        _activity_error(TimeoutError("activity timeout", type=TimeoutType.HEARTBEAT, last_heartbeat_details=[])),
        "job-1",
    )
    assert timed["code"] == "activity_timeout"
    assert failure_of(RuntimeError("plain"))["code"] == "internal_error"


# -- the result and the terminal ---------------------------------------------------------------------


def test_finish_job_keeps_the_record_redacted_and_an_old_string_as_it_was(monkeypatch) -> None:
    from workflows.activities import stored_error

    monkeypatch.setenv("SOME_API_KEY", "secret-value-123")
    kept = stored_error({"code": "endpoint_down", "message": "no answer at key secret-value-123", "hint": "start it"})
    assert kept == {"code": "endpoint_down", "message": "no answer at key (redacted)", "hint": "start it"}
    assert stored_error("QuarryError: old secret-value-123") == "QuarryError: old (redacted)"
    assert stored_error(None) is None and stored_error("") is None
    assert error_line(kept) == "endpoint_down: no answer at key (redacted)"
    assert error_line("terminated by the user") == "terminated by the user" and error_line(None) == ""


def test_the_terminal_shows_the_code_and_hint_and_old_strings_as_before(capsys) -> None:
    from quarry.cli.render import render_result

    base = {"job_id": "job-1", "status": "failed", "collection": "c", "intent": "x", "ranked": []}
    render_result(base | {"error": error_record(QuarryError("version_gone", "version v1 is gone", "rerun it"))})
    shown = capsys.readouterr().out
    assert "error (version_gone): version v1 is gone" in shown and "hint: rerun it" in shown
    render_result(base | {"error": "QuarryError: collection 'c' does not exist"})
    assert "error: QuarryError: collection 'c' does not exist" in capsys.readouterr().out


def test_the_job_store_column_holds_one_line_for_a_record(tmp_path: Path) -> None:
    from stores.jobs import JobStore

    jobs = JobStore(tmp_path / "jobs.sqlite")
    record = {"code": "no_collection", "message": "gone", "hint": "ingest it"}
    jobs.finish("j1", {"job_id": "j1", "status": "failed", "ranked": [], "error": record})
    jobs.finish("j2", {"job_id": "j2", "status": "failed", "ranked": [], "error": "QuarryError: gone"})
    assert jobs.get("j1")["error"] == "no_collection: gone" and jobs.get("j1")["result"]["error"] == record
    assert jobs.get("j2")["error"] == "QuarryError: gone"


# -- Temporal's failures, by status ------------------------------------------------------------------


def _rpc(status: RPCStatusCode, message: str, details: list[str] = ()) -> RPCError:  # type: ignore[assignment]
    grpc = GrpcStatus(code=int(status), message=message)
    for type_name in details:
        grpc.details.add(type_url=f"type.googleapis.com/{type_name}")
    return RPCError(message, status, grpc.SerializeToString())


# Texts that would mislead a matcher on message text: each is tried with every status.
MISLEADING = [
    "workflow execution already completed",
    "no poller seen",
    "Timeout expired",
    "connect refused",
    "search attribute",
    "not found",
    "",
    "already started",
]
EXPECTED = {
    RPCStatusCode.NOT_FOUND: "unknown_job",
    RPCStatusCode.ALREADY_EXISTS: "job_exists",
    RPCStatusCode.FAILED_PRECONDITION: "job_finished",
    RPCStatusCode.INVALID_ARGUMENT: "bad_request",
    RPCStatusCode.DEADLINE_EXCEEDED: "no_worker",
    RPCStatusCode.CANCELLED: "no_worker",
    RPCStatusCode.UNAVAILABLE: "no_server",
    RPCStatusCode.INTERNAL: "temporal_error",
    RPCStatusCode.PERMISSION_DENIED: "temporal_error",
    RPCStatusCode.UNKNOWN: "temporal_error",
}


@pytest.fixture()
def cold_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose worker is not warming up (so no answer is worker_warming_up)."""
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path))
    monkeypatch.setenv("QUARRY_TEMPORAL_ADDRESS", "127.0.0.1:7233")
    return tmp_path


@pytest.mark.parametrize("status", list(EXPECTED))
def test_rpc_errors_are_mapped_by_status_never_by_text(cold_home, status: RPCStatusCode) -> None:
    from workflows.rpc_errors import quarry_error

    codes = {quarry_error(_rpc(status, text), "job-1").code for text in MISLEADING}
    assert codes == {EXPECTED[status]}
    assert quarry_error(_rpc(status, "x"), "job-1").hint


def test_the_messages_and_hints_are_the_command_lines(cold_home) -> None:
    from workflows.rpc_errors import quarry_error

    unknown = quarry_error(_rpc(RPCStatusCode.NOT_FOUND, "x"), "job-1")
    assert (unknown.message, unknown.hint) == (
        "job job-1 is not known to the Temporal server at 127.0.0.1:7233",
        "list jobs with: quarry job list (is --temporal-address the server it ran on?)",
    )
    idle = quarry_error(_rpc(RPCStatusCode.DEADLINE_EXCEEDED, "Timeout expired"), None)
    assert (idle.message, idle.hint) == (
        "no worker answered for the job: Timeout expired",
        "start one: quarry worker (quarry run starts one in the background)",
    )
    other = quarry_error(_rpc(RPCStatusCode.INTERNAL, "boom"), "job-1")
    assert (other.message, other.hint) == (
        "Temporal refused the request for job job-1: boom",
        "check `quarry server` / --temporal-address and try again",
    )


def test_a_missing_namespace_is_told_by_the_status_details(cold_home) -> None:
    from workflows.rpc_errors import NAMESPACE_NOT_FOUND, quarry_error

    assert quarry_error(_rpc(RPCStatusCode.NOT_FOUND, "x", [NAMESPACE_NOT_FOUND]), "job-1").code == "unknown_namespace"
    assert (
        quarry_error(_rpc(RPCStatusCode.NOT_FOUND, "x", ["temporal.api.errordetails.v1.NotFoundFailure"]), "job-1").code
        == "unknown_job"
    )


def test_no_worker_while_warming_up_says_so(cold_home, monkeypatch) -> None:
    import workflows.processes.warmup as warmup
    from workflows.rpc_errors import quarry_error

    monkeypatch.setattr(warmup, "warming_message", lambda home: "the worker is warming up (3 s so far)")
    err = quarry_error(_rpc(RPCStatusCode.DEADLINE_EXCEEDED, "x"), "job-1")
    assert err.code == "worker_warming_up" and "job-1" in err.hint
    update = WorkflowUpdateRPCTimeoutOrCancelledError()
    assert quarry_error(update, "job-1").code == "worker_warming_up"


def test_runtime_errors_by_type(cold_home) -> None:
    from workflows.rpc_errors import ServerUnreachable, quarry_error

    assert quarry_error(ServerUnreachable("any text", "127.0.0.1:1"), None).code == "no_server"
    assert quarry_error(RuntimeError("Failed client connect"), None).code == "temporal_error", (
        "only ServerUnreachable (workflows.client.connect) is a connection failure; the text decides nothing"
    )


# -- through Temporal ----------------------------------------------------------------------------


@pytest.fixture()
def queue() -> str:
    return f"quarry-test-{uuid.uuid4().hex}"


async def _failed_activity_types(handle) -> list[tuple[str, bool]]:
    return [
        (
            e.activity_task_failed_event_attributes.failure.application_failure_info.type,
            e.activity_task_failed_event_attributes.failure.application_failure_info.non_retryable,
        )
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]


async def test_a_job_whose_collection_version_is_gone_fails_with_its_code(env, literature, quarry_home, queue) -> None:
    from graphs.state import initial_state
    from nodes.job.config import JobConfig
    from stores.jobs import JobStore
    from workflows.client import new_job_id, submit
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    job_id = new_job_id()
    intent = "graph neural networks for molecules"
    state = dict(initial_state(job_id, LITERATURE, intent, config=JobConfig())) | {"collection_version": "v-removed"}
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await submit(
            env.client, JobInput(job_id=job_id, collection=LITERATURE, intent=intent, state=state), queue=queue
        )
        result = await asyncio.wait_for(job_result(handle), 60)
        failed = await _failed_activity_types(handle)
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    assert result["status"] == "failed" and result["error"]["code"] == "version_gone" and result["error"]["hint"]
    assert failed and all(kind == ("version_gone", True) for kind in failed)
    stored = JobStore(quarry_home / "jobs.sqlite").get(job_id)
    assert stored["status"] == "failed" and stored["result"]["error"]["code"] == "version_gone"


async def test_bad_input_started_without_quarrys_client_fails_with_its_code(
    env, literature, quarry_home, queue
) -> None:
    from nodes.job.config import JobConfig
    from workflows.client import new_job_id
    from workflows.search_job import SearchJob
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    async with build_worker(env.client, home=quarry_home, queue=queue):
        results, failures = {}, {}
        # `budget_seconds` is the field of inputs written before the budget moved into the config:
        # the workflow moves it there, and checks it like any budget.
        for what, inp in {
            "bad_budget": {"config": JobConfig(max_seconds=0.0)},
            "old_bad_budget": {"budget_seconds": 0.0},
            "bad_mode": {"mode": "poem"},
            "empty_intent": {"intent": "   "},
        }.items():
            job = JobInput(**({"job_id": new_job_id(), "collection": LITERATURE, "intent": "x"} | inp))
            handle = await env.client.start_workflow(SearchJob.run, job, id=job.job_id, task_queue=queue)
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(handle.result(), 60)
            failures[what] = (failure.value.cause, (await handle.describe()).status)
            results[what] = await asyncio.wait_for(job_result(handle), 60)
    for what, result in results.items():
        code = what.removeprefix("old_")
        assert result["status"] == "failed" and result["error"]["code"] == code and result["error"]["hint"]
        assert result["stop_reason"] == "bad_input"
        cause, status = failures[what]
        assert status == WorkflowExecutionStatus.FAILED, "the Web UI shows the execution Failed"
        assert isinstance(cause, ApplicationError) and cause.type == code and cause.non_retryable


async def test_a_failed_job_ends_failed_and_every_reader_shows_its_code(
    env, literature, quarry_home, queue, monkeypatch, tmp_path
) -> None:
    """A failed job stores its result, then its workflow ends Failed in Temporal typed by its code;
    `quarry job result --wait` (which `quarry run --wait` shares), its --json, `job list`, the
    Python API and the evaluation's wait all still get the result and show the code — from the job
    store, or from the failure itself where this home's store does not have it."""
    import json

    from typer.testing import CliRunner

    from graphs.state import initial_state
    from nodes.job.config import JobConfig
    from quarry.app.records import final
    from quarry.cli import app
    from stores.jobs import JobStore
    from workflows.client import new_job_id, result, submit
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    job_id = new_job_id()
    intent = "graph neural networks for molecules"
    state = dict(initial_state(job_id, LITERATURE, intent, config=JobConfig())) | {"collection_version": "v-removed"}
    JobStore(quarry_home / "jobs.sqlite").create(job_id, LITERATURE, intent, workflow_id=job_id, trace_id=None)
    handle = await submit(
        env.client, JobInput(job_id=job_id, collection=LITERATURE, intent=intent, state=state), queue=queue
    )
    address = env.client.service_client.config.target_host
    runner = CliRunner()

    def cli(*args: str):
        return runner.invoke(app, ["--home", str(quarry_home), "job", *args])

    # Waiting before any worker runs the job: the wait ends with the workflow's failure.
    waiting = asyncio.create_task(
        asyncio.to_thread(cli, "result", job_id, "--wait", "--json", "--temporal-address", address)
    )
    await asyncio.sleep(2)
    assert not waiting.done(), waiting.result().output if waiting.done() else ""
    async with build_worker(env.client, home=quarry_home, queue=queue):
        waited = await asyncio.wait_for(waiting, 90)
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    assert waited.exit_code == 1 and "Traceback" not in waited.output, waited.output
    assert json.loads(waited.stdout.strip().splitlines()[-1])["error"]["code"] == "version_gone"
    shown = cli("result", job_id)
    assert shown.exit_code == 1 and "error (version_gone)" in shown.output and "hint:" in shown.output, shown.output
    listed = {
        json.loads(line)["job_id"]: json.loads(line)
        for line in cli("list", "--json", "--limit", "1000").stdout.splitlines()
    }
    assert listed[job_id]["status"] == "failed" and listed[job_id]["error_code"] == "version_gone"
    assert f"{job_id}\tfailed (version_gone)\t" in cli("list", "--limit", "1000").stdout
    # The Python API returns the failed job's result (no exception), its code from the failure's type.
    api = await result(env.client, job_id)
    assert api["status"] == "failed" and api["error"]["code"] == "version_gone" and api["error"]["hint"]
    # A home whose job store does not know the job: the record comes from the failure itself.
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path))
    from_failure = await final(handle.result(), job_id)
    assert from_failure["status"] == "failed" and from_failure["error"] == api["error"]


def test_the_address_and_source_given_are_named(cold_home) -> None:
    from workflows.rpc_errors import ServerUnreachable, quarry_error

    unknown = quarry_error(_rpc(RPCStatusCode.NOT_FOUND, "x"), "job-1", address="10.0.0.9:7233")
    assert unknown.code == "unknown_job" and "10.0.0.9:7233" in unknown.message
    down = quarry_error(ServerUnreachable("refused", "127.0.0.1:1"), source="this home's server")
    assert down.code == "no_server" and "127.0.0.1:1 (this home's server)" in down.message


def test_job_result_shows_the_code_and_json_carries_it(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from quarry.cli import app
    from stores.jobs import JobStore

    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.create("job-gone", "lit", "x", workflow_id="job-gone", trace_id=None)
    record = {
        "code": "version_gone",
        "message": "version v1 of collection 'lit' no longer exists",
        "hint": "start the job again on the current version: quarry job rerun job-gone",
    }
    jobs.finish(
        "job-gone",
        {"job_id": "job-gone", "status": "failed", "collection": "lit", "intent": "x", "ranked": [], "error": record},
        {"collection": "lit", "intent": "x"},
    )
    runner = CliRunner()
    as_json = runner.invoke(app, ["--home", str(tmp_path), "job", "result", "job-gone", "--json"])
    assert as_json.exit_code == 1, as_json.output
    assert json.loads(as_json.stdout)["error"]["code"] == "version_gone"
    shown = runner.invoke(app, ["--home", str(tmp_path), "job", "result", "job-gone"])
    assert shown.exit_code == 1 and "(version_gone)" in shown.output and "quarry job rerun job-gone" in shown.output


def test_every_code_a_job_rpc_can_give_has_its_http_status() -> None:
    """A worker that is down, warming up or unresponsive is the server's condition (503), not a
    bad request (400): an HTTP client should retry, not change what it sent."""
    from quarry.http.common import status_of

    for code in ("no_worker", "worker_warming_up", "worker_unresponsive", "no_server"):
        assert status_of(code) == 503, code
    assert status_of("job_finished") == 409 and status_of("unknown_job") == 404
