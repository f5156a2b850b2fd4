"""A job's spans, read from its local trace file: what `quarry trace` and the servers' trace views show."""

from __future__ import annotations

from typing import Any

from quarry.app.records import store
from stores.errors import QuarryError
from stores.home import quarry_home


def job_spans(job_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A job's row and the spans of its local trace file (`quarry trace`, the HTTP API's trace)."""
    from observability import load_spans, traces_dir  # lazy: observability costs ~40 ms of start-up
    from observability.setup import trace_files_on

    row = store().get(job_id)
    if not row.get("trace_id"):
        raise QuarryError("no_trace", f"job {job_id} has no recorded trace id", "it was submitted without tracing")
    if not trace_files_on() and not (traces_dir(quarry_home()) / f"{row['trace_id']}.jsonl").is_file():
        raise QuarryError(
            "no_trace_file",
            f"job {job_id}'s spans went to your OTLP backend only (local trace files are off: QUARRY_TRACE_FILES=0)",
            f"look up trace {row['trace_id']} there, or unset QUARRY_TRACE_FILES for later jobs",
        )
    return row, load_spans(traces_dir(quarry_home()), row["trace_id"])
