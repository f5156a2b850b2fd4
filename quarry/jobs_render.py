"""Rich rendering of job results and progress for the terminal."""
from __future__ import annotations

from typing import Any

from rich.table import Table

from quarry.console import out


def render_result(result: dict[str, Any], *, web_ui: str = "", trace_file: str = "") -> None:
    status = result.get("status", "?")
    colour = {"completed": "green", "budget_exhausted": "yellow", "stopped": "yellow", "failed": "red"}.get(status, "white")
    out.print(f"[bold]{result.get('job_id')}[/] · [{colour}]{status}[/] · {result.get('collection')} · "
              f"rounds {result.get('rounds', result.get('stats', {}).get('rounds', '?'))} · stop: {result.get('stop_reason') or '-'}")
    out.print(f"intent: {result.get('intent')}", highlight=False)
    if result.get("error"):
        out.print(f"[red]error[/]: {result['error']}", highlight=False)
    if result.get("answer"):
        out.print(f"\n[bold]answer[/]: {result['answer']}\n", highlight=False)
    table = Table(show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("docid")
    table.add_column("score", justify="right")
    table.add_column("title / evidence")
    for rank, item in enumerate(result.get("ranked", []), start=1):
        best = sorted(item.get("evidence", []), key=lambda e: -e["score"])[:2]
        ev = "\n".join(f"[dim]{e['item']} ({e['score']:.1f}/5, lines {e['lines'][0]}–{e['lines'][1]}):[/] "
                       f"{e['chunk'][:120]}…" for e in best)
        table.add_row(str(rank), item["docid"], f"{item['score']:.3f}",
                      f"[bold]{item['title']}[/] ({item.get('year') or '—'})\n{item.get('reason', '')}\n{ev}")
    out.print(table)
    traj = result.get("trajectory", {})
    if traj:
        out.print(f"trajectory: surfaced {traj.get('surfaced', 0)} · previewed {len(traj.get('previewed', []))} · "
                  f"opened {len(traj.get('opened', []))} · cited {len(traj.get('cited', []))}")
    if web_ui:
        out.print(f"Web UI: {web_ui}", highlight=False)
    if trace_file:
        out.print(f"trace:  {trace_file}", highlight=False)


def render_progress(p: dict[str, Any]) -> None:
    b = p.get("budget", {})
    out.print(f"{p.get('job_id')} · {p.get('status')} · round {p.get('round')} · node {p.get('node')} · "
              f"{p.get('candidates')} candidates · {p.get('tool_calls')} tool calls · "
              f"budget {b.get('used')}s used / {b.get('left')}s left" + (" · submit-now" if b.get("submit_now") else ""))
    for i, t in enumerate(p.get("top", []), start=1):
        out.print(f"  {i}. {t['docid']}  {t['score']:.3f}  {t.get('title', '')}", highlight=False)
