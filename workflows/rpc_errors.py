"""Temporal's failures as Quarry's errors, by gRPC status code — never by message text.

A server's message text is no contract (it changes between server versions and is not the same on
every path), so what a failure *is* comes from `RPCError.status` (temporalio.service.RPCStatusCode)
and, where one status covers two things, from the typed details of the gRPC status (a namespace
that does not exist has a NamespaceNotFoundFailure). The message is only shown, never matched.

A connection that cannot be made at all is a RuntimeError from the SDK's bridge, with no status:
`workflows.client.connect` raises it as `ServerUnreachable` (still a RuntimeError), so it is known
by its type. The messages and hints are the ones the command line prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stores.errors import QuarryError
from workflows.shared import ServerUnreachable

if TYPE_CHECKING:  # imported when called: the command line pays for temporalio only when it talks to a server
    from temporalio.client import RPCTimeoutOrCancelledError
    from temporalio.service import RPCError

NAMESPACE_NOT_FOUND = "temporal.api.errordetails.v1.NamespaceNotFoundFailure"
SERVER_HINT = "start it with `quarry server`, or set --temporal-address / QUARRY_TEMPORAL_ADDRESS"
DESCRIBE_S = 3.0  # how long telling a finished job from an unanswered one may take
CONNECT_HINT = "start it with `quarry server` (or `quarry run`, which starts it), or set --temporal-address"


def _address(address: str | None) -> str:
    if address:
        return address
    from workflows.shared import temporal_address

    return temporal_address()


def _detail_types(err: RPCError) -> set[str]:
    """The type names of the gRPC status's details (e.g. NAMESPACE_NOT_FOUND)."""
    try:
        return {d.type_url.rsplit("/", 1)[-1] for d in err.grpc_status.details}
    except Exception:  # raw status bytes that do not parse: no details to go by
        return set()


def no_worker(message: str, job_id: str | None) -> QuarryError:
    """No worker answered: say why, from what this home's workers are doing (workflows.processes.warmup.
    worker_state) — one warming up or still starting (do not invite a second worker), one polling
    that does not answer (unresponsive: it may be stopped), or none at all (say how to start one)."""
    from stores.home import quarry_home
    from workflows.processes.warmup import warming_message, worker_state

    home = quarry_home()
    follow = f"follow it: quarry job watch {job_id}" if job_id else "try again in a few seconds"
    if (warming := warming_message(home)) is not None:
        return QuarryError("worker_warming_up", warming, follow)
    state = worker_state(home)
    what = f"job {job_id}" if job_id else "the job"
    if state.stopped:
        pids = ", ".join(map(str, state.stopped))
        return QuarryError(
            "worker_unresponsive",
            f"the worker is not answering (unresponsive) for {what}: its process {pids} is stopped",
            f"resume it (kill -CONT {pids}) or restart it (quarry down, then quarry worker); "
            "the job goes on from its last step",
        )
    if state.polling:
        return QuarryError(
            "worker_unresponsive",
            f"the worker is not answering (unresponsive) for {what}: {message}",
            "it may be overloaded or stuck; if it stays so, restart it (quarry down, then quarry worker) — "
            "the job goes on from its last step",
        )
    if state.starting is not None:
        return QuarryError(
            "worker_warming_up",
            f"the worker is starting (pid {state.starting}); the job starts when it is ready",
            follow,
        )
    return QuarryError("no_worker", message, "start one: quarry worker (quarry run starts one in the background)")


def _still_running(job_id: str, address: str | None) -> bool | None:
    """Whether Temporal describes the job's workflow as running (None: it could not be asked).
    Run in a thread of its own, so it works whether or not the caller is inside an event loop."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor
    from datetime import timedelta

    from workflows.processes.dev_server import reachable

    at = _address(address)
    if not reachable(at):
        return None

    async def describe() -> bool:
        from workflows.client import connect

        client = await connect(at, tracing=False, starting_up_wait_s=DESCRIBE_S)
        found = await client.get_workflow_handle(job_id).describe(rpc_timeout=timedelta(seconds=DESCRIBE_S))
        return found.status is not None and found.status.name == "RUNNING"

    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(asyncio.run, describe()).result(timeout=2 * DESCRIBE_S)
        except Exception:  # the server did not say: the caller keeps the status code's reading
            return None


# Long: one branch per error type and gRPC status code, read as a table (the docstring is its index).
def quarry_error(
    err: RPCError | RuntimeError | RPCTimeoutOrCancelledError,
    job_id: str | None = None,
    *,
    address: str | None = None,
    source: str | None = None,
) -> QuarryError:
    """A Temporal failure about job `job_id` (None: no particular job) as one QuarryError saying
    what to do, chosen by the error's type and gRPC status code — the message text decides nothing:

    NOT_FOUND → unknown_job (a namespace that does not exist: unknown_namespace); ALREADY_EXISTS →
    job_exists; FAILED_PRECONDITION → job_finished, unless Temporal describes the workflow as
    still running (then as DEADLINE_EXCEEDED); INVALID_ARGUMENT → bad_request; DEADLINE_EXCEEDED,
    CANCELLED (and an update's RPC timeout) → `no_worker` (which says worker_warming_up while this
    home's worker warms up or starts, worker_unresponsive when it polls but does not answer);
    UNAVAILABLE and ServerUnreachable → no_server; any other status → temporal_error. Any other
    RuntimeError is temporal_error too.

    `address` is the server the command talked to (default: workflows.shared.temporal_address);
    `source` says where that address came from, for a connection that could not be made."""
    from temporalio.client import RPCTimeoutOrCancelledError
    from temporalio.service import RPCError, RPCStatusCode

    what = f"job {job_id}" if job_id else "the job"
    if isinstance(err, ServerUnreachable):
        at = f"{address or err.address}" + (f" ({source})" if source else "")
        return QuarryError("no_server", f"cannot reach Temporal at {at}: {err}", CONNECT_HINT)
    if isinstance(err, RPCTimeoutOrCancelledError):
        return no_worker(f"no worker answered for {what} in time", job_id)
    if not isinstance(err, RPCError):
        return QuarryError(
            "temporal_error",
            f"the Temporal client failed for {what}: {str(err)[:300]}",
            "check `quarry server` / --temporal-address and try again",
        )
    text = err.message or str(err)
    status = err.status
    if status == RPCStatusCode.NOT_FOUND:
        if NAMESPACE_NOT_FOUND in _detail_types(err):
            from workflows.shared import temporal_namespace

            return QuarryError(
                "unknown_namespace",
                f"the Temporal server at {_address(address)} has no namespace {temporal_namespace()!r}",
                "set QUARRY_TEMPORAL_NAMESPACE to one it has, or use the server `quarry server` starts",
            )
        return QuarryError(
            "unknown_job",
            f"{what} is not known to the Temporal server at {_address(address)}",
            "list jobs with: quarry job list (is --temporal-address the server it ran on?)",
        )
    if status == RPCStatusCode.ALREADY_EXISTS:
        return QuarryError(
            "job_exists",
            f"{what} already exists on the Temporal server at {_address(address)}",
            f"see it: quarry job result {job_id or 'JOB_ID'}; a new job gets a new id (quarry run)",
        )
    if status == RPCStatusCode.FAILED_PRECONDITION:
        # Temporal says this both of a closed workflow and of a running one whose worker does not
        # take its workflow task (stopped, stuck): the workflow's own status tells them apart.
        if job_id and _still_running(job_id, address):
            return no_worker(f"its worker did not take the request: {text[:200]}", job_id)
        return QuarryError(
            "job_finished", f"{what} has already finished", f"see its result: quarry job result {job_id or 'JOB_ID'}"
        )
    if status == RPCStatusCode.INVALID_ARGUMENT:
        return QuarryError(
            "bad_request",
            f"Temporal refused the request for {what} as invalid: {text[:300]}",
            "check the job id and the options given; this home's jobs: quarry job list",
        )
    if status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
        return no_worker(f"no worker answered for {what}: {text[:200]}", job_id)
    if status == RPCStatusCode.UNAVAILABLE:
        return QuarryError("no_server", f"cannot reach Temporal at {_address(address)}: {text[:200]}", SERVER_HINT)
    return QuarryError(
        "temporal_error",
        f"Temporal refused the request for {what}: {text[:300]}",
        "check `quarry server` / --temporal-address and try again",
    )
