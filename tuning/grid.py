"""Per-collection BM25 k1/b: a grid search on judged queries, else a length-based default.

`grid_search` scores every (k1, b) of a grid by nDCG@20 (and MAP) on one split's judged
queries, through one `LuceneIndex` with per-search parameters (one cached searcher per
setting), keeps the best with the index (`reindex` only rewrites the metadata when the
documents are unchanged) and writes `bm25-grid-<split>.json` / `.png` and `tuned.json` into the
collection's runs folder. `bm25-tuned` in evaluation reads `tuned.json`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nodes.job.config import JobConfig
from nodes.ranking.bm25_defaults import default_bm25_params
from stores.atomic import write_atomic
from stores.collection import Collection, reindex
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.lucene import LuceneIndex
from tuning.judged import judged_queries
from tuning.metrics import mean_metrics
from tuning.plots import heatmap

DEFAULT_K1_GRID = (0.6, 0.9, 1.2, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 25.0)
DEFAULT_B_GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)
OBJECTIVE, SECONDARY = "ndcg@20", "map"
TUNED_FILE = "tuned.json"
LENGTH_SAMPLE = 20_000  # documents read to estimate the mean length for the default rule
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class GridCell:
    k1: float
    b: float
    metrics: dict[str, float]

    @property
    def key(self) -> tuple[float, float, float, float]:
        """Sort key, best first: higher nDCG@20, then higher MAP, then smaller k1 (then b)."""
        return (-round(self.metrics[OBJECTIVE], 10), -round(self.metrics[SECONDARY], 10), self.k1, self.b)

    def brief(self) -> dict[str, float]:
        return {
            "k1": self.k1,
            "b": self.b,
            OBJECTIVE: round(self.metrics[OBJECTIVE], 4),
            SECONDARY: round(self.metrics[SECONDARY], 4),
        }


@dataclass(frozen=True)
class TuneResult:
    """A grid search: every cell, the chosen one, and the stored setting it replaced."""

    collection: str
    split: str
    queries: int
    k1_grid: tuple[float, ...]
    b_grid: tuple[float, ...]
    cells: tuple[GridCell, ...]
    best: GridCell
    baseline: GridCell
    heatmap: Path
    grid_file: Path
    seconds: float

    def summary(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "source": "grid",
            "split": self.split,
            "queries": self.queries,
            "best": self.best.brief(),
            "baseline": self.baseline.brief(),
            "gain": round(self.best.metrics[OBJECTIVE] - self.baseline.metrics[OBJECTIVE], 4),
            "heatmap": str(self.heatmap),
            "grid_file": str(self.grid_file),
            "seconds": round(self.seconds, 1),
        }


@dataclass(frozen=True)
class DefaultParams:
    """No judgements: k1/b from the mean document length (`default_bm25_params`)."""

    collection: str
    k1: float
    b: float
    avg_doc_tokens: float
    baseline: tuple[float, float]

    def summary(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "source": "default",
            "best": {"k1": self.k1, "b": self.b},
            "baseline": {"k1": self.baseline[0], "b": self.baseline[1]},
            "avg_doc_tokens": round(self.avg_doc_tokens, 1),
        }


def pick_best(cells: list[GridCell] | tuple[GridCell, ...]) -> GridCell:
    """Best by nDCG@20; ties by MAP, then the smaller k1 (then the smaller b)."""
    if not cells:
        raise QuarryError("empty_grid", "the k1/b grid is empty", "give at least one k1 and one b value")
    return min(cells, key=lambda c: c.key)


def _home(col: Collection) -> Path:
    return col.paths.root.parent.parent


def grid_runs(
    index: LuceneIndex,
    texts: Mapping[str, str],
    settings: Sequence[tuple[float, float]],
    depth: int,
    threads: int = 2,
    progress: ProgressFn | None = None,
) -> dict[tuple[float, float], dict[str, dict[str, float]]]:
    """The run (query id → docid → score) of every (k1, b) setting over the same queries: the one
    search loop behind the judged grid search and self-tuning on pseudo-queries."""
    runs: dict[tuple[float, float], dict[str, dict[str, float]]] = {}
    qids = list(texts)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for n, (k1, b) in enumerate(settings, start=1):

            def rank(qid: str, k1: float = k1, b: float = b) -> dict[str, float]:
                return {h.docid: h.score for h in index.search(texts[qid], depth, k1=k1, b=b)}

            runs[(k1, b)] = dict(zip(qids, pool.map(rank, qids), strict=True))
            if progress:
                progress("settings", n, len(settings))
    return runs


def grid_search(
    col: Collection,
    split: str | None = None,
    k1_grid: tuple[float, ...] | list[float] = DEFAULT_K1_GRID,
    b_grid: tuple[float, ...] | list[float] = DEFAULT_B_GRID,
    threads: int = 2,
    *,
    depth: int = JobConfig.run_depth,
    limit_queries: int | None = None,
    store: bool = True,
    progress: ProgressFn | None = None,
) -> TuneResult:
    """Score every (k1, b) on the split's judged queries; store and plot the best (see module doc)."""
    k1_grid, b_grid = _checked_grid(k1_grid, b_grid)
    split, qids, texts, qrels = judged_queries(col, split, limit_queries)
    index: LuceneIndex = col.lucene
    stored = (index.meta.k1, index.meta.b)
    settings = [(k1, b) for k1 in k1_grid for b in b_grid]
    if stored not in settings:
        settings.append(stored)
    started = time.perf_counter()
    scored = {
        s: GridCell(*s, mean_metrics({q: qrels[q] for q in qids}, run))
        for s, run in grid_runs(index, {q: texts[q] for q in qids}, settings, depth, threads, progress).items()
    }
    cells = tuple(scored[(k1, b)] for k1 in k1_grid for b in b_grid)
    best, baseline = pick_best(cells), scored[stored]
    runs = col.paths.runs_dir
    png = heatmap(
        [[scored[(k1, b)].metrics[OBJECTIVE] for b in b_grid] for k1 in k1_grid],
        k1_grid,
        b_grid,
        runs / f"bm25-grid-{split}.png",
        metric="nDCG@20",
        title=f"{col.name} · BM25 nDCG@20 · {split} ({len(qids)} queries)",
        best=(k1_grid.index(best.k1), b_grid.index(best.b)),
        baseline=(k1_grid.index(stored[0]), b_grid.index(stored[1]))
        if stored[0] in k1_grid and stored[1] in b_grid
        else None,
    )
    result = TuneResult(
        col.name,
        split,
        len(qids),
        k1_grid,
        b_grid,
        cells,
        best,
        baseline,
        png,
        runs / f"bm25-grid-{split}.json",
        time.perf_counter() - started,
    )
    _write_grid_file(result, depth)
    if store:
        _store_best(col, result)
    return result


def _checked_grid(
    k1_grid: tuple[float, ...] | list[float], b_grid: tuple[float, ...] | list[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The grid's values sorted without repeats, once they are in range."""
    k1s = tuple(sorted({float(k) for k in k1_grid}))
    bs = tuple(sorted({float(b) for b in b_grid}))
    if not k1s or not bs:
        raise QuarryError("empty_grid", "the k1/b grid is empty", "give at least one k1 and one b value")
    if any(k < 0 for k in k1s) or any(not 0 <= b <= 1 for b in bs):
        raise QuarryError("bad_grid", "k1 must be ≥ 0 and b within [0, 1]", "fix the grid values")
    return k1s, bs


def _write_grid_file(result: TuneResult, depth: int) -> None:
    """Every cell's metrics beside the heatmap (runs/bm25-grid-SPLIT.json)."""
    write_atomic(
        result.grid_file,
        json.dumps(
            result.summary()
            | {
                "k1_grid": list(result.k1_grid),
                "b_grid": list(result.b_grid),
                "depth": depth,
                "cells": [
                    {"k1": c.k1, "b": c.b, **{m: round(v, 6) for m, v in c.metrics.items()}} for c in result.cells
                ],
            },
            indent=1,
        ),
    )


def _store_best(col: Collection, result: TuneResult) -> None:
    """Re-index with the best setting and record where it came from."""
    best = result.best
    reindex(col.name, home=_home(col), k1=best.k1, b=best.b)
    _write_tuned(
        col,
        {
            "source": "grid",
            "k1": best.k1,
            "b": best.b,
            "split": result.split,
            "queries": result.queries,
            "objective": OBJECTIVE,
            OBJECTIVE: best.metrics[OBJECTIVE],
            SECONDARY: best.metrics[SECONDARY],
            "baseline": result.baseline.brief(),
            "grid_file": str(result.grid_file),
            "heatmap": str(result.heatmap),
        },
    )


def average_doc_tokens(col: Collection, sample: int = LENGTH_SAMPLE) -> float:
    """Mean words per document as BM25 sees it (title + text + keywords), over the first
    `sample` documents."""
    total = count = 0
    for rec in col.corpus.iter_records():
        total += len(_WORD.findall(rec.index_contents()))
        count += 1
        if count >= sample:
            break
    return total / count if count else 0.0


def apply_default_params(col: Collection, *, store: bool = True) -> DefaultParams:
    """`default_bm25_params(mean length)` (for collections without qrels), stored with the index
    only when `store`."""
    meta = col.lucene.meta
    avg = average_doc_tokens(col)
    k1, b = default_bm25_params(avg)
    if store:
        reindex(col.name, home=_home(col), k1=k1, b=b)
        _write_tuned(
            col,
            {
                "source": "default",
                "k1": k1,
                "b": b,
                "avg_doc_tokens": round(avg, 2),
                "baseline": {"k1": meta.k1, "b": meta.b},
            },
        )
    return DefaultParams(col.name, k1, b, avg, (meta.k1, meta.b))


def tune(
    col: Collection,
    split: str | None = None,
    *,
    threads: int = 2,
    apply: bool = False,
    progress: ProgressFn | None = None,
) -> TuneResult | DefaultParams:
    """Grid search when the collection has judgements, else the length-based default; the stored
    parameters change only with `apply` (they are fitted to these queries, so an evaluation on
    the same queries would flatter every system that uses them)."""
    if not col.corpus.splits():
        return apply_default_params(col, store=apply)
    return grid_search(col, split, threads=threads, store=apply, progress=progress)


def _write_tuned(col: Collection, record: dict[str, Any]) -> None:
    path = col.paths.runs_dir / TUNED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    record = record | {
        "fingerprint": col.corpus.fingerprint,
        "tuned_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_atomic(path, json.dumps(record, indent=2))


def load_tuned(col: Collection) -> dict[str, Any]:
    """The record `quarry tune` wrote, or an error saying the collection was never tuned."""
    path = col.paths.runs_dir / TUNED_FILE
    if not path.is_file():
        raise QuarryError(
            "not_tuned", f"the BM25 parameters of {col.name!r} were never tuned", f"run: quarry tune {col.name}"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise QuarryError(
            "bad_tuning",
            f"the tuning record of {col.name!r} ({path}) is unreadable ({exc})",
            f"tune again: quarry tune {col.name}",
        ) from exc
    if record.get("fingerprint") != col.corpus.fingerprint:
        raise QuarryError(
            "stale_tuning",
            f"the BM25 parameters of {col.name!r} were tuned on an older version of its documents",
            f"run again: quarry tune {col.name}",
        )
    return record


def tuned_params(col: Collection) -> tuple[float, float]:
    """(k1, b) chosen by `quarry tune` for this collection."""
    record = load_tuned(col)
    return float(record["k1"]), float(record["b"])


__all__ = [
    "DEFAULT_B_GRID",
    "DEFAULT_K1_GRID",
    "DefaultParams",
    "GridCell",
    "TuneResult",
    "apply_default_params",
    "average_doc_tokens",
    "grid_runs",
    "grid_search",
    "load_tuned",
    "pick_best",
    "tune",
    "tuned_params",
]
