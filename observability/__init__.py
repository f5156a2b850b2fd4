"""OpenTelemetry for Quarry: provider setup, the JSONL exporter, GenAI tool/LLM spans, trace views.

Import from here; the modules behind it are small and private in spirit.
"""

from observability.jsonl_exporter import JsonlSpanExporter, span_to_record
from observability.setup import build_provider, setup_tracing, shutdown_tracing, temporal_plugin, traces_dir
from observability.tool_spans import TRACER_NAME, current_trace_id, get_tracer, llm_span, record_usage, tool_span
from observability.trace_view import load_spans, rounds_summary, select_spans, span_tree_lines, tool_summary

__all__ = [
    "TRACER_NAME",
    "JsonlSpanExporter",
    "build_provider",
    "current_trace_id",
    "get_tracer",
    "llm_span",
    "load_spans",
    "record_usage",
    "rounds_summary",
    "select_spans",
    "setup_tracing",
    "shutdown_tracing",
    "span_to_record",
    "span_tree_lines",
    "temporal_plugin",
    "tool_span",
    "tool_summary",
    "traces_dir",
]
