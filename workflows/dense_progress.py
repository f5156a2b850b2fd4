"""How a durable dense build's progress reads (the Web UI's current details, `quarry job watch` and
`job progress`): pure, with no import the command line would pay for."""

from __future__ import annotations

from typing import Any


def duration_text(seconds: float) -> str:
    """'45 s', '4 min 05 s', '2 h 10 min': a time left as a person reads it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def progress_line(p: dict[str, Any]) -> str:
    """One line of a build's progress (the Web UI, `quarry job watch`)."""
    if "batches" not in p:
        return f"dense index of {p.get('collection')}: {p.get('stage', 'starting')}"
    line = (
        f"dense index of {p['collection']}: {p['stage']} · {p['batches_done']:,}/{p['batches']:,} batches · "
        f"{p['chunks_done']:,}/{p['chunks']:,} chunks"
    )
    if p.get("chunks_per_s") and p.get("stage") == "embedding":
        line += f" · {p['chunks_per_s']:.1f} chunks/s · {duration_text(p['eta_s'])} left"
    return line
