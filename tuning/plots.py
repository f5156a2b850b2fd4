"""PNG plots for tuning and evaluation reports (matplotlib's Agg canvas, no pyplot, no display).

Each function draws one figure from plain numbers and returns the path it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=110, bbox_inches="tight")
    return path


def heatmap(
    values: Sequence[Sequence[float]],
    k1s: Sequence[float],
    bs: Sequence[float],
    path: Path,
    *,
    title: str,
    metric: str = "nDCG@20",
    best: tuple[int, int] | None = None,
    baseline: tuple[int, int] | None = None,
) -> Path:
    """A k1 (rows) × b (columns) grid of a metric, each cell annotated; `best` and `baseline`
    (row, column) are outlined."""
    fig = Figure(figsize=(1.0 + 0.75 * len(bs), 1.2 + 0.42 * len(k1s)))
    ax = fig.add_subplot()
    flat = [v for row in values for v in row]
    low, high = min(flat), max(flat)
    image = ax.imshow(values, cmap="viridis", aspect="auto", vmin=low, vmax=high if high > low else low + 1e-9)
    fig.colorbar(image, ax=ax, label=metric)
    ax.set_xticks(range(len(bs)), [f"{b:g}" for b in bs])
    ax.set_yticks(range(len(k1s)), [f"{k:g}" for k in k1s])
    ax.set_xlabel("b")
    ax.set_ylabel("k1")
    ax.set_title(title)
    middle = (low + high) / 2
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=7, color="black" if v > middle else "white")
    for cell, colour, style in ((baseline, "white", "--"), (best, "red", "-")):
        if cell is not None:
            ax.add_patch(
                Rectangle(
                    (cell[1] - 0.5, cell[0] - 0.5), 1, 1, fill=False, edgecolor=colour, linewidth=2, linestyle=style
                )
            )
    return _save(fig, path)


def recall_curves(curves: Mapping[str, Mapping[int, float]], path: Path, *, title: str) -> Path:
    """Recall versus retrieval depth (log x axis), one line per system."""
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    for name, curve in curves.items():
        depths = sorted(curve)
        ax.plot(depths, [curve[d] for d in depths], marker="o", label=name)
    ax.set_xscale("log")
    depths = sorted({d for curve in curves.values() for d in curve})
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.minorticks_off()
    ax.set_ylim(0, 1)
    ax.set_xlabel("retrieval depth")
    ax.set_ylabel("recall")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def per_query_differences(diffs: Mapping[str, float], path: Path, *, title: str, ylabel: str) -> Path:
    """One bar per query, sorted from largest loss to largest gain (green above zero)."""
    items = sorted(diffs.items(), key=lambda p: (p[1], p[0]))
    # Wide enough to read each labelled bar for a few dozen queries; capped so that hundreds of
    # queries still give a figure a report page can show (the bars then merge into a profile).
    fig = Figure(figsize=(min(14.0, max(6.4, 0.12 * len(items))), 4.2))
    ax = fig.add_subplot()
    heights = [v for _, v in items]
    ax.bar(
        range(len(items)), heights, color=["tab:green" if v > 0 else "tab:red" if v < 0 else "grey" for v in heights]
    )
    ax.axhline(0, color="black", linewidth=0.8)
    if len(items) <= 60:
        ax.set_xticks(range(len(items)), [q for q, _ in items], rotation=90, fontsize=6)
    else:
        ax.set_xticks([])
    ax.set_xlabel("query (sorted by difference)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, path)


def reliability_diagram(bins: Sequence[tuple[float, float, int]], path: Path, *, title: str) -> Path:
    """A reliability diagram: accuracy against mean stated confidence per bin (marker size: the bin's
    answers), beside the diagonal of perfect calibration."""
    fig = Figure(figsize=(4.8, 4.6))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8, label="calibrated")
    if bins:
        most = max(n for _, _, n in bins)
        ax.scatter(
            [c for c, _, _ in bins], [a for _, a, _ in bins], s=[30 + 170 * n / most for _, _, n in bins], zorder=3
        )
        ax.plot([c for c, _, _ in bins], [a for _, a, _ in bins], linewidth=1, label="answers")
        for conf, acc, n in bins:
            ax.annotate(str(n), (conf, acc), textcoords="offset points", xytext=(6, -10), fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("share exactly right")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return _save(fig, path)
