"""The dense index built as durable work (issue 24 item 4): batches as activities on the home's embed
queue, a staged build swapped in at the end, progress as a query, cancel and resume, replay.

In-process workers on the module's in-memory dev server (`env`); the worker-process drill with a
SIGKILL is tests/test_dense_durable_drill.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.worker import Replayer

from quarry.app.dense_build import (
    build_error,
    collection_of_build,
    dense_build_id,
    follow,
    runs_durable,
    start_or_attach,
)
from stores.collection import Collection, ingest
from stores.collection_edits import add
from stores.dense import DenseIndex, DenseMeta
from stores.dense_sizes import DURABLE_MIN_CHUNKS
from stores.dense_staging import STAGING_DIR, StagedBuild, read_ledger
from stores.embedder import embed_texts
from stores.errors import QuarryError
from stores.jobs import RUNNING_HORIZON_SECONDS
from stores.versions import PINS_DIR, held_pins, pin_version
from tests.fakes import search_docs, write_jsonl
from workflows.dense_index import DenseIndexBuild
from workflows.dense_progress import progress_line
from workflows.shared import task_queue
from workflows.worker import build_embed_worker, build_worker

NAME = "lit"
BATCH_CHUNKS = 8  # ~10 batches of the 40 papers: several per worker, cancellable between them


@pytest.fixture(scope="module")
def dense_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("dense-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("dense-src") / "lit.jsonl", search_docs()), NAME, home=home)
    return home


@pytest.fixture(scope="module")
def clean(dense_home: Path) -> dict[str, Any]:
    """The reference: an in-process build of the same collection, its vectors by chunk id."""
    col = Collection(NAME, dense_home)
    index = DenseIndex(col.paths, NAME)
    meta = index.build(col.corpus)
    vectors = index_vectors(col)
    return {"meta": meta, "vectors": vectors}


def index_vectors(col: Collection) -> dict[str, np.ndarray]:
    index = DenseIndex(col.paths, col.name)
    try:
        found = index.chunk_vectors(list(col.corpus.hashes()))
    finally:
        index.close()
    return {f"{docid}#{span.chunk_no}": vec for docid, spans in found.items() for span, vec in spans}


def assert_same_vectors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    worst = min(float(np.dot(got[k], want[k])) for k in want)  # unit vectors: the dot is the cosine
    assert worst >= 0.999, worst


async def run_build(env, home: Path, name: str = NAME, **options: Any) -> tuple[Any, dict[str, Any]]:
    queue = task_queue(home)
    async with build_worker(env.client, home=home, queue=queue), build_embed_worker(env.client, home=home, queue=queue):
        col = Collection(name, home)
        handle = await start_or_attach(env.client, home, name, col.version, batch_chunks=BATCH_CHUNKS, **options)
        seen: list[tuple[int, int]] = []
        result = await asyncio.wait_for(follow(handle, lambda stage, d, t: seen.append((d, t)), every_s=0.2), 120)
        return handle, result | {"seen": seen, "progress": await handle.query("progress")}


@contextlib.asynccontextmanager
async def build_held(
    env, home: Path, name: str, version: str | None, monkeypatch: pytest.MonkeyPatch, at_batch: int
) -> AsyncIterator[tuple[Any, threading.Event]]:
    """A durable build on its own workers, held (in a worker thread) before it embeds batch
    `at_batch` until the yielded event is set: `(handle, release)`, the build known to be waiting."""
    held, release = threading.Event(), threading.Event()
    real = StagedBuild.embed_batch

    def gated(self, corpus, batch, after, **kw):
        if batch >= at_batch and not release.is_set():
            held.set()
            release.wait(60)
        return real(self, corpus, batch, after, **kw)

    monkeypatch.setattr(StagedBuild, "embed_batch", gated)
    queue = task_queue(home)
    try:
        async with (
            build_worker(env.client, home=home, queue=queue),
            build_embed_worker(env.client, home=home, queue=queue),
        ):
            handle = await start_or_attach(env.client, home, name, version, batch_chunks=BATCH_CHUNKS, max_in_flight=1)
            await asyncio.wait_for(asyncio.to_thread(held.wait, 60), 70)
            yield handle, release
    finally:
        release.set()


async def test_durable_build_equals_a_clean_build_and_replays(env, dense_home: Path, clean) -> None:
    handle, result = await run_build(env, dense_home, segment_batches=3)  # continues as new every 3 batches
    col = Collection(NAME, dense_home)
    meta = DenseIndex(col.paths, NAME).meta
    assert meta is not None and meta.build_id != clean["meta"].build_id
    assert meta.chunks == clean["meta"].chunks == col.corpus.stats()["chunks"]
    assert meta.documents == clean["meta"].documents and meta.fingerprint == col.corpus.fingerprint
    assert_same_vectors(index_vectors(col), clean["vectors"])

    batches = result["batches"]
    assert batches >= 5 and result["embedded_batches"] == batches and result["reused_batches"] == 0
    p = result["progress"]
    assert p["stage"] == "done" and p["batches_done"] == batches and p["chunks_done"] == meta.chunks
    assert "dense index of lit: done" in progress_line(p) and f"{batches}/{batches} batches" in progress_line(p)
    assert result["seen"] and result["seen"][-1] == (meta.chunks, meta.chunks)  # the follower was told

    ledger = read_ledger(col.paths.chroma_dir)  # the index keeps how it was built
    started = [e["batch"] for e in ledger if e["event"] == "start"]
    assert sorted(started) == list(range(batches)), "every batch embedded exactly once"
    assert not (col.paths.version_dir / STAGING_DIR).exists() or not any(
        (col.paths.version_dir / STAGING_DIR).iterdir()
    ), "the staged build is gone once committed"
    assert handle.id == dense_build_id(dense_home, NAME, col.version)

    run_id, runs = handle.result_run_id, 0
    while run_id:  # the runs that continued as new, then the one that committed
        history = await env.client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
        replay = await Replayer(workflows=[DenseIndexBuild]).replay_workflow(history)
        runs += 1
        last = history.events[-1]
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        assert replay.replay_failure is None
    assert runs == -(-batches // 3) >= 2, "a run per segment of three batches, the counts carried across"


async def test_cancel_leaves_the_live_index_and_a_rerun_resumes(
    env, dense_home: Path, clean, monkeypatch: pytest.MonkeyPatch
) -> None:
    col = Collection(NAME, dense_home)
    before = (col.paths.chroma_dir / "dense.json").read_text()
    live = index_vectors(col)

    real = StagedBuild.embed_batch
    async with build_held(env, dense_home, NAME, col.version, monkeypatch, at_batch=2) as (handle, release):
        p = await handle.query("progress")
        assert p["stage"] == "embedding" and p["batches_done"] == 2 and p["batches"] > 3
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 60)
        release.set()
    err = build_error(failed.value, NAME)
    assert err is not None and err.code == "cancelled" and "untouched" in err.message and "--dense" in err.hint
    assert held_pins(col.paths.root) == {}, "a cancelled build releases its version"

    assert (col.paths.chroma_dir / "dense.json").read_text() == before, "the live index is untouched"
    assert_same_vectors(index_vectors(col), live)
    staged = list((col.paths.version_dir / STAGING_DIR).glob("*/batch-*.npz"))
    assert {int(f.name.split("-")[1]) for f in staged} >= {0, 1}, "the embedded batches are kept for a rerun"

    monkeypatch.setattr(StagedBuild, "embed_batch", real)
    _, result = await run_build(env, dense_home)
    assert result["reused_batches"] >= 2 and result["embedded_batches"] == result["batches"] - result["reused_batches"]
    ledger = read_ledger(Collection(NAME, dense_home).paths.chroma_dir)
    done_twice = [b for b in (0, 1) if sum(e["event"] == "done" and e["batch"] == b for e in ledger) > 1]
    assert done_twice == [], "a resumed build does not embed staged batches again"
    meta = DenseMeta(**json.loads((col.paths.chroma_dir / "dense.json").read_text()))
    assert meta.build_id != DenseMeta(**json.loads(before)).build_id
    assert_same_vectors(index_vectors(col), clean["vectors"])


async def test_durable_build_into_a_chroma_server(
    env, dense_home: Path, tmp_path: Path, chroma_server_proc: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a Chroma server, batches are upserted straight into the build's server collection (every
    machine's workers write one index); the commit only swaps the local sidecar in."""
    monkeypatch.setenv("QUARRY_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("QUARRY_CHROMA_PORT", str(chroma_server_proc))
    ingest(write_jsonl(tmp_path / "srv.jsonl", search_docs()), "srv", home=dense_home)
    _, result = await run_build(env, dense_home, "srv")
    col = Collection("srv", dense_home)
    meta = DenseIndex(col.paths, "srv").meta
    assert meta is not None and meta.server == f"127.0.0.1:{chroma_server_proc}"
    assert meta.collection == f"srv-chunks-durable-{result['meta']['build_id'].removeprefix('durable-')}"
    assert meta.chunks == col.corpus.stats()["chunks"] and result["embedded_batches"] == result["batches"]
    assert sorted(p.name for p in col.paths.chroma_dir.iterdir()) == ["dense.json", "ledger.jsonl"]
    chunks = list(col.corpus.iter_chunks())
    stored = index_vectors(col)
    assert set(stored) == {f"{c.docid}#{c.chunk_no}" for c in chunks}
    fresh = embed_texts([c.text for c in chunks[:10]], 64)
    assert (
        min(float(np.dot(stored[f"{c.docid}#{c.chunk_no}"], v)) for c, v in zip(chunks, fresh, strict=False)) >= 0.999
    )
    assert col.dense.search("graph neural networks for molecules", k=3)


def test_which_builds_run_durable() -> None:
    assert runs_durable(DURABLE_MIN_CHUNKS, None) and not runs_durable(DURABLE_MIN_CHUNKS - 1, None)
    assert runs_durable(10, True) and not runs_durable(10**9, False)


def test_a_build_id_names_its_collection(tmp_path: Path) -> None:
    """`job list` shows a build's collection from its memo, or, for a build started before builds
    carried one, from its id — hyphens in the collection's name included."""
    version = "20261204T144152-082117543-2f84364c"
    for name in ("cacm", "my-coll-2", "a-20261204T144152"):
        for v in (version, None):
            assert collection_of_build(dense_build_id(tmp_path, name, v)) == name
    assert collection_of_build("job-1f2e3d") == "" and collection_of_build("dense-x") == ""


async def test_adds_during_a_durable_build_leave_its_version_pinned(
    env, dense_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three `add`s while a durable build embeds would prune the version it writes (three versions
    are kept): the build pins it, completes on it, and lets it go when it ends."""
    name = "pinned"
    ingest(write_jsonl(tmp_path / "pinned.jsonl", search_docs()), name, home=dense_home)
    version = Collection(name, dense_home).version
    assert version is not None

    def add_one(i: int) -> str | None:
        doc = {"_id": f"extra{i}", "title": f"Added paper {i}", "text": f"Federated learning note number {i}."}
        add(name, [write_jsonl(tmp_path / f"extra{i}.jsonl", [doc])], home=dense_home)
        return Collection(name, dense_home).version

    async with build_held(env, dense_home, name, version, monkeypatch, at_batch=1) as (handle, release):
        newest = [await asyncio.to_thread(add_one, i) for i in range(3)][-1]
        assert (Collection(name, dense_home).paths.root / "versions" / version).is_dir(), "pinned: not pruned"
        release.set()
        result = await asyncio.wait_for(handle.result(), 120)
    assert result["version"] == version and result["embedded_batches"] == result["batches"]
    built = Collection(name, dense_home, version)
    assert built.version == version
    assert DenseIndex(built.paths, name).current_meta(built.corpus.fingerprint) is not None
    assert Collection(name, dense_home).version == newest != version
    assert held_pins(built.paths.root) == {}, "the pin is released when the build ends"
    add_one(3)
    assert not (built.paths.root / "versions" / version).exists(), "once released, the version is pruned as usual"


def test_a_pin_left_by_a_build_killed_for_good_goes_stale(tmp_path: Path) -> None:
    """A build whose workflow was terminated (or whose server's database is gone) never releases its
    pin: once unrefreshed for as long as a running job's row counts, it keeps nothing, and the next
    change removes it; a version pruned already cannot be pinned."""
    home = tmp_path / "home"
    ingest(write_jsonl(tmp_path / "docs.jsonl", search_docs()[:6]), "stale", home=home)
    root = Collection("stale", home).paths.root
    first = Collection("stale", home).version
    assert first is not None
    pin_version(root, "dense-stale-killed", first)

    def add_one(i: int) -> None:
        doc = {"_id": f"extra{i}", "title": f"Added paper {i}", "text": f"Graph learning note number {i}."}
        add("stale", [write_jsonl(tmp_path / f"extra{i}.jsonl", [doc])], home=home)

    for i in range(3):
        add_one(i)
    assert (root / "versions" / first).is_dir() and held_pins(root) == {"dense-stale-killed": first}
    pin = root / PINS_DIR / "dense-stale-killed.json"
    pin.write_text(json.dumps({"version": first, "refreshed": time.time() - RUNNING_HORIZON_SECONDS - 60}))
    assert held_pins(root) == {}
    add_one(3)
    assert not (root / "versions" / first).exists() and not pin.exists()
    with pytest.raises(QuarryError) as gone:
        pin_version(root, "dense-stale-again", first)
    assert gone.value.code == "version_gone" and held_pins(root) == {}
    assert not (root / PINS_DIR / "dense-stale-again.json").exists()
