"""`quarry job watch` and the live view of `quarry run --wait`: a job's rounds as they happen.

The view is rebuilt from the job's `progress` query every second, so it can be (re)attached at
any time — after the client that started the job was killed too — and shows only what changed:
a new round or node, the round's searches, candidates found, the top five entering and leaving,
budget and model usage. It ends with the job's result.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from quarry.app.terminal import terminal_safe
from quarry.cli.render import usage_line

EVERY_S = 1.0


class ProgressView:
    """Turns successive progress snapshots into the lines worth printing."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}
        self.seen_searches: set[tuple] = set()

    def lines(self, p: dict[str, Any]) -> list[str]:
        out: list[str] = []
        before = self.last
        where = (p.get("round"), p.get("node"), p.get("steps"))
        if where != (before.get("round"), before.get("node"), before.get("steps")):
            b = p.get("budget", {})
            step = f" · step {p['steps']}" if p.get("steps") else ""
            out.append(
                f"round {p.get('round')}{step} · {p.get('node')} · {p.get('candidates', 0)} candidates · "
                f"{p.get('tool_calls', 0)} tool calls · {b.get('used', 0)} s of {b.get('seconds', 0):g} s"
                + (" · submit-now" if b.get("submit_now") else "")
            )
        for s in p.get("searches", []):
            key = (s.get("round"), s.get("channel"), s.get("query"))
            if key not in self.seen_searches:
                self.seen_searches.add(key)
                out.append(f"  search [{s.get('channel')}] {s.get('query') or '(citations / metadata)'}")
        top = [t["docid"] for t in p.get("top", [])]
        old = [t["docid"] for t in before.get("top", [])]
        if top != old and top:
            entered, left = [d for d in top if d not in old], [d for d in old if d not in top]
            change = (" (+" + ", +".join(entered) + ")" if entered else "") + (
                " (-" + ", -".join(left) + ")" if left else ""
            )
            out.append(f"  top 5: {', '.join(top)}{change}")
        if (u := usage_line(p.get("usage"))) and p.get("usage") != before.get("usage"):
            out.append(f"  usage: {u}")
        for fb in p.get("fallbacks", [])[len(before.get("fallbacks", [])) :]:
            out.append(f"  fallback: {fb['step']} — {fb['reason'][:120]}")
        self.last = p
        # Printed with markup off; queries, docids and model reasons are untrusted, so every line
        # has the characters a terminal would obey made visible.
        return [terminal_safe(line) for line in out]


async def watch(handle: Any, emit: Callable[[str], None], every_s: float = EVERY_S) -> dict[str, Any]:
    """Print the job's progress until it ends; return its result."""
    import asyncio  # lazy: asyncio (with ssl) is ~30 ms of start-up

    view = ProgressView()
    result_task = asyncio.ensure_future(handle.result())
    misses = 0
    try:
        while not result_task.done():
            try:
                progress = await handle.query("progress", rpc_timeout=timedelta(seconds=10))
                misses = 0
            except Exception:  # no worker answered this tick, or the job just ended: try again next tick
                progress, misses = None, misses + 1
                if misses == 5:  # say why, in the words `job progress` uses (warming up, stopped, none)
                    from workflows.rpc_errors import no_worker

                    why = no_worker("no worker is answering for this job; it resumes when one runs", None)
                    emit(f"  ({why.message}: {why.hint})")
            if progress:
                for line in view.lines(progress):
                    emit(line)
            await asyncio.wait({result_task}, timeout=every_s)
        return result_task.result()
    finally:
        if not result_task.done():
            result_task.cancel()
