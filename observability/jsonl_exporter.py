"""A span exporter that writes one JSON line per span into one file per trace.

Why files: with no collector configured, a job's trace must still be readable afterwards
(`quarry trace <id>`), and workers may be killed at any moment. So every span is appended to
`<folder>/<trace_id>.jsonl` as soon as it is exported — no buffering in memory — and each line
goes out in a single `write(2)` on a file opened with `O_APPEND`, which keeps lines whole when
several worker processes append to the same trace file at once.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger(__name__)


def _json_value(value: Any) -> Any:
    """OTel attribute values are primitives or tuples of them; JSON wants lists and finite floats."""
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def _json_attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): _json_value(v) for k, v in (attributes or {}).items()}


def span_to_record(span: ReadableSpan) -> dict[str, Any]:
    """The JSON record of one finished span (the line format `trace_view` reads back)."""
    ctx = span.context
    start = span.start_time or 0
    end = span.end_time or start
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent is not None else None,
        "start_ns": start,
        "end_ns": end,
        "duration_ms": round((end - start) / 1e6, 3),
        "status": span.status.status_code.name,
        "status_message": span.status.description,
        "kind": span.kind.name,
        "attributes": _json_attrs(span.attributes),
        "events": [
            {"name": e.name, "time_ns": e.timestamp, "attributes": _json_attrs(e.attributes)} for e in span.events
        ],
        "resource": {"service.name": _json_value(span.resource.attributes.get("service.name"))},
    }


def _append_line(path: Path, data: bytes) -> None:
    """Append `data` with one write call so concurrent appenders never interleave inside it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # intents, documents: owner only
    try:
        written = os.write(fd, data)
    finally:
        os.close(fd)
    if written != len(data):
        raise OSError(f"short write to {path}: {written} of {len(data)} bytes (disk full?)")


class JsonlSpanExporter(SpanExporter):
    """Write each span as one JSON line to `folder / f"{trace_id_hex}.jsonl"`.

    Files are opened and closed per export call (nothing stays open, nothing is buffered), so a
    killed process loses at most the span it was exporting. Use it behind a
    `SimpleSpanProcessor` to get each span on disk the moment it ends.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._shut = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append the batch, grouped by trace; FAILURE (logged) if the disk refuses."""
        if self._shut:
            return SpanExportResult.FAILURE
        by_trace: dict[str, list[bytes]] = defaultdict(list)
        for span in spans:
            record = span_to_record(span)
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            by_trace[record["trace_id"]].append(line.encode("utf-8"))
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            for trace_id, lines in by_trace.items():
                path = self.folder / f"{trace_id}.jsonl"
                for encoded in lines:
                    _append_line(path, encoded)
        except OSError:
            logger.exception("could not write spans under %s", self.folder)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Refuse later exports (the SDK contract); there is nothing to close."""
        self._shut = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Always flushed: every export call has already reached the file."""
        return True
