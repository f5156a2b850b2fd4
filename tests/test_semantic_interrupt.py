"""A semantic step without a dense index is interruptible, shows progress and says what it is.

MiniLM is replaced by `GatedEmbedder`, a stand-in that counts chunk batches and can hold one
batch until the step it runs in has been told to stop (the real mechanism: the node wrapper's
step control, set by a job stop, a cancellation or the deadline). So "the stop was honoured within
one batch" is asserted by counting batches, never by timing: after the stop arrives during batch
k, at most k batches are embedded in all, and every embedded batch stays cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import stores.chunk_vectors as chunk_vectors_mod
from nodes.job.control import Control, reset_control, use_control
from nodes.job.heartbeat import deadline_from, stop_reason, with_heartbeats
from nodes.job.step_control import StepControl, current_step, using_step
from nodes.rounds.semantic_filter import FilteredSemantic
from stores.chunk_vectors import ChunkVectors
from stores.collection import Collection, ingest
from stores.embedder import DIMENSION
from tests.fakes import poll_until, search_docs, write_jsonl

QUERY = "graph neural networks molecules"
WORDS = "graph neural networks for molecules"
N_DOCS = 24
BATCH = 2


def unit_vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:4], "little")
    vec = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return vec / np.linalg.norm(vec)


class GatedEmbedder:
    """Embeds chunk batches with hashed unit vectors, counting them; `on_batch(n)` runs after the
    n-th batch (1-based), and batch `hold_at` waits (bounded) until its step is told to stop."""

    def __init__(
        self,
        *,
        on_batch: Callable[[int], None] = lambda n: None,
        hold_at: int | None = None,
        hold_s: float = 60.0,
        chunk_texts: set[str] | None = None,
    ) -> None:
        self.chunk_texts = chunk_texts  # what a chunk batch holds (else: anything but QUERY)
        self.batches: list[int] = []
        self.on_batch, self.hold_at, self.hold_s = on_batch, hold_at, hold_s
        self.reached = threading.Event()
        self.steps: list[StepControl] = []
        self._lock = threading.Lock()

    def __call__(self, texts, batch_size: int = 32) -> np.ndarray:
        texts = list(texts)
        query = texts == [QUERY] if self.chunk_texts is None else not set(texts) <= self.chunk_texts
        if query:  # a query vector, not a chunk batch
            return np.stack([unit_vector(t) for t in texts])
        with self._lock:
            self.batches.append(len(texts))
            n = len(self.batches)
        step = current_step()
        self.steps.append(step)
        if n == self.hold_at:
            self.reached.set()
            step.wait(self.hold_s)  # returns once the step is told to stop (or the test fails on counts)
        out = np.stack([unit_vector(t) for t in texts])
        self.on_batch(n)
        return out


def docs(n: int = N_DOCS) -> list[dict[str, Any]]:
    return [
        {"_id": f"d{i:02d}", "title": f"Paper {i}", "text": f"{WORDS} study number {i} with its own data set {i}."}
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    home = tmp_path_factory.mktemp("interrupt-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("interrupt-src") / "docs.jsonl", docs()), "interrupt", home=home)
    return Collection("interrupt", home)


def searcher(col: Collection, path: Path, embed: GatedEmbedder) -> tuple[FilteredSemantic, ChunkVectors]:
    vectors = ChunkVectors(path, col.corpus, embed=embed)
    return FilteredSemantic(col.lucene, col.corpus, vectors, candidates=100, chunks_per_doc=1, batch=BATCH), vectors


def all_keys(col: Collection) -> list[tuple[str, int]]:
    return [(d["_id"], 0) for d in docs()]


# -- (a) a stop during the semantic step ---------------------------------------------------------


def test_a_job_stop_ends_the_embedding_within_one_batch_and_keeps_what_was_embedded(
    col: Collection, tmp_path: Path
) -> None:
    """In-process: the local control's stop reaches the node's thread through `with_heartbeats`."""
    control = Control()
    k = 3

    def stop_after(n: int) -> None:
        if n == k - 1:
            control.stop_requested = True  # `job stop` arrives while batch k is being embedded

    embed = GatedEmbedder(on_batch=stop_after, hold_at=k)
    semantic, vectors = searcher(col, tmp_path / "v.sqlite", embed)
    token = use_control(control)
    try:
        docids, _scores = asyncio.run(with_heartbeats(lambda state: semantic.ranking(QUERY), {}))
    finally:
        reset_control(token)
    assert len(embed.batches) <= k, f"the stop came during batch {k}; batches run: {len(embed.batches)}"
    assert embed.steps[-1].why() == "stopped"
    assert semantic.last is not None and semantic.last.stopped == "stopped"
    assert 0 < len(docids) == semantic.last.scored < N_DOCS, "a partial ranking of the re-scored hits"
    assert "partial: embedding stopped after" in semantic.note and "asked to stop" in semantic.note
    kept = vectors.cached(all_keys(col))
    assert kept == sum(embed.batches), "every embedded batch is cached"
    again = GatedEmbedder()
    rest, _ = searcher(col, tmp_path / "v.sqlite", again)
    assert len(rest.ranking(QUERY)[0]) == N_DOCS and sum(again.batches) == N_DOCS - kept, "only the rest is embedded"


def test_a_cancelled_node_activity_stops_its_thread_between_batches(col: Collection, tmp_path: Path) -> None:
    """Temporal cancels an async activity by cancelling its task: the wrapper passes that on."""
    k = 2

    async def run() -> None:
        holder: dict[str, asyncio.Task] = {}
        embed = GatedEmbedder(hold_at=k)
        semantic, vectors = searcher(col, tmp_path / "c.sqlite", embed)
        holder["task"] = asyncio.ensure_future(with_heartbeats(lambda state: semantic.ranking(QUERY), {}))
        assert await asyncio.to_thread(embed.reached.wait, 60)
        holder["task"].cancel()  # what Temporal does when `job cancel` or the hard budget stop comes
        with pytest.raises(asyncio.CancelledError):
            await holder["task"]
        assert len(embed.batches) <= k and embed.steps[-1].why() == "cancelled"
        assert vectors.cached(all_keys(col)) == sum(embed.batches) < N_DOCS

    asyncio.run(run())


# -- (b) the job's deadline ----------------------------------------------------------------------


def test_the_deadline_stops_the_embedding_between_batches(col: Collection, tmp_path: Path) -> None:
    now = [1000.0]
    k = 4

    def tick(n: int) -> None:
        if n == k:
            now[0] = 2000.0  # the job's budget runs out while batch k is embedded

    embed = GatedEmbedder(on_batch=tick)
    semantic, vectors = searcher(col, tmp_path / "d.sqlite", embed)
    with using_step(StepControl(deadline=1500.0, clock=lambda: now[0])):
        docids, _ = semantic.ranking(QUERY)
    assert len(embed.batches) == k, "no batch starts after the deadline"
    assert semantic.last is not None and semantic.last.stopped == "deadline"
    assert len(docids) == k * BATCH and "time budget ran out" in semantic.note
    assert vectors.cached(all_keys(col)) == k * BATCH


def test_the_deadline_and_stop_come_from_the_jobs_progress_query() -> None:
    progress = {
        "status": "running",
        "stop_requested": False,
        "budget": {"seconds": 40.0, "used": 10.0, "left": 30.0, "submit_now": False},
    }
    assert deadline_from(progress, scheduled_at=5000.0) == 5030.0
    assert deadline_from({"budget": {"deadline": 123.0, "seconds": 40.0, "used": 1.0}}, 5000.0) == 123.0
    assert deadline_from({"budget": {}}, 5000.0) is None
    assert stop_reason(progress) == ""
    assert stop_reason(progress | {"stop_requested": True}) == "stopped"
    assert stop_reason(progress | {"status": "budget_exhausted"}) == "budget_exhausted"
    assert stop_reason(progress | {"budget": {"submit_now": True}}) == "budget_steer"
    assert stop_reason(progress | {"steering_pending": 1}) == "steered"  # a steer ends the step too


# -- (a) through a real worker and Temporal ------------------------------------------------------


async def test_job_stop_during_a_gated_semantic_step_ends_the_job_stopped_with_results(
    env, quarry_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nodes.job.config import JobConfig
    from stores.jobs import JobStore
    from workflows.client import new_job_id, submit
    from workflows.search_job import SearchJob
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    name = f"interrupt{uuid.uuid4().hex[:6]}"
    ingest(write_jsonl(tmp_path / "lit.jsonl", search_docs()), name, home=quarry_home)
    k = 2
    corpus = Collection(name, quarry_home).corpus
    texts = {c.text for cs in corpus.chunks_many(d["_id"] for d in search_docs()).values() for c in cs}
    embed = GatedEmbedder(hold_at=k, chunk_texts=texts)
    monkeypatch.setattr(chunk_vectors_mod, "embed_texts", embed)  # the worker's MiniLM, in this process
    queue = f"quarry-test-{uuid.uuid4().hex}"
    jobs = JobStore(quarry_home / "jobs.sqlite")
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await submit(
            env.client,
            JobInput(
                job_id=new_job_id(),
                collection=name,
                intent="graph neural networks for molecular property prediction",
                config=JobConfig(max_rounds=2, semantic_batch=1, max_seconds=300),
            ),
            queue=queue,
        )
        assert await asyncio.to_thread(embed.reached.wait, 120), "the semantic step never started"
        step = await poll_until(lambda: asyncio.to_thread(jobs.step, handle.id), lambda s: s is not None)
        assert step["node"] == "retrieval" and step["stage"] == "embedding" and step["text"].startswith("embedding ")
        await handle.signal(SearchJob.stop)
        result = await asyncio.wait_for(handle.result(), 120)
    assert len(embed.batches) <= k, f"stopped during batch {k}, yet {len(embed.batches)} batches ran"
    assert embed.steps[-1].why() == "stopped", "the stop reached the node's thread through the progress query"
    assert result["status"] == "stopped" and result["ranked"], "the job answered from what it had"
    state = jobs.get(handle.id)["state"]
    partial = [s for s in state["searches"] if s.get("stopped")]
    assert partial and "partial" in partial[0]["label"] and "asked to stop" in partial[0]["partial"]
    assert jobs.step(handle.id) is None, "the step's progress is cleared when the node ends"


# -- (c) the command line ------------------------------------------------------------------------


def test_the_cli_says_what_the_semantic_page_is_and_shows_embedding_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from quarry.cli import app

    home = tmp_path / "home"
    runner = CliRunner()
    src = write_jsonl(tmp_path / "docs.jsonl", docs(6))
    assert runner.invoke(app, ["--home", str(home), "ingest", str(src), "--name", "pages"]).exit_code == 0
    embed = GatedEmbedder()
    monkeypatch.setattr(chunk_vectors_mod, "embed_texts", embed)
    result = runner.invoke(app, ["--home", str(home), "search", "pages", QUERY, "--channel", "semantic"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "semantic re-scoring of the top 100 lexical hits (no dense index; build one with quarry index pages --dense)"
    )
    assert "embedding 0/6 chunks" in result.stderr and "embedding 6/6 chunks" in result.stderr
    assert result.stdout.count("docid=d") == 5, "the first page of the re-scored hits"


async def test_the_budget_ends_a_gated_semantic_step_and_its_deadline_is_the_jobs(
    env, quarry_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch held until its step is told to stop: the budget (its 0.7·T steer) tells it, and the
    deadline the step derived from the job's progress query is the job's start plus its budget."""
    from nodes.job.config import JobConfig
    from workflows.client import new_job_id, submit
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    name = f"interrupt{uuid.uuid4().hex[:6]}"
    ingest(write_jsonl(tmp_path / "lit.jsonl", search_docs()), name, home=quarry_home)
    corpus = Collection(name, quarry_home).corpus
    texts = {c.text for cs in corpus.chunks_many(d["_id"] for d in search_docs()).values() for c in cs}
    k, budget = 2, 12.0
    embed = GatedEmbedder(hold_at=k, chunk_texts=texts)
    monkeypatch.setattr(chunk_vectors_mod, "embed_texts", embed)
    queue = f"quarry-test-{uuid.uuid4().hex}"
    async with build_worker(env.client, home=quarry_home, queue=queue):
        handle = await submit(
            env.client,
            JobInput(
                job_id=new_job_id(),
                collection=name,
                intent="graph neural networks for molecular property prediction",
                config=JobConfig(max_rounds=2, semantic_batch=1, max_seconds=budget),
            ),
            queue=queue,
        )
        result = await asyncio.wait_for(handle.result(), 120)
        started = (await handle.describe()).start_time.timestamp()
    step = embed.steps[k - 1]
    assert len(embed.batches) <= k, f"the budget came during batch {k}, yet {len(embed.batches)} batches ran"
    assert step.why() in ("budget_steer", "deadline", "budget_exhausted")
    assert step.deadline is not None and abs(step.deadline - (started + budget)) < 1.0, (step.deadline, started)
    assert result["ranked"] and result["stop_reason"] in ("budget_steer", "budget_exhausted")


def test_job_progress_shows_the_running_step(capsys: pytest.CaptureFixture[str]) -> None:
    """`job progress` adds the node's long step (what the activity wrote to the job store) under
    the status line, so a minute of embedding reads as work, not as a hang."""
    from quarry.cli.render import render_progress

    render_progress(
        {
            "job_id": "j",
            "status": "running",
            "round": 1,
            "node": "retrieval",
            "candidates": 12,
            "tool_calls": 3,
            "budget": {"used": 10, "left": 50},
            "top": [],
            "step_detail": "embedding 320/1,200 chunks",
        }
    )
    assert "now: embedding 320/1,200 chunks" in capsys.readouterr().out


# -- long chunks: a stop waits for one short model call, not for eight long chunks ----------------

LONG = (
    "Message passing neural networks learn molecular properties from atoms and bonds, and this paragraph "
    "goes on about the data set, the splits and the baselines so that the chunk is long. "
)


def long_docs(n: int = 12) -> list[dict[str, Any]]:
    """Documents whose first chunk is a full ~600-character passage (real documents' chunks)."""
    return [{"_id": f"L{i:02d}", "title": f"Long paper {i}", "text": f"{WORDS} {i}. " + LONG * 6} for i in range(n)]


@pytest.fixture(scope="module")
def long_col(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    home = tmp_path_factory.mktemp("long-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("long-src") / "docs.jsonl", long_docs()), "long", home=home)
    return Collection("long", home)


class CountingEmbedder:
    """Embeds chunk texts one by one (as the model's work goes), counting the texts and
    characters embedded once `stop_after_texts` texts were done and the step was told to stop —
    the stop arriving in the middle of a model call, as a `job stop` does."""

    def __init__(
        self, step: StepControl, stop_after_texts: int = 1, advance: Callable[[int], None] | None = None
    ) -> None:
        self.step, self.stop_after = step, stop_after_texts
        self.advance = advance or (lambda chars: None)
        self.calls: list[int] = []
        self.texts = self.after_texts = self.after_chars = 0

    def __call__(self, texts, batch_size: int = 32) -> np.ndarray:
        texts = list(texts)
        if texts == [QUERY]:
            return np.stack([unit_vector(QUERY)])
        self.calls.append(len(texts))
        rows = []
        for t in texts:
            if self.step.why():
                self.after_texts += 1
                self.after_chars += len(t)
            rows.append(unit_vector(t))
            self.advance(len(t))
            self.texts += 1
            if self.texts == self.stop_after:
                self.step.stop("stopped")  # `job stop` reaches the step while this model call runs
        return np.stack(rows)


def test_a_stop_during_long_chunks_waits_for_little_text_not_for_a_batch_of_eight(
    long_col: Collection, tmp_path: Path
) -> None:
    """The job's own batch of 8 (JobConfig.semantic_batch) with ~600-character chunks: a stop that
    comes while the first chunk is embedded lets at most two more chunks (one short model call)
    through, where a batch of eight let seven through."""
    from nodes.job.config import JobConfig

    step = StepControl()
    embed = CountingEmbedder(step)
    vectors = ChunkVectors(tmp_path / "long.sqlite", long_col.corpus, embed=embed)
    semantic = FilteredSemantic(
        long_col.lucene, long_col.corpus, vectors, candidates=100, chunks_per_doc=1, batch=JobConfig().semantic_batch
    )
    chunks = long_col.corpus.chunks_many(d["_id"] for d in long_docs())
    assert min(len(cs[0].text) for cs in chunks.values()) >= 500, "the chunks are long"
    with using_step(step):
        semantic.ranking(QUERY)
    assert semantic.last is not None and semantic.last.stopped == "stopped"
    assert embed.after_texts <= 2, f"{embed.after_texts} chunks were embedded after the stop"
    assert embed.after_chars <= chunk_vectors_mod.BATCH_CHARS
    assert len(embed.calls) == 1, "no model call starts after the stop"
    assert vectors.cached([(d, 0) for d in chunks]) == embed.texts, "what was embedded is kept"


def test_a_slow_pace_shrinks_the_batch_to_one_long_chunk(long_col: Collection, tmp_path: Path) -> None:
    """At 300 characters a second (a loaded machine; a fake clock) a batch of 2,000 characters
    would hold a stop for seconds: after the first timed batch each batch is one long chunk."""
    now = [0.0]
    step = StepControl()
    embed = CountingEmbedder(
        step, stop_after_texts=10_000, advance=lambda chars: now.__setitem__(0, now[0] + chars / 300)
    )
    vectors = ChunkVectors(tmp_path / "slow.sqlite", long_col.corpus, embed=embed, clock=lambda: now[0])
    got = vectors.embed([(d["_id"], 0) for d in long_docs()], batch=8)
    assert got.done == got.missing == len(long_docs())
    first, *rest = embed.calls
    assert 1 < first <= 3 and rest and set(rest) == {1}, embed.calls


def test_a_stop_that_comes_while_another_batch_holds_the_lock_is_honoured_before_embedding(
    long_col: Collection, tmp_path: Path
) -> None:
    """Two searches share the process's model: a thread waiting for the other's batch asks again
    once it may embed, so a stop that came meanwhile embeds nothing more."""
    step = StepControl()
    embed = CountingEmbedder(step, stop_after_texts=10_000)
    vectors = ChunkVectors(tmp_path / "lock.sqlite", long_col.corpus, embed=embed)
    vectors.cached([("L00", 0)])  # open the file (and check its model) before the lock is taken
    asked = threading.Event()

    def should_stop() -> str:
        asked.set()
        return step.why()

    result: list[Any] = []
    with vectors._lock:  # another search's batch is being embedded
        worker = threading.Thread(
            target=lambda: result.append(
                vectors.embed([(d["_id"], 0) for d in long_docs()], batch=8, should_stop=should_stop)
            )
        )
        worker.start()
        assert asked.wait(60), "the embedding loop never asked whether to stop"
        step.stop("stopped")  # `job stop` arrives while the thread waits for the model
    worker.join(60)
    assert result and result[0].stopped == "stopped" and result[0].done == 0
    assert embed.calls == [], "nothing was embedded after the stop"


def test_chunks_are_embedded_longest_first_within_a_window_in_the_callers_order(tmp_path: Path) -> None:
    """A batch pads its texts to its longest: within each window of EMBED_WINDOW chunks the
    longest go first, while the windows keep the caller's order (its best documents first, what a
    stop leaves unembedded is the end)."""
    lengths = [3, 9, 1, 7, 2, 8]
    keys = [(f"d{i}", 0) for i in range(len(lengths))]
    texts = {k: "x" * n for k, n in zip(keys, lengths, strict=True)}
    order = chunk_vectors_mod.longest_first_within(keys, texts, 3)
    assert [len(texts[k]) for k in order] == [9, 3, 1, 8, 7, 2]
    assert chunk_vectors_mod.longest_first_within(keys, texts, 0) == keys, "a window of one keeps the order"
    assert sorted(order) == sorted(keys)


def test_embed_hands_the_model_a_window_longest_first(tmp_path: Path) -> None:
    sizes = [5, 40, 12, 25]
    docs = [{"_id": f"m{i}", "title": "", "text": " ".join(["word"] * n)} for i, n in enumerate(sizes)]
    ingest(write_jsonl(tmp_path / "mixed.jsonl", docs), "mixed", home=tmp_path / "home")
    col = Collection("mixed", tmp_path / "home")
    seen: list[list[int]] = []

    def embed(texts, batch_size: int = 32) -> np.ndarray:
        seen.append([len(t) for t in texts])
        return np.stack([unit_vector(t) for t in texts])

    got = ChunkVectors(tmp_path / "mixed.sqlite", col.corpus, embed=embed).embed([(d["_id"], 0) for d in docs])
    assert got.done == len(docs) and len(seen) == 1
    assert seen[0] == sorted(seen[0], reverse=True) and seen[0] != [len(d["text"]) for d in docs]
