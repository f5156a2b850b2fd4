"""The Quarry worker: the SearchJob workflow, the graph's node activities and our own activities."""
from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Worker

from graphs.react_graph import make_react_graph
from graphs.search_graph import make_search_graph
from graphs.state import REACT_GRAPH, SEARCH_GRAPH
from nodes.models import ModelFactory
from nodes.runtime import NodeRuntime, configure_runtime
from workflows.activities import answer_from_state, checkpoint_job, finish_job
from workflows.search_job import SearchJob
from workflows.shared import task_queue


# What a stopped worker gives its running activities to finish before Temporal hands them on.
SHUTDOWN_GRACE_S = 10.0


def graphs() -> dict:
    """Every graph a job can run on, by the name `graphs.state.graph_for` gives its policy."""
    return {SEARCH_GRAPH: make_search_graph(), REACT_GRAPH: make_react_graph()}


def build_worker(client: Client, *, home: Path | None = None, queue: str | None = None,
                 max_concurrent_activities: int = 8, models: ModelFactory | None = None) -> Worker:
    """A worker for one QUARRY_HOME; `models` builds chat models (default: LangChain's
    `init_chat_model` through `nodes.models`)."""
    configure_runtime(NodeRuntime(home, models=models))
    return Worker(
        client,
        task_queue=queue or task_queue(home),
        workflows=[SearchJob],
        activities=[checkpoint_job, answer_from_state, finish_job],
        activity_executor=ThreadPoolExecutor(max_workers=max_concurrent_activities),
        max_concurrent_activities=max_concurrent_activities,
        plugins=[LangGraphPlugin(graphs=graphs())],
        graceful_shutdown_timeout=timedelta(seconds=SHUTDOWN_GRACE_S),
    )


async def run_until_signalled(worker: Worker) -> bool:
    """Run `worker` until SIGTERM or SIGINT (`quarry down`, a service manager, Ctrl+C), then shut
    it down: it stops polling, finishes the workflow task in hand (so the job's spans end and
    are written) and gives running activities SHUTDOWN_GRACE_S before Temporal retries them
    elsewhere. False when activities were still running after that (threads cannot be stopped:
    the caller flushes what it has and exits the process); a second signal is not waited on."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    running = asyncio.ensure_future(worker.run())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(sig)  # a second signal ends the process the default way
    if running.done():  # the worker stopped on its own (an error): say so as it is
        stopping.cancel()
        running.result()
        return True
    try:
        await asyncio.wait_for(worker.shutdown(), SHUTDOWN_GRACE_S + 5)
    except asyncio.TimeoutError:
        return False
    await asyncio.gather(running, return_exceptions=True)
    return True
