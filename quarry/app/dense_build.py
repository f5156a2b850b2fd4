"""The front door of a durable dense index build (`workflows.dense_index`): start it, or attach to
the one already running for the same collection version; follow its progress; cancel it. One
workflow id per home, collection and version, so running `quarry index NAME --dense` twice attaches
the second command to the first build instead of starting another, and running it again after a
cancel or a crash resumes from the batches already embedded."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stores.dense_sizes import DURABLE_MIN_CHUNKS
from stores.errors import QuarryError
from workflows.dense_progress import progress_line

if TYPE_CHECKING:  # a type only: the readers (and pydantic's records) load when a build runs
    from stores.file_formats.corpus_reader import ProgressFn

DENSE_PREFIX = "dense-"
POLL_EVERY_S = 1.0  # how often a following command asks the build where it stands
BUILDS_MARK = "dense-builds"  # in QUARRY_HOME: this home has started a durable build


# A build id as `dense_build_id` makes it (versions as `stores.collection_versions` names them):
# the collection is what is left between the prefix and the version.
_BUILD_ID = re.compile(rf"^{DENSE_PREFIX}(?P<name>.+)-(?:root|\d{{8}}T\d{{6}}-\d{{9}}-\w+)-[0-9a-f]{{8}}$")


def is_dense_build(workflow_id: str) -> bool:
    return workflow_id.startswith(DENSE_PREFIX)


def collection_of_build(build_id: str) -> str:
    """The collection a build id names ('' for an id not made by `dense_build_id`); builds carry
    it in their memo too, this reads the ones started before they did."""
    found = _BUILD_ID.match(build_id)
    return found["name"] if found else ""


def dense_build_id(home: Path, name: str, version: str | None) -> str:
    """The build's workflow id: the same for the same home, collection and version."""
    digest = hashlib.sha1(str(home.resolve()).encode()).hexdigest()[:8]
    return f"{DENSE_PREFIX}{name}-{version or 'root'}-{digest}"


def has_builds(home: Path) -> bool:
    """Whether this home ever started a durable build (`start_or_attach` marks it): `quarry job
    list` asks Temporal for builds only then, since the question costs temporalio's client (over a
    second of start-up) in every home that has none."""
    return (home / BUILDS_MARK).exists()


def runs_durable(chunks: int, durable: bool | None) -> bool:
    """Whether a build of `chunks` chunks runs as durable work: as asked, else from DURABLE_MIN_CHUNKS on."""
    return durable if durable is not None else chunks >= DURABLE_MIN_CHUNKS


async def start_or_attach(client: Any, home: Path, name: str, version: str | None, **options: Any) -> Any:
    """The handle of this version's build: the running one, or a new one (which resumes from the
    batches a cancelled or crashed build staged). The version is pinned for the build before it
    starts (`stores.versions.pin_version`), so no `quarry add` between this call and the build's
    first step prunes it; a version pruned already is `version_gone`. A build that cannot be
    started releases the pin."""
    from temporalio.common import WorkflowIDConflictPolicy

    from stores.home import collection_paths
    from stores.versions import pin_version, unpin
    from workflows.dense_activities import DenseBuildInput
    from workflows.dense_index import DenseIndexBuild
    from workflows.shared import task_queue

    build_id = dense_build_id(home, name, version)
    root = collection_paths(name, home).root
    if version is not None:
        pin_version(root, build_id, version)
    inp = DenseBuildInput(collection=name, version=version, **options)
    (home / BUILDS_MARK).touch()  # before the start: a build that starts is always listed
    try:
        return await client.start_workflow(
            DenseIndexBuild.run,
            inp,
            id=build_id,
            task_queue=task_queue(home),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            static_summary=f"dense index of {name}",
            memo={"collection": name, "version": version or "root"},  # what `quarry job list` shows
        )
    except BaseException:
        unpin(root, build_id)
        raise


async def follow(handle: Any, progress: ProgressFn, *, every_s: float = POLL_EVERY_S) -> dict[str, Any]:
    """Wait for the build's result, telling `progress("embedding", chunks done, chunks)` as it goes."""

    def told(p: dict[str, Any]) -> None:
        if p.get("chunks") is not None:
            progress("embedding", int(p["chunks_done"]), int(p["chunks"]))

    return await _until_done(handle, told, every_s)


async def watch_build(client: Any, build_id: str, emit: Callable[[str], None]) -> dict[str, Any]:
    """Follow a running (or finished) build by its id, one line per change of its progress (`quarry
    job watch dense-…`); its result, or its failure as one QuarryError."""
    last = ""

    def told(p: dict[str, Any]) -> None:
        nonlocal last
        if (line := progress_line(p)) != last:
            emit(line)
            last = line

    return await _until_done(client.get_workflow_handle(build_id), told, POLL_EVERY_S)


async def _until_done(handle: Any, told: Callable[[dict[str, Any]], None], every_s: float) -> dict[str, Any]:
    """The build's result, asking its progress every `every_s` meanwhile (and once at the end); a
    failed or cancelled build raises its QuarryError (`build_error`)."""
    import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

    finished = asyncio.ensure_future(handle.result())
    name = "NAME"
    try:
        while True:
            done, _ = await asyncio.wait({finished}, timeout=every_s)
            if p := await _progress(handle):
                name = p.get("collection") or name
                told(p)
            if done:
                return finished.result()
    except Exception as err:
        mapped = build_error(err, name)
        if mapped is None:
            raise
        raise mapped from err
    finally:
        finished.cancel()


def build_error(err: BaseException, name: str) -> QuarryError | None:
    """A build's failure as the one message a command prints: its cause's `{code, message, hint}`
    (the record `nodes.job.heartbeat.application_error` puts in the details), or that it was
    cancelled or terminated. None for anything that is not a build's failure."""
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import ApplicationError, CancelledError, TerminatedError

    if not isinstance(err, WorkflowFailureError):
        return None
    again = f"run it again to resume from the batches already embedded: quarry index {name} --dense"
    cause: BaseException | None = err.cause
    while cause is not None:
        if isinstance(cause, (CancelledError, TerminatedError)):
            what = "cancelled" if isinstance(cause, CancelledError) else "terminated"
            return QuarryError(
                what, f"the dense index build of {name!r} was {what}; the live index is untouched", again
            )
        if isinstance(cause, ApplicationError) and cause.type:
            details = tuple(cause.details or ())
            record = details[0] if details and isinstance(details[0], dict) else {}
            return QuarryError(
                cause.type, str(record.get("message") or cause.message), str(record.get("hint") or again)
            )
        cause = cause.__cause__ or getattr(cause, "cause", None)
    return QuarryError("dense_build_failed", f"the dense index build of {name!r} failed: {err}", again)


async def _progress(handle: Any) -> dict[str, Any]:
    from temporalio.service import RPCError

    try:
        return await handle.query("progress")
    except RPCError:  # no worker answers queries right now, or the build just ended: ask again later
        return {}
