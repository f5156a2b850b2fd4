"""The Quarry worker: the SearchJob workflow, the graph's node activities and our own activities."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
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
    )
