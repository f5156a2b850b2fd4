"""Client side: connect (with tracing), submit jobs, and talk to running jobs."""
from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client, WorkflowHandle

from workflows.job_input import check_job_input
from workflows.search_job import SearchJob
from workflows.shared import JobInput, task_queue, temporal_address, temporal_namespace


async def connect(address: str | None = None, namespace: str | None = None, *, tracing: bool = True) -> Client:
    plugins = []
    if tracing:
        from observability import temporal_plugin
        plugins.append(temporal_plugin())
    return await Client.connect(address or temporal_address(), namespace=namespace or temporal_namespace(),
                                plugins=plugins)


def new_job_id() -> str:
    return "job-" + uuid.uuid4().hex[:12]


async def submit(client: Client, inp: JobInput, queue: str | None = None) -> WorkflowHandle:
    """Start a job; an unusable input (empty or oversized intent, bad budget…) is refused here."""
    check_job_input(inp)
    return await client.start_workflow(SearchJob.run, inp, id=inp.job_id, task_queue=queue or task_queue())


async def result(client: Client, job_id: str) -> dict[str, Any]:
    return await client.get_workflow_handle(job_id).result()


def web_ui_url(job_id: str, ui_port: int = 8233, namespace: str | None = None) -> str:
    return f"http://127.0.0.1:{ui_port}/namespaces/{namespace or temporal_namespace()}/workflows/{job_id}"
