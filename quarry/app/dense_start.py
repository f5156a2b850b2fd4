"""Starting a durable dense index build and asking where it stands — the one implementation that
`quarry index NAME --dense` (above the size threshold, or `--durable`), `job progress dense-…`,
`quarry serve`'s HTTP API and `quarry mcp`'s tools call. Starting returns at once with the build's
id (or says the current dense index is reused); the build itself runs on the home's workers
(`workflows.dense_index`), so a client that goes away loses nothing and any door reads it by id."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from quarry.app import temporal
from quarry.app.dense_build import collection_of_build, is_dense_build
from stores.errors import QuarryError

STATUS_RPC_S = 5.0  # how long asking a build where it stands may take before it counts as unanswered


@dataclass(frozen=True)
class BuildStart:
    """A build started or attached to (`build_id`), or none needed: the current index is reused
    (`reused`, with its `meta`)."""

    collection: str
    build_id: str
    reused: bool
    meta: Any = None  # stores.dense.DenseMeta of the reused index
    web_ui: str = ""


def start_dense_build(name: str, address: str | None = None) -> BuildStart:
    """Start the durable dense index build of collection `name`'s current version — or attach to
    the one running for it (one build id per home, collection and version) — and return at once;
    the embedded Temporal server and a worker are started when none runs, as `quarry run` does.
    An unknown collection is a QuarryError."""
    from quarry.app import infrastructure
    from quarry.app.dense_build import start_or_attach
    from stores.collection import Collection
    from stores.dense import DenseIndex
    from stores.home import ensure_home, quarry_home

    col = Collection(name)  # an unknown collection: QuarryError
    current = DenseIndex(col.paths, col.name).current_meta(col.corpus.fingerprint)
    if current is not None:
        return BuildStart(collection=name, build_id="", reused=True, meta=current)
    home = ensure_home(quarry_home())
    infrastructure.ensure_infrastructure(home, address)

    async def main() -> str:
        client = await temporal.client(address)
        return str((await start_or_attach(client, home, col.name, col.version)).id)

    build_id = temporal.attempt(main(), address=address)
    return BuildStart(collection=name, build_id=build_id, reused=False, web_ui=temporal.web_ui(build_id, address))


def build_status(build_id: str, address: str | None = None) -> dict[str, Any]:
    """A build's answer to its `progress` query (stage, batches and chunks done of all, chunks/s,
    seconds left) with Temporal's status of it (`running`, `completed`, `failed`, `cancelled`…);
    stage `starting` while no worker has taken it up yet. An id that is not a dense build's, or that the server does not know, is a QuarryError."""
    if not is_dense_build(build_id):
        raise QuarryError(
            "unknown_job",
            f"{build_id!r} is not a dense index build id",
            "build ids start with 'dense-': quarry job list shows them",
        )

    async def main() -> dict[str, Any]:
        handle = (await temporal.client(address)).get_workflow_handle(build_id)
        described = await handle.describe(rpc_timeout=timedelta(seconds=STATUS_RPC_S))
        p = await handle.query("progress", rpc_timeout=timedelta(seconds=STATUS_RPC_S))
        status = described.status.name.lower() if described.status else "unknown"
        return dict(p) | {
            "build_id": build_id,
            "status": status,
            "collection": p.get("collection") or collection_of_build(build_id),
        }

    try:
        return temporal.attempt(main(), build_id, address)
    except QuarryError as err:
        if err.code != "worker_warming_up":
            raise
        # started, but no worker has run its first step yet: it waits, nothing failed
        return {
            "build_id": build_id,
            "status": "running",
            "stage": "starting",
            "collection": collection_of_build(build_id),
        }
