"""The Quarry worker: the SearchJob workflow, the graph's node activities and our own activities."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Worker

from graphs.search_graph import GRAPH_NAME, make_search_graph
from nodes.runtime import NodeRuntime, configure_runtime
from workflows.activities import answer_from_state, checkpoint_job, finish_job
from workflows.search_job import SearchJob
from workflows.shared import task_queue


def build_worker(client: Client, *, home: Path | None = None, queue: str | None = None,
                 max_concurrent_activities: int = 8) -> Worker:
    configure_runtime(NodeRuntime(home))
    return Worker(
        client,
        task_queue=queue or task_queue(),
        workflows=[SearchJob],
        activities=[checkpoint_job, answer_from_state, finish_job],
        activity_executor=ThreadPoolExecutor(max_workers=max_concurrent_activities),
        max_concurrent_activities=max_concurrent_activities,
        plugins=[LangGraphPlugin(graphs={GRAPH_NAME: make_search_graph()})],
    )
