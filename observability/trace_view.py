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
        raise QuarryError(
            "bad_trace_id", f"not a trace id: {trace_id!r}", "a trace id is 32 hex digits, as shown by the job's status"
        )
    path = Path(folder) / f"{trace_id}.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuarryError(
            "no_trace",
            f"no trace file {path}",
            "check the trace id and QUARRY_HOME; spans are written there unless OTLP export is on and "
            "QUARRY_TRACE_FILES=0 turned the files off (then the trace is in your OTLP backend)",
        ) from None
    spans, seen = [], set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            span = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuarryError(
                "bad_trace",
                f"{path}:{lineno}: not a JSON span ({exc.msg})",
                "the trace file was edited or corrupted; remove the bad line",
            ) from None
        if span.get("span_id") in seen:  # a retried final activity emits the agent span again
            continue
        seen.add(span.get("span_id"))
        spans.append(span)
    spans.sort(key=lambda s: (s.get("start_ns", 0), s.get("span_id", "")))
    return spans


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def _summary(span: dict[str, Any]) -> str:
    """Short `key=value` notes: quarry attributes of tool spans, token usage of chat spans."""
    attrs = span.get("attributes") or {}
    op = attrs.get("gen_ai.operation.name")
    parts: list[str] = []
    if op == "execute_tool":
        parts = [
            f"{k.removeprefix('quarry.')}={_short(v)}"
            for k, v in attrs.items()
            if k.startswith("quarry.") and k not in _SUMMARY_SKIP
        ]
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
    rows: list[dict[str, Any]] = [
        {"tool": tool, "count": len(ms), "total_ms": round(sum(ms), 3), "p50_ms": round(statistics.median(ms), 3)}
        for tool, ms in durations.items()
    ]
    rows.sort(key=lambda r: (-r["total_ms"], r["tool"]))
    return rows


def _tool(span: dict[str, Any]) -> str | None:
    attrs = span.get("attributes") or {}
    return str(attrs.get("gen_ai.tool.name")) if attrs.get("gen_ai.operation.name") == "execute_tool" else None


def _readable_query(attrs: dict[str, Any]) -> str:
    """`channel: query`, a feedback query's weighting repeats shown once (marked `weighted`)."""
    raw = str(attrs.get("quarry.query"))
    words = list(dict.fromkeys(raw.split()))
    text = " ".join(words) + (" (weighted)" if len(words) < len(raw.split()) else "")
    return f"{attrs.get('quarry.channel', 'lexical')}: {text}"


def span_rounds(spans: list[dict[str, Any]]) -> dict[str | None, int | None]:
    """Each span's round: its own `quarry.round`, else its nearest ancestor's (node spans carry it)."""
    by_id = {s.get("span_id"): s for s in spans}
    out: dict[str | None, int | None] = {}

    def find(span_id: str | None, depth: int = 0) -> int | None:
        if span_id in out:
            return out[span_id]
        span = by_id.get(span_id)
        if span is None or depth > 200:
            return None
        own = (span.get("attributes") or {}).get("quarry.round")
        value = (
            int(own)
            if isinstance(own, int)
            else (find(span.get("parent_span_id"), depth + 1) if span.get("parent_span_id") else None)
        )
        out[span_id] = value
        return value

    for span in spans:
        find(span.get("span_id"))
    return out


def select_spans(
    spans: list[dict[str, Any]], *, tool: str | None = None, round_no: int | None = None
) -> list[dict[str, Any]]:
    """The spans of one tool and/or one round (in start order)."""
    rounds = span_rounds(spans) if round_no is not None else {}
    return [
        s
        for s in spans
        if (tool is None or _tool(s) == tool) and (round_no is None or rounds.get(s.get("span_id")) == round_no)
    ]


def rounds_summary(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round (None: outside any round, e.g. submission and the agent span): the queries
    searched, each tool's count / total / p50 time, and the model calls with their tokens."""
    rounds = span_rounds(spans)
    groups: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        groups[rounds.get(span.get("span_id"))].append(span)
    out = []
    for key in sorted(groups, key=lambda r: (r is None, r if r is not None else 0)):
        members = groups[key]
        queries = [
            _readable_query(s["attributes"])
            for s in members
            if _tool(s) == "search" and (s.get("attributes") or {}).get("quarry.query")
        ]
        chats = [s for s in members if (s.get("attributes") or {}).get("gen_ai.operation.name") == "chat"]
        out.append(
            {
                "round": key,
                "spans": len(members),
                "queries": queries,
                "tools": tool_summary(members),
                "model_calls": len(chats),
                "input_tokens": sum(
                    int((s.get("attributes") or {}).get("gen_ai.usage.input_tokens", 0)) for s in chats
                ),
                "output_tokens": sum(
                    int((s.get("attributes") or {}).get("gen_ai.usage.output_tokens", 0)) for s in chats
                ),
            }
        )
    return out
