"""Quarry's overhead over bare Pyserini/Anserini: per-query search latency and index build time.

    python -m bench.bench_search [--datasets ../shared/datasets] [--home DIR] [--profile]

In one process: ingest CACM and SciFact-train (into a temporary QUARRY_HOME unless --home is
given), then for every query of each collection time, interleaved and after a warm-up,

  (a) the agent `search` tool: `ToolSession.search` at depth 1000 plus `.render()` of the
      five previews (bag-of-words cleaning, tie-sorted Hits, ranking cache, corpus look-ups,
      excerpts, text rendering), and
  (b) a bare `LuceneSearcher.search(q, k=1000)` on the same index with the same BM25 k1/b.

PASS when p50(a) / p50(b) <= 1.3. Index builds are compared the same way: Quarry's
`build_index` (records from the corpus store, JSON export, Anserini in a child JVM) against
Anserini's `IndexCollection` run directly on a pre-exported JsonCollection folder of the same
documents with the same thread count. Results also go to bench/out/bench_search.json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import json
import os
import platform
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.slices import DEFAULT_DATASETS
from nodes.tools.corpus import ToolSession
from nodes.tools.results import SearchPage
from stores.anserini_run import run_index_collection
from stores.collection import Collection, ingest
from stores.jvm import pyserini_lucene
from stores.lucene_build import build_index, write_json_collection
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "bench" / "out" / "bench_search.json"
COLLECTIONS = ("cacm", "scifact-train")
TARGET_RATIO = 1.1
DEPTH = 1000


def ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1e3, q)), 3)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


# -- search ------------------------------------------------------------------------------------


def bench_search(col: Collection, warmup: int) -> dict[str, Any]:
    queries = [text for _, text in sorted(col.corpus.queries().items(), key=lambda p: (len(p[0]), p[0]))]
    meta = col.lucene.meta
    tools = ToolSession(col.lucene, col.corpus, depth=DEPTH)
    bare = pyserini_lucene().LuceneSearcher(str(col.paths.lucene_dir))
    bare.set_bm25(meta.k1, meta.b)

    def quarry(q: str) -> SearchPage:
        page = tools.search("bench", q)
        assert isinstance(page, SearchPage), page
        page.render()
        return page

    def pyserini(q: str):
        return bare.search(q, k=DEPTH)

    # warm the JVM's JIT and both searchers (cycling through the queries if there are fewer)
    for q in itertools.islice(itertools.cycle(queries), warmup):
        quarry(q), pyserini(q)

    t_quarry, t_bare, same, differ = [], [], 0, []
    for i, q in enumerate(queries):
        # alternate which side runs first, so neither always gets the warmer caches
        if i % 2 == 0:
            page, a = timed(lambda: quarry(q))
            hits, b = timed(lambda: pyserini(q))
        else:
            hits, b = timed(lambda: pyserini(q))
            page, a = timed(lambda: quarry(q))
        t_quarry.append(a)
        t_bare.append(b)
        ranked = tools.cache.get(page.search_id)
        if ranked is not None and list(ranked.docids) == [h.docid for h in hits]:
            same += 1
        else:
            differ.append(q[:60])

    # where Quarry's time goes (separate pass, same queries): Lucene wrapper, tool, rendering
    t_lucene, t_tool, t_render = [], [], []
    for q in queries:
        t_lucene.append(timed(lambda: col.lucene.ranking(q, DEPTH))[1])
        page, t = timed(lambda: tools.search("bench", q))
        t_tool.append(t)
        t_render.append(timed(page.render)[1])

    ratio = ms(t_quarry, 50) / ms(t_bare, 50)
    return {
        "queries": len(queries),
        "k1": meta.k1,
        "b": meta.b,
        "depth": DEPTH,
        "warmup": warmup,
        "quarry_search_tool_ms": {
            "p50": ms(t_quarry, 50),
            "p90": ms(t_quarry, 90),
            "mean": round(float(np.mean(t_quarry)) * 1e3, 3),
        },
        "pyserini_bare_ms": {
            "p50": ms(t_bare, 50),
            "p90": ms(t_bare, 90),
            "mean": round(float(np.mean(t_bare)) * 1e3, 3),
        },
        "p50_ratio": round(ratio, 3),
        "pass": ratio <= TARGET_RATIO,
        "identical_rankings": same,
        "different_rankings": differ[:10],
        "breakdown_p50_ms": {
            "lucene_index_search": ms(t_lucene, 50),
            "tool_search": ms(t_tool, 50),
            "render": ms(t_render, 50),
        },
    }


def profile_search(col: Collection, top: int = 25) -> str:
    """cProfile of the search tool over every query (cumulative and own time, top entries)."""
    tools = ToolSession(col.lucene, col.corpus, depth=DEPTH)
    queries = list(col.corpus.queries().values())
    prof = cProfile.Profile()
    prof.enable()
    for q in queries:
        tools.search("bench", q).render()
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# -- indexing ----------------------------------------------------------------------------------


def bench_index(col: Collection, scratch: Path, threads: int, reps: int) -> dict[str, Any]:
    meta = col.lucene.meta
    exported = scratch / "exported"
    documents = write_json_collection(col.corpus.iter_records(), exported, threads)
    t_quarry: list[float] = []
    t_raw: list[float] = []
    for rep in range(reps):

        def quarry() -> None:
            build_index(
                col.corpus.iter_records(),
                scratch / f"quarry-{rep}",
                fingerprint=meta.fingerprint,
                k1=meta.k1,
                b=meta.b,
                threads=threads,
            )

        def raw() -> None:
            run_index_collection(exported, scratch / f"raw-{rep}", threads)

        for fn, sink in ((quarry, t_quarry), (raw, t_raw)) if rep % 2 == 0 else ((raw, t_raw), (quarry, t_quarry)):
            sink.append(timed(fn)[1])
    shutil.rmtree(scratch, ignore_errors=True)
    best_q, best_r = min(t_quarry), min(t_raw)
    return {
        "documents": documents,
        "threads": threads,
        "reps": reps,
        "quarry_build_index_s": [round(t, 3) for t in t_quarry],
        "anserini_index_collection_s": [round(t, 3) for t in t_raw],
        "best_ratio": round(best_q / best_r, 3),
    }


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder with cacm/ and scifact-train/")
    parser.add_argument("--home", type=Path, default=None, help="reuse this QUARRY_HOME (default: a temporary one)")
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--warmup", type=int, default=300, help="untimed warm-up searches per side")
    parser.add_argument(
        "--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)), help="indexing threads (both builds)"
    )
    parser.add_argument("--index-reps", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="always print a cProfile of the search tool")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    temp_home = None
    if args.home is None:
        temp_home = tempfile.mkdtemp(prefix="quarry-bench-")
        home = Path(temp_home)
    else:
        home = args.home.expanduser().resolve()
    os.environ["QUARRY_HOME"] = str(home)
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "home": str(home),
        "target_p50_ratio": TARGET_RATIO,
        "collections": {},
    }
    try:
        for name in args.collections:
            report, seconds = timed(lambda: ingest(args.datasets.resolve() / name, name, home=home))
            print(
                f"[{name}] ingest: {report.documents} documents, {report.queries} queries in {seconds:.1f}s"
                + (" (unchanged)" if report.unchanged else ""),
                flush=True,
            )
            result["collections"][name] = {"ingest_s": round(seconds, 3), "documents": report.documents}

        for name in args.collections:
            col = Collection(name, home)
            search = bench_search(col, args.warmup)
            result["collections"][name]["search"] = search
            a, b = search["quarry_search_tool_ms"], search["pyserini_bare_ms"]
            print(
                f"[{name}] search, {search['queries']} queries, depth {DEPTH}, BM25 k1={search['k1']} b={search['b']}:\n"
                f"    quarry search tool + render   p50 {a['p50']:8.2f} ms   p90 {a['p90']:8.2f} ms\n"
                f"    bare LuceneSearcher.search     p50 {b['p50']:8.2f} ms   p90 {b['p90']:8.2f} ms\n"
                f"    p50 ratio {search['p50_ratio']:.3f}  ->  {'PASS' if search['pass'] else 'FAIL'} (<= {TARGET_RATIO})\n"
                f"    identical rankings: {search['identical_rankings']}/{search['queries']}\n"
                f"    breakdown p50: {search['breakdown_p50_ms']}",
                flush=True,
            )
            if args.profile or not search["pass"]:
                report = profile_search(col)
                result["collections"][name]["profile"] = report
                print(report, flush=True)

            index = bench_index(
                col, Path(tempfile.mkdtemp(prefix="bench-index-", dir=home)), args.threads, args.index_reps
            )
            result["collections"][name]["index"] = index
            print(
                f"[{name}] index build, {index['documents']} documents, {index['threads']} threads:\n"
                f"    quarry build_index             {index['quarry_build_index_s']} s\n"
                f"    anserini IndexCollection       {index['anserini_index_collection_s']} s\n"
                f"    best-of ratio {index['best_ratio']:.3f}",
                flush=True,
            )
    finally:
        if temp_home:
            shutil.rmtree(temp_home, ignore_errors=True)

    result["pass"] = all(c["search"]["pass"] for c in result["collections"].values())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"overall: {'PASS' if result['pass'] else 'FAIL'} · results in {args.out}", flush=True)
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    run_script(lambda: sys.exit(main()))
