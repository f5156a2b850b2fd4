"""Temporal access for every front door: which server a command talks to (its
--temporal-address, passed as a value), its client, and a failed conversation turned into one
QuarryError that says what to do (never a traceback)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from quarry.app.dense_build import collection_of_build, has_builds
from stores import settings
from stores.errors import QuarryError
from stores.home import quarry_home
from workflows.processes.address import ENV, Resolved, resolve_address
from workflows.processes.dev_server import reachable, server_record
from workflows.rpc_errors import ServerUnreachable, quarry_error

if TYPE_CHECKING:
    from temporalio.client import RPCTimeoutOrCancelledError
    from temporalio.service import RPCError


def where(address: str | None = None) -> Resolved:
    """The server a command talks to: its --temporal-address (typer fills the option from
    QUARRY_TEMPORAL_ADDRESS too), else `workflows.processes.address.resolve_address`'s rule."""
    if address and address.strip():
        return Resolved(address.strip(), f"{ENV} or --temporal-address")
    return resolve_address()


def current_address(address: str | None = None) -> str:
    """The address alone (see `where`)."""
    return where(address).address


def temporal_error(
    err: RPCError | RuntimeError | RPCTimeoutOrCancelledError, job_id: str | None = None, address: str | None = None
) -> QuarryError:
    """A Temporal failure as one message saying what to do, chosen by its gRPC status code and
    type (`workflows.rpc_errors.quarry_error`), never by its text."""
    return quarry_error(err, job_id, address=current_address(address))


def attempt(coro: Coroutine[Any, Any, Any], job_id: str | None = None, address: str | None = None) -> Any:
    """Run a Temporal conversation; its failures come out as one QuarryError (never a traceback),
    for a command to print (`run`) or to answer itself (`job progress` while a worker warms up).
    A RuntimeError that is not Temporal's (a bug) is not dressed up as a server failure."""
    import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

    from temporalio.client import RPCTimeoutOrCancelledError  # lazy: temporalio costs ~100 ms of start-up
    from temporalio.service import RPCError

    try:
        return asyncio.run(coro)
    except (RPCError, RPCTimeoutOrCancelledError, ServerUnreachable) as err:
        raise temporal_error(err, job_id, address) from err


async def client(address: str | None = None) -> Any:
    """A client of the server the command talks to (`where`)."""
    from workflows.client import connect  # lazy: temporalio's client costs over a second of start-up

    at = where(address)
    try:
        return await connect(at.address)
    except ServerUnreachable as err:
        raise quarry_error(err, address=at.address, source=at.source) from err


def ui_base(address: str | None = None) -> str:
    """The Web UI of the server this command talks to: the one this home started (its recorded
    UI port), else QUARRY_UI_URL if set, else '' — never a guess at another server's UI."""
    record = server_record(quarry_home())
    if record is not None and record.address == current_address(address):
        return record.ui_url
    return settings.ui_url()


def web_ui(job_id: str, address: str | None = None) -> str:
    """The job's page in the Web UI of the server in use ('' when that UI is unknown)."""
    from workflows.shared import web_ui_url  # lazy: with the job configuration, ~10 ms of start-up

    return web_ui_url(job_id, ui_base(address))


def temporal_statuses(limit: int, address: str | None = None) -> dict[str, str] | None:
    """This home's jobs as Temporal's visibility sees them (job id → execution status), or None
    when the server cannot be reached."""
    if not reachable(current_address(address)):
        return None

    from workflows.shared import task_queue

    async def main() -> dict[str, str]:
        conn = await client(address)
        found: dict[str, str] = {}
        async for w in conn.list_workflows(f'TaskQueue="{task_queue(quarry_home())}"', limit=limit):
            found.setdefault(w.id, w.status.name.lower() if w.status else "unknown")
        return found

    return _visibility(main())


def dense_builds(limit: int, address: str | None = None) -> list[dict[str, Any]] | None:
    """This home's durable dense index builds (`quarry index NAME --dense` above the size
    threshold, or `--durable`), newest first, as Temporal's visibility sees them: their ids (what
    `quarry job watch` takes), status, collection and start; None when no server answers. They
    are workflows on the home's task queue, not rows of the job store. A home that never started
    one has none to list, and no server is asked (`has_builds`)."""
    if not has_builds(quarry_home()):
        return []
    if not reachable(current_address(address)):
        return None

    from workflows.shared import task_queue

    async def main() -> list[dict[str, Any]]:
        conn = await client(address)
        query = f'TaskQueue="{task_queue(quarry_home())}" AND WorkflowType="DenseIndexBuild"'
        found: list[dict[str, Any]] = []
        async for w in conn.list_workflows(query, limit=limit):
            memo = await w.memo()
            found.append(
                {
                    "build_id": w.id,
                    "status": w.status.name.lower() if w.status else "unknown",
                    "collection": str(memo.get("collection") or collection_of_build(w.id)),
                    "started_at": w.start_time.timestamp() if w.start_time else None,
                }
            )
        return found

    return _visibility(main())


def _visibility(coro: Coroutine[Any, Any, Any]) -> Any:
    """What a visibility listing returns, or None when it fails: it is an addition to the job
    store's list, never a reason to fail it. The coroutine is closed when it could not even start
    (called inside a running event loop), so nothing warns that it was never awaited."""
    import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

    try:
        return asyncio.run(coro)
    except Exception:
        coro.close()
        return None
