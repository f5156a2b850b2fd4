"""Spans leave the process one activity at a time, so a killed worker never leaves half a tree.

A span is exported when it ends; its parent later. Temporal's `RunActivity:` span is the parent of
everything an activity does (its node spans, their tool and store spans). When a worker is killed
mid-activity, the spans that had already ended were exported while the activity's span, still
open, died with the process: a backend then shows them under a parent it never received — a trace
that is no longer one tree (tests/test_drills_recovery.py). One heuristic round is one activity
(graphs.search_graph.round_), so a kill in verification used to orphan that round's retrieval.

`WholeActivities` wraps a span processor and holds every span started under an open local
`RunActivity:` span until that span ends, then passes the activity's span and all it held on
together. A killed attempt leaves none of its spans (the retry's are all there, whole); spans
outside any activity (the command line, the service, workflow-side spans) pass at once. The
OpenTelemetry SDK has no such processor (its Batch processor groups by time, not by tree).
"""

from __future__ import annotations

import threading

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

ACTIVITY_PREFIX = "RunActivity:"
# An activity that opens more spans than this before it ends passes the rest on at once (its tree
# may then be partial if it dies): a bound on the memory one activity's spans may hold.
MAX_HELD = 10_000


class WholeActivities(SpanProcessor):
    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._held: dict[int, list[ReadableSpan]] = {}  # open activity span id -> ended spans under it
        self._owner: dict[int, int] = {}  # open span id -> the open activity span it runs under

    @property
    def inner(self) -> SpanProcessor:
        return self._inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span_id = span.get_span_context().span_id
        parent = span.parent.span_id if span.parent is not None else None
        with self._lock:
            if span.name.startswith(ACTIVITY_PREFIX):
                self._held[span_id] = []
            elif parent is not None:
                owner = parent if parent in self._held else self._owner.get(parent)
                if owner is not None:
                    self._owner[span_id] = owner
        self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        span_id = context.span_id if context is not None else None
        with self._lock:
            owner = self._owner.pop(span_id, None) if span_id is not None else None
            held = self._held.get(owner) if owner is not None else None
            if held is not None and len(held) < MAX_HELD:
                held.append(span)
                return
            released = self._held.pop(span_id, []) if span_id is not None else []
        self._inner.on_end(span)
        for child in released:
            self._inner.on_end(child)

    def shutdown(self) -> None:
        # Spans still held belong to activities that never ended: dropped, like a killed worker's.
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)
