"""Session fixtures: a private QUARRY_HOME and one shared, real (Lucene-indexed) collection.

Building an index spawns a JVM (~1-2 s), so the shared collection is built once per session;
tests that change collections build their own under their own names.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drill_kit import free_port
from tests.fakes import long_doc, search_docs, topic_docs, write_jsonl

# The tests' `quarry` commands run in-process: a resident searcher (quarry.resident) would outlive
# each test's home by its idle timeout. tests/test_resident_search.py turns it on for its own.
os.environ.setdefault("QUARRY_RESIDENT", "0")

SHARED = "shared"
SHARED_TOPIC_DOCS = 70  # > 50 so that the page-limit cap of read_search_results is observable
LITERATURE = "lit"  # the 40-paper corpus of tests.fakes.search_docs, for search jobs


@pytest.fixture(scope="session")
def quarry_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh QUARRY_HOME for the whole session (also exported, so nothing writes ./.quarry)."""
    home = tmp_path_factory.mktemp("quarry-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        yield home


@pytest.fixture(autouse=True)
def _quarry_home_restored() -> Iterator[None]:
    """QUARRY_HOME as it was before each test: the command line run in-process (CliRunner) with
    `--home` sets it for the process, as it must for the stores it calls, and a later test that
    reads the home from the environment would otherwise find that test's home."""
    before = os.environ.get("QUARRY_HOME")
    yield
    if before is None:
        os.environ.pop("QUARRY_HOME", None)
    else:
        os.environ["QUARRY_HOME"] = before


@pytest.fixture(scope="session")
def shared_collection(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory):
    """`shared`: 70 topic documents that all mention "retrieval", plus one 302-line document."""
    from stores.collection import Collection, ingest

    long_rec, _ = long_doc()
    src = write_jsonl(
        tmp_path_factory.mktemp("shared-src") / "shared.jsonl", [*topic_docs(SHARED_TOPIC_DOCS), long_rec]
    )
    ingest(src, SHARED, home=quarry_home)
    return Collection(SHARED, home=quarry_home)


@pytest.fixture(scope="session")
def literature(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory):
    """`lit`: the 40 short papers of `search_docs()` (four topics, years, surveys, a benchmark).

    One warm-up search starts the JVM here, so jobs with small budgets do not pay for it.
    """
    from stores.collection import Collection, ingest

    src = write_jsonl(tmp_path_factory.mktemp("lit-src") / "lit.jsonl", search_docs())
    ingest(src, LITERATURE, home=quarry_home)
    col = Collection(LITERATURE, home=quarry_home)
    assert col.lucene.search("graph neural networks", k=5)
    return col


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """For modules that drive real processes (tests.drill_kit): a home of its own per module with
    `lit`, the 40 papers of `search_docs()`. A module that needs another home defines its own."""
    from stores.collection import ingest

    home = tmp_path_factory.mktemp("drill-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("drill-src") / "lit.jsonl", search_docs()), LITERATURE, home=home)
    return home


@pytest.fixture(scope="module")
def server(home: Path):
    """A Temporal dev server on the module home's database file (tests.drill_kit.Server)."""
    from tests.drill_kit import Server

    srv = Server(home).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[Any]:
    """For modules that run workers in-process: an in-memory Temporal dev server
    (`WorkflowEnvironment.start_local` on the `temporal` binary Quarry ships), one per module.
    Tests reach it as `env.client` and run their own worker on a task queue of their own."""
    from temporalio.testing import WorkflowEnvironment

    from workflows.processes.dev_server import temporal_binary

    environment = await WorkflowEnvironment.start_local(dev_server_existing_path=str(temporal_binary()))
    yield environment
    await environment.shutdown()


@pytest.fixture(scope="module")
def drill_baseline(home: Path, server) -> dict[str, Any]:
    """For the drills: the uninterrupted run of tests.drill_kit.INTENT by a worker process (the
    heuristic policy is deterministic), to compare an interrupted job's result with."""
    import asyncio
    import signal
    import uuid

    from tests.drill_kit import Worker, result_of, start

    queue = f"drill-{uuid.uuid4().hex[:8]}"
    worker = Worker(home, server.address, queue)
    try:
        return result_of(asyncio.run(start(server.address, queue)))
    finally:
        worker.kill(signal.SIGTERM)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch):
    """Every span the nodes of an in-process worker record, kept in memory."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import observability.tool_spans as spans_mod

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(spans_mod, "get_tracer", lambda provider_=None: provider.get_tracer("test"))
    return exporter


@pytest.fixture
def chroma_server_proc(tmp_path: Path) -> Iterator[int]:
    """A real `chroma run` server (the CLI ships with chromadb, a project dependency). Failing to
    start is a failure, not a skip: server mode is a feature users rely on."""
    cli = Path(sys.executable).parent / "chroma"
    assert cli.is_file(), f"the chroma CLI is missing at {cli}; reinstall with the README's setup command"
    port = free_port()
    log = tmp_path / "chroma-run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(cli), "run", "--path", str(tmp_path / "server-db"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # Generous: the server's start-up imports are slow on a loaded 2-core CI machine. This
        # waits for readiness; it asserts nothing about speed.
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-2000:]
                    pytest.fail(f"chroma run did not come up (exit code {proc.poll()}); its output:\n{tail}")
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
