"""Read a JSONL trace back and summarise it: a span tree and per-tool timings.

Plain data in, plain data out (lists of strings and dicts), so the command line decides how to
render it and tests need no terminal.
"""
from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from stores.errors import QuarryError

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SUMMARY_SKIP = {"quarry.job_id"}
_MAX_VALUE = 40


def load_spans(folder: Path, trace_id: str) -> list[dict[str, Any]]:
    """All spans of one trace from `folder/<trace_id>.jsonl`, ordered by start time."""
    trace_id = trace_id.strip().lower()
    if not _TRACE_ID.match(trace_id):
        raise QuarryError("bad_trace_id", f"not a trace id: {trace_id!r}",
                          "a trace id is 32 hex digits, as shown by the job's status")
    path = Path(folder) / f"{trace_id}.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuarryError(
            "no_trace", f"no trace file {path}",
            "check the trace id and QUARRY_HOME; with OTEL_EXPORTER_OTLP_ENDPOINT set, spans go to "
            "the collector instead (set QUARRY_TRACE_FILES=1 to keep files too)",
        ) from None
    spans = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            spans.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise QuarryError("bad_trace", f"{path}:{lineno}: not a JSON span ({exc.msg})",
                              "the trace file was edited or corrupted; remove the bad line") from None
    spans.sort(key=lambda s: (s.get("start_ns", 0), s.get("span_id", "")))
    return spans


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= _MAX_VALUE else text[:_MAX_VALUE - 1] + "…"


def _summary(span: dict[str, Any]) -> str:
    """Short `key=value` notes: quarry attributes of tool spans, token usage of chat spans."""
    attrs = span.get("attributes") or {}
    op = attrs.get("gen_ai.operation.name")
    parts: list[str] = []
    if op == "execute_tool":
        parts = [f"{k.removeprefix('quarry.')}={_short(v)}" for k, v in attrs.items()
                 if k.startswith("quarry.") and k not in _SUMMARY_SKIP]
    elif op == "chat":
        for key, label in (("gen_ai.usage.input_tokens", "in"), ("gen_ai.usage.output_tokens", "out")):
            if key in attrs:
                parts.append(f"{label}={attrs[key]}")
    if span.get("status") == "ERROR":
        parts.append(f"ERROR {_short(span.get('status_message') or '')}".rstrip())
    return " ".join(parts)


def span_tree_lines(spans: list[dict[str, Any]]) -> list[str]:
    """One line per span, indented two spaces per level; children in start order.

    Spans whose parent is absent from the file (e.g. the client span of another process,
    exported elsewhere) are shown as roots.
    """
    ordered = sorted(spans, key=lambda s: (s.get("start_ns", 0), s.get("span_id", "")))
    ids = {s.get("span_id") for s in ordered}
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    roots = []
    for span in ordered:
        parent = span.get("parent_span_id")
        if parent and parent in ids and parent != span.get("span_id"):
            children[parent].append(span)
        else:
            roots.append(span)

    lines: list[str] = []
    seen: set[int] = set()

    def walk(span: dict[str, Any], depth: int) -> None:
        if id(span) in seen:
            return
        seen.add(id(span))
        line = f"{'  ' * depth}{span.get('name', '?')}  {float(span.get('duration_ms', 0.0)):.1f} ms"
        note = _summary(span)
        lines.append(f"{line}  {note}" if note else line)
        for child in children.get(span.get("span_id", ""), []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    for span in ordered:  # a parent cycle (corrupt file) would hide spans: show them as roots
        walk(span, 0)
    return lines


def tool_summary(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tool: `{"tool", "count", "total_ms", "p50_ms"}`, the most expensive tool first."""
    durations: dict[str, list[float]] = defaultdict(list)
    for span in spans:
        attrs = span.get("attributes") or {}
        if attrs.get("gen_ai.operation.name") == "execute_tool":
            tool = str(attrs.get("gen_ai.tool.name", "?"))
            durations[tool].append(float(span.get("duration_ms", 0.0)))
    rows = [
        {"tool": tool, "count": len(ms), "total_ms": round(sum(ms), 3),
         "p50_ms": round(statistics.median(ms), 3)}
        for tool, ms in durations.items()
    ]
    rows.sort(key=lambda r: (-r["total_ms"], r["tool"]))
    return rows
