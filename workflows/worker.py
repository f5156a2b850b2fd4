"""The Quarry worker: the SearchJob workflow, the graph's node activities and our own activities."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from graphs.state import graph_builders
from nodes.job.runtime import NodeRuntime, configure_runtime, runtime
from nodes.llm.models import ModelFactory
from stores import settings
from stores.redact import redact
from workflows.activities import answer_from_state, checkpoint_job, finish_job
from workflows.dense_activities import ACTIVITIES as DENSE_ACTIVITIES
from workflows.dense_activities import EMBED_ACTIVITIES, embed_queue
from workflows.dense_index import DenseIndexBuild
from workflows.search_job import SearchJob
from workflows.shared import task_queue

# What a stopped worker gives its running activities to finish before Temporal hands them on.
SHUTDOWN_GRACE_S = 10.0
# How workflow code runs: in Temporal's sandbox (it re-imports the workflow module per run and
# proxies restricted modules, catching non-determinism at run time), in the sandbox with every
# module passed through (restrictions still checked, nothing but the workflow module re-imported),
# or without it (determinism then rests on the replay tests, tests/test_workflow.py). Measured in
# bench/bench_jobs.py --runners: the three cost a CACM job the same within the spread.
RUNNERS = ("sandboxed", "passthrough", "unsandboxed")
DEFAULT_RUNNER = "sandboxed"
# Embedding batches of a durable dense build one worker process runs at once (`QUARRY_EMBED_CONCURRENCY`,
# default 1 in the settings catalogue, which says why).
EMBED_CONCURRENCY_DEFAULT = settings.embed_concurrency({})


def workflow_runner(kind: str = DEFAULT_RUNNER) -> WorkflowRunner:
    """The workflow runner named `kind` (one of RUNNERS)."""
    if kind not in RUNNERS:
        raise ValueError(f"unknown workflow runner {kind!r}; one of {', '.join(RUNNERS)}")
    if kind == "unsandboxed":
        return UnsandboxedWorkflowRunner()
    if kind == "passthrough":
        return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_all_modules())
    return SandboxedWorkflowRunner()


def graphs() -> dict:
    """Every graph a job can run on, by the name `graphs.state.graph_for` gives its policy (the
    policy registry lists them, so a policy with a graph of its own needs no edit here)."""
    return {name: build() for name, build in graph_builders().items()}


def build_worker(
    client: Client,
    *,
    home: Path | None = None,
    queue: str | None = None,
    max_concurrent_activities: int = 8,
    models: ModelFactory | None = None,
    runner: str = DEFAULT_RUNNER,
) -> Worker:
    """A worker for one QUARRY_HOME; `models` builds chat models (default: LangChain's
    `init_chat_model` through `nodes.llm.models`)."""
    configure_runtime(NodeRuntime(home, models=models))
    return Worker(
        client,
        task_queue=queue or task_queue(home),
        workflows=[SearchJob, DenseIndexBuild],
        activities=[checkpoint_job, answer_from_state, finish_job, *DENSE_ACTIVITIES],
        activity_executor=ThreadPoolExecutor(max_workers=max_concurrent_activities),
        max_concurrent_activities=max_concurrent_activities,
        plugins=[LangGraphPlugin(graphs=graphs())],
        workflow_runner=workflow_runner(runner),
        graceful_shutdown_timeout=timedelta(seconds=SHUTDOWN_GRACE_S),
    )


def embed_concurrency() -> int:
    return settings.embed_concurrency()


def build_embed_worker(client: Client, *, home: Path | None = None, queue: str | None = None) -> Worker:
    """The worker of a home's embed queue: durable dense builds' batches (`workflows.dense_index`),
    `embed_concurrency()` at a time, beside the job worker in the same process (`serve`)."""
    concurrency = embed_concurrency()
    return Worker(
        client,
        task_queue=embed_queue(queue or task_queue(home)),
        activities=EMBED_ACTIVITIES,
        activity_executor=ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="quarry-embed"),
        max_concurrent_activities=concurrency,
        graceful_shutdown_timeout=timedelta(seconds=SHUTDOWN_GRACE_S),
    )


async def _signalled_first(task: asyncio.Future) -> bool:
    """Wait for `task` or SIGTERM/SIGINT, whichever comes first; True when a signal came.
    The handlers are removed again, so a second signal ends the process the default way."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        stopping.cancel()
    return stop.is_set()


async def run_until_signalled(worker: Worker, *more: Worker) -> bool:
    """Run `worker` until SIGTERM or SIGINT (`quarry down`, a service manager, Ctrl+C), then shut
    it down: it stops polling, finishes the workflow task in hand (so the job's spans end and
    are written) and gives running activities SHUTDOWN_GRACE_S before Temporal retries them
    elsewhere. False when activities were still running after that (threads cannot be stopped:
    the caller flushes what it has and exits the process); a second signal is not waited on."""
    workers = [worker, *more]  # the job worker and the embed worker of one process stop together
    running = asyncio.ensure_future(asyncio.gather(*(w.run() for w in workers)))
    await _signalled_first(running)
    if running.done():  # the worker stopped on its own (an error): say so as it is
        running.result()
        return True
    try:
        await asyncio.wait_for(asyncio.gather(*(w.shutdown() for w in workers)), SHUTDOWN_GRACE_S + 5)
    except TimeoutError:
        return False
    await asyncio.gather(running, return_exceptions=True)
    return True


async def serve(
    client: Client, *, home: Path | None = None, queue: str | None = None, say: Callable[[str], None] = print
) -> bool:
    """What `quarry worker` does: build the worker, warm it up (`NodeRuntime.warm`) before it
    polls — a job's budget starts when a worker picks it up, so start-up is not spent from the
    first job's budget — then run until signalled (see `run_until_signalled`). A signal during
    the warm-up ends it at once and cleanly (no job had started); a warm-up that fails is said
    and skipped (the jobs then open what they need, and report what they cannot)."""
    from stores.home import ensure_home
    from workflows.processes.warmup import clear_warming, mark_warming

    own_home = ensure_home(home)  # 0700 (the job store and traces it writes hold intents and documents)
    worker = build_worker(client, home=home, queue=queue)
    embedder = build_embed_worker(client, home=home, queue=queue)
    # Its own thread, not the loop's default executor, which asyncio.run would wait for on a stop.
    warm_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quarry-warm")
    began = time.monotonic()
    mark_warming(own_home)  # `job progress` meanwhile says "warming up", not "no worker"
    try:
        warming = asyncio.get_running_loop().run_in_executor(warm_thread, runtime().warm)
        signalled = await _signalled_first(warming)
    finally:
        clear_warming(own_home)
    warm_thread.shutdown(wait=False)
    if signalled:
        say("stopped while warming up; no job had started")
        return True
    try:
        opened = warming.result()
    except Exception as exc:  # a warm-up is an optimisation, never a reason not to serve
        say(redact(f"warm-up skipped ({type(exc).__name__}: {exc}); jobs open what they need themselves"))
    else:
        if opened:
            say(f"warmed up in {time.monotonic() - began:.1f} s: {', '.join(opened)}")
    say(f"worker polling task queues {queue or task_queue(home)} (jobs) and {embed_queue(queue or task_queue(home))} …")
    return await run_until_signalled(worker, embedder)
