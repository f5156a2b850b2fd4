"""`quarry trace`: a job's span tree and per-tool summary, per-round grouping and filters, read
from its local trace file."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from quarry.app.records import trace_file
from quarry.app.terminal import out, print_json, safe, terminal_safe
from quarry.app.trace import job_spans
from quarry.cli.console import fail
from stores.errors import QuarryError

commands = typer.Typer()


@commands.command()
def trace(
    job_id: str,
    json_out: Annotated[bool, typer.Option("--json", help="Spans, tool summary and rounds as JSON")] = False,
    tool: Annotated[str | None, typer.Option(help="Only this tool's spans, e.g. search")] = None,
    round_no: Annotated[int | None, typer.Option("--round", min=0, help="Only this round's spans")] = None,
    grouped: Annotated[bool, typer.Option(help="Per round: queries, tools (count/total/p50), model tokens")] = False,
) -> None:
    """Print a job's span tree and a per-tool summary (count, total and p50 time)."""
    # lazy: observability costs ~40 ms of start-up
    from observability import rounds_summary, select_spans, span_tree_lines, tool_summary

    try:
        row, spans = job_spans(job_id)
    except QuarryError as err:
        fail(err)
    shown = select_spans(spans, tool=tool, round_no=round_no) if tool or round_no is not None else spans
    if tool and not shown:
        names = _tool_names(spans)
        fail(
            QuarryError(
                "no_spans",
                f"no {tool!r} spans in job {job_id}'s trace",
                f"tools in this trace: {', '.join(names) or 'none'}",
            )
        )
    if json_out:
        print_json(
            {
                "job_id": job_id,
                "trace_id": row["trace_id"],
                "file": trace_file(row["trace_id"]),
                "spans": shown,
                "tools": tool_summary(shown),
                "rounds": rounds_summary(spans),
            }
        )
        return
    out.print(
        f"trace {safe(row['trace_id'])} · {len(shown)} of {len(spans)} spans · {safe(trace_file(row['trace_id']))}",
        highlight=False,
    )
    if grouped:
        _print_rounds(rounds_summary(shown))
        return
    for line in span_tree_lines(shown):
        out.print(terminal_safe(line), highlight=False, markup=False)
    out.print(_tools_table(tool_summary(shown)))


def _tool_names(spans: list[dict]) -> list[str]:
    """The tools a trace's spans called, for the hint when a --tool has none."""
    return sorted(
        {
            str((s.get("attributes") or {}).get("gen_ai.tool.name"))
            for s in spans
            if (s.get("attributes") or {}).get("gen_ai.operation.name") == "execute_tool"
        }
    )


def _print_rounds(groups: list[dict]) -> None:
    """--grouped: per round, its spans, model tokens, queries and tools."""
    for group in groups:
        label = (
            "outside rounds (submission, workflow, the agent span)"
            if group["round"] is None
            else "round 0 (planning)"
            if group["round"] == 0
            else f"round {group['round']}"
        )
        out.print(
            terminal_safe(
                f"{label}: {group['spans']} spans, {group['model_calls']} model calls "
                f"({group['input_tokens']} in / {group['output_tokens']} out tokens)"
            ),
            highlight=False,
            markup=False,
        )
        for query in group["queries"]:
            out.print(terminal_safe(f"  query: {query}"), highlight=False, markup=False)
        for t in group["tools"]:
            out.print(
                terminal_safe(
                    f"  {t['tool']}: {t['count']} calls, {t['total_ms']:.1f} ms total, p50 {t['p50_ms']:.1f} ms"
                ),
                highlight=False,
                markup=False,
            )


def _tools_table(summary: list[dict]) -> Table:
    table = Table(title="tool calls")
    for col in ("tool", "count", "total_ms", "p50_ms"):
        table.add_column(col, justify="left" if col == "tool" else "right")
    for row_ in summary:
        table.add_row(safe(row_["tool"]), str(row_["count"]), f"{row_['total_ms']:.1f}", f"{row_['p50_ms']:.1f}")
    return table
