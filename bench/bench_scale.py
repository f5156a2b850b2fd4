"""Scale: ingest, BM25 indexing, index size, search latency, memory and a job, from 10k to 100k
long documents (synthetic, BrowseComp-Plus-like: ~5,000 words each; bench/scale_corpus.py).

    python -m bench.bench_scale [--sizes 10000 100000] [--dir /tmp/quarry-scale] [--queries 50]

For every size, two child processes, so each one's memory is its own:

1. `build`: write the BEIR folder (streamed, deterministic), then `stores.collection.ingest` —
   Quarry's real ingest of a new collection: one pass that validates each document, stores it
   (the text, once) and feeds it to Lucene's indexer in a child JVM — with BM25 k1/b from
   `default_bm25_params`. Then, alone, Anserini's own IndexCollection over the same documents
   exported as files first (the reference of the ingest ratio). Reported: documents/s and MB/s
   of raw text for the whole ingest and for the store + indexing pass, the ratio of the ingest
   to Anserini alone, the corpus store's and the index's size against the raw text, and peak
   RSS of the ingest process (before the reference run).
   A size already built under --dir is reused (its build figures are read back) unless --rebuild.
2. `probe`, a worker-like process (a `NodeRuntime` over the collection): the agent `search` tool
   at depth k=1000 (and Lucene's ranking alone) for `--queries` queries after a warm-up, p50 and
   p95; the on-demand semantic channel (BM25 candidates re-scored by MiniLM, vectors cached per
   collection version; the cache is emptied first, so "cold" means embedding) cold and warm on
   three more queries, with nDCG@10 of BM25, the filtered semantic ranking and their RRF; one
   heuristic job with both channels (default JobConfig) on a fifth query, run in-process as
   tuning/train_ranker.py does; peak RSS (VmHWM) after the searches and after the job.

Printed: one table, a column per size, and the growth first → last size of each figure; the raw
figures go to bench/out/bench_scale.json. The machine is shared: run it when it is quiet.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "bench" / "out" / "bench_scale.json"
NAME = "scale"
MB = 1024 * 1024


def vm_hwm_mb() -> float:
    """Peak resident memory of this process (VmHWM), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def size_dir(base: Path, size: int, words: int = 5000) -> Path:
    return base / (f"n{size}" if words == 5000 else f"n{size}-w{words}")


# -- build ---------------------------------------------------------------------------------


def build(base: Path, size: int, keep_source: bool, words: int = 5000) -> dict[str, Any]:
    from bench.scale_corpus import write_beir
    from nodes.ranking.bm25_defaults import default_bm25_params
    from stores.collection import Collection, ingest
    from stores.lucene import IndexMeta

    folder = size_dir(base, size, words)
    src, home = folder / "src", folder / "home"
    began = time.perf_counter()
    written = write_beir(src, size, words=words)
    generated = time.perf_counter() - began
    k1, b = default_bm25_params(float(words))
    began = time.perf_counter()
    ingest(src, NAME, home=home, k1=k1, b=b)
    ingest_s = time.perf_counter() - began
    col = Collection(NAME, home)
    index_s = IndexMeta.load(col.paths.lucene_dir).built_seconds
    peak_rss_mb = vm_hwm_mb()  # of the ingest, before the reference run below
    anserini_s = anserini_alone(col, folder / "anserini")
    raw_mb = written.raw_bytes / MB
    store_mb = col.paths.corpus_db.stat().st_size / MB
    index_mb = folder_bytes(col.paths.lucene_dir) / MB
    out = {
        "documents": size,
        "words_per_document": words,
        "queries": written.queries,
        "k1": k1,
        "b": b,
        "generate_s": round(generated, 1),
        "raw_text_mb": round(raw_mb, 1),
        "source_jsonl_mb": round(written.file_bytes / MB, 1),
        "ingest_s": round(ingest_s, 1),
        "ingest_docs_per_s": round(size / ingest_s, 1),
        "ingest_mb_per_s": round(raw_mb / ingest_s, 2),
        "index_s": round(index_s, 1),
        "index_docs_per_s": round(size / index_s, 1),
        "index_mb_per_s": round(raw_mb / index_s, 2),
        "anserini_s": round(anserini_s, 1),
        "ingest_vs_anserini": round(ingest_s / anserini_s, 2),  # the "ingest ≤ 1.5× Anserini's own time"
        "validate_s": round(ingest_s - index_s, 1),  # outside the pass (a new collection is validated in it)
        "corpus_store_mb": round(store_mb, 1),
        "index_mb": round(index_mb, 1),
        "index_vs_raw": round(index_mb / raw_mb, 3),
        "store_vs_raw": round(store_mb / raw_mb, 3),
        # The indexer JVM's own peak is not measured: a forked child's ru_maxrss counts the parent's
        # pages it started with. Its heap is capped by stores.jvm.JVM_OPTIONS (-Xmx4g).
        "ingest_peak_rss_mb": peak_rss_mb,
    }
    if not keep_source:
        (src / "corpus.jsonl").unlink()  # queries and qrels stay; the corpus lives in the store now
    return out


def anserini_alone(col: Any, scratch: Path) -> float:
    """Seconds of Anserini's own IndexCollection (same JVM options and threads as Quarry's) over
    the collection exported as JsonCollection files beforehand — the reference of the issue's
    "ingest ≤ 1.5× Anserini's own time on the same export". Run after the ingest, alone."""
    import shutil

    from stores.anserini_run import run_index_collection
    from stores.lucene_build import default_threads, write_json_collection

    threads = default_threads()
    write_json_collection(col.corpus.iter_records(), scratch / "in", threads)
    began = time.perf_counter()
    run_index_collection(scratch / "in", scratch / "index", threads)
    seconds = time.perf_counter() - began
    shutil.rmtree(scratch)
    return seconds


# -- probe ---------------------------------------------------------------------------------

SEMANTIC_QUERIES = 3


def pct(samples: list[float], q: float) -> float:
    import numpy as np

    return round(float(np.percentile(np.asarray(samples) * 1e3, q)), 1)


def log(message: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    began = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - began


def run_graph(job_id: str, intent: str, config) -> dict[str, Any]:
    """One heuristic job in-process, as tuning/ranker_features.py `collect_one` runs it."""
    import asyncio

    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control

    token = use_control(Control())
    try:
        return asyncio.run(
            make_search_graph()
            .compile()
            .ainvoke(initial_state(job_id, NAME, intent, config=config), config={"recursion_limit": 10_000})
        )
    finally:
        reset_control(token)


def probe(base: Path, size: int, n_queries: int, run_job: bool, words: int = 5000) -> dict[str, Any]:
    """A worker-like process: the runtime's stores and tools, searches, semantic searches, a job."""
    home = size_dir(base, size, words) / "home"
    os.environ["QUARRY_HOME"] = str(home)
    from nodes.job.config import JobConfig
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from nodes.ranking.fusion import reciprocal_rank_fusion
    from nodes.rounds.semantic_filter import FilteredSemantic
    from nodes.tools.corpus import ToolSession
    from stores.embedder import embed_texts
    from tuning.metrics import mean_metrics

    rt = NodeRuntime(home)
    configure_runtime(rt)
    col = rt.collection(NAME)
    col.paths.chunk_vectors_db.unlink(missing_ok=True)  # cold cache: every run embeds what it needs
    queries = sorted(col.corpus.queries().items())
    qrels = col.corpus.qrels("test")
    lexical_q = queries[:n_queries]
    semantic_q = queries[n_queries : n_queries + SEMANTIC_QUERIES]
    job_q = queries[n_queries + SEMANTIC_QUERIES] if len(queries) > n_queries + SEMANTIC_QUERIES else queries[-1]
    out: dict[str, Any] = {"documents": col.corpus.count(), "lexical_queries": len(lexical_q)}

    # Lexical: the agent search tool at depth 1000 vs Lucene's ranking alone, after a warm-up.
    session = ToolSession(col.lucene, col.corpus)
    _, first = timed(lambda: session.search("warm-up", lexical_q[0][1]).render())
    for _, text in lexical_q[:5]:
        session.search("warm-up", text)
        col.lucene.ranking(text, 1000)
    tool, bare, run = [], [], {}
    for qid, text in lexical_q:
        _, t = timed(lambda: session.search("bench", text).render())
        tool.append(t)
        (docids, scores), t = timed(lambda: col.lucene.ranking(text, 1000))
        bare.append(t)
        run[qid] = dict(zip(docids, scores, strict=True))
    lexical_metrics = mean_metrics({q: qrels[q] for q in run}, run)
    out["search"] = {
        "first_search_ms": round(first * 1e3, 1),
        "tool_p50_ms": pct(tool, 50),
        "tool_p95_ms": pct(tool, 95),
        "lucene_p50_ms": pct(bare, 50),
        "lucene_p95_ms": pct(bare, 95),
        "k": 1000,
        "bm25_ndcg@10": round(lexical_metrics["ndcg@10"], 3),
        "bm25_recall@1000": round(lexical_metrics["recall@1000"], 3),
    }
    out["rss_after_searches_mb"] = vm_hwm_mb()
    log(f"lexical: {out['search']}")

    # Semantic without a dense index: BM25 candidates re-scored by MiniLM, cold then warm cache.
    cfg = JobConfig()
    _, load_s = timed(lambda: embed_texts(["load the model"]))
    vectors = col.chunk_vectors
    semantic = FilteredSemantic(
        col.lucene, col.corpus, vectors, candidates=cfg.semantic_candidates, chunks_per_doc=cfg.semantic_chunks
    )
    cold, warm, embedded, sem_run, rrf_run, lex_run = [], [], [], {}, {}, {}
    for qid, text in semantic_q:
        before = vectors.embedded
        (docids, scores), t = timed(lambda: semantic.ranking(text, 1000))
        cold.append(t)
        embedded.append(vectors.embedded - before)
        _, t = timed(lambda: semantic.ranking(text, 1000))
        warm.append(t)
        lex_ids, lex_scores = col.lucene.ranking(text, 1000)
        sem_run[qid] = dict(zip(docids, scores, strict=True))
        lex_run[qid] = dict(zip(lex_ids, lex_scores, strict=True))
        rrf_run[qid] = dict(reciprocal_rank_fusion([list(lex_ids), list(docids)]))
        log(f"semantic {qid}: cold {cold[-1]:.1f} s ({embedded[-1]} chunks embedded), warm {warm[-1] * 1e3:.0f} ms")
    judged = {q: qrels[q] for q, _ in semantic_q}
    out["semantic"] = {
        "queries": len(semantic_q),
        "candidates": cfg.semantic_candidates,
        "chunks_per_doc": cfg.semantic_chunks,
        "model_load_s": round(load_s, 2),
        "cold_s": [round(t, 2) for t in cold],
        "warm_ms": [round(t * 1e3, 1) for t in warm],
        "chunks_embedded": embedded,
        "chunks_per_s": round(sum(embedded) / max(sum(cold), 1e-9), 1),
        "ndcg@10": {
            "bm25": round(mean_metrics(judged, lex_run)["ndcg@10"], 3),
            "filtered_semantic": round(mean_metrics(judged, sem_run)["ndcg@10"], 3),
            "rrf": round(mean_metrics(judged, rrf_run)["ndcg@10"], 3),
        },
    }
    out["rss_after_semantic_mb"] = vm_hwm_mb()

    if run_job:
        qid, text = job_q
        before = vectors.embedded
        state, job_s = timed(lambda: run_graph(f"scale-{size}-{qid}", text, JobConfig()))
        result = rt.jobs.load_draft(state["job_id"])
        assert result is not None, state["job_id"]
        out["job"] = {
            "query": text,
            "seconds": round(job_s, 1),
            "rounds": state.get("round"),
            "stop_reason": result.get("stop_reason"),
            "tool_calls": state.get("stats", {}).get("tool_calls"),
            "channels": sorted({s["channel"] for s in state.get("searches", [])}),
            "semantic_labels": [s["label"] for s in state.get("searches", []) if s["channel"] == "semantic"],
            "chunks_embedded": vectors.embedded - before,
            "ranked": len(result.get("ranked", [])),
            "ndcg@10": round(
                mean_metrics(
                    {qid: qrels[qid]}, {qid: {d: float(len(result["run"]) - i) for i, d in enumerate(result["run"])}}
                )["ndcg@10"],
                3,
            ),
        }
        log(f"job: {out['job']}")
    out["peak_rss_mb"] = vm_hwm_mb()
    out["chunk_cache_mb"] = round(
        sum(p.stat().st_size for p in col.paths.version_dir.glob("chunk-vectors.sqlite*")) / MB, 1
    )
    configure_runtime(None)
    return out


# -- orchestration -------------------------------------------------------------------------


def child(step: str, base: Path, size: int, extra: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "bench.bench_scale", "--step", step, "--size", str(size), "--dir", str(base), *extra]
    proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)  # stderr: progress, shown
    if proc.returncode != 0:
        raise SystemExit(f"{step} {size} failed (exit {proc.returncode}); its error is printed above")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/quarry-scale"))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rebuild", action="store_true", help="build again even if a size is already built")
    parser.add_argument("--keep-source", action="store_true", help="keep the generated corpus.jsonl")
    parser.add_argument("--no-job", action="store_true", help="skip the heuristic job")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--step", choices=("build", "probe"), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--words", type=int, default=5000, help="mean words per document (±20%%)")
    args = parser.parse_args()
    base = args.dir.resolve()
    if args.step == "build":
        print(json.dumps(build(base, args.size, args.keep_source, args.words)))
        return
    if args.step == "probe":
        print(json.dumps(probe(base, args.size, args.queries, not args.no_job, args.words)))
        return
    results: dict[str, Any] = {}
    for size in args.sizes:
        marker = size_dir(base, size, args.words) / "build.json"
        if marker.is_file() and not args.rebuild:
            built = json.loads(marker.read_text()) | {"reused": True}
            print(f"[{size}] reusing the collection built under {marker.parent}", flush=True)
        else:
            if marker.parent.exists():
                import shutil

                shutil.rmtree(marker.parent)
            print(f"[{size}] generating and ingesting …", flush=True)
            built = child(
                "build", base, size, ["--words", str(args.words), *(["--keep-source"] if args.keep_source else [])]
            )
            marker.write_text(json.dumps(built, indent=2))
        print(f"[{size}] build: {json.dumps(built)}", flush=True)
        print(f"[{size}] probing (searches, semantic searches{', a job' if not args.no_job else ''}) …", flush=True)
        probed = child(
            "probe",
            base,
            size,
            ["--words", str(args.words), "--queries", str(args.queries), *(["--no-job"] if args.no_job else [])],
        )
        print(f"[{size}] probe: {json.dumps(probed)}", flush=True)
        results[str(size)] = {"build": built, "probe": probed}
    report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


FIGURES = (  # (label, path into the results, unit)
    ("ingest, documents/s", ("build", "ingest_docs_per_s"), ""),
    ("ingest, MB/s of raw text", ("build", "ingest_mb_per_s"), ""),
    ("ingest wall time", ("build", "ingest_s"), "s"),
    ("  of which outside the pass", ("build", "validate_s"), "s"),
    ("  of which validate + store + BM25 indexing (one pass)", ("build", "index_s"), "s"),
    ("Anserini alone on the same export", ("build", "anserini_s"), "s"),
    ("ingest / Anserini alone (target ≤ 1.5 at 1M)", ("build", "ingest_vs_anserini"), ""),
    ("store + indexing pass, documents/s", ("build", "index_docs_per_s"), ""),
    ("store + indexing pass, MB/s", ("build", "index_mb_per_s"), ""),
    ("raw text", ("build", "raw_text_mb"), "MB"),
    ("Lucene index", ("build", "index_mb"), "MB"),
    ("index / raw text", ("build", "index_vs_raw"), ""),
    ("corpus store", ("build", "corpus_store_mb"), "MB"),
    ("corpus store / raw text", ("build", "store_vs_raw"), ""),
    ("ingest process peak RSS", ("build", "ingest_peak_rss_mb"), "MB"),
    ("search tool p50, k=1000", ("probe", "search", "tool_p50_ms"), "ms"),
    ("search tool p95, k=1000", ("probe", "search", "tool_p95_ms"), "ms"),
    ("Lucene alone p50, k=1000", ("probe", "search", "lucene_p50_ms"), "ms"),
    ("Lucene alone p95, k=1000", ("probe", "search", "lucene_p95_ms"), "ms"),
    ("worker RSS after searches", ("probe", "rss_after_searches_mb"), "MB"),
    ("filtered semantic search, cold (median)", ("probe", "semantic", "cold_s"), "s"),
    ("filtered semantic search, warm (median)", ("probe", "semantic", "warm_ms"), "ms"),
    ("heuristic job, both channels", ("probe", "job", "seconds"), "s"),
    ("worker peak RSS (after the job)", ("probe", "peak_rss_mb"), "MB"),
)


def _value(row: dict[str, Any], path: tuple[str, ...]) -> float | None:
    node: Any = row
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return None
    if isinstance(node, list):
        import statistics

        return round(statistics.median(node), 2) if node else None
    return node


def report(results: dict[str, Any]) -> None:
    sizes = list(results)
    print(
        "\n| figure | "
        + " | ".join(f"{int(n):,} docs" for n in sizes)
        + (f" | growth {int(sizes[0]) // 1000}k → {int(sizes[-1]) // 1000}k |" if len(sizes) > 1 else " |")
    )
    print("|---|" + "---:|" * (len(sizes) + (len(sizes) > 1)))
    for label, path, unit in FIGURES:
        values = [_value(results[n], path) for n in sizes]
        cells = [f"{v:g} {unit}".strip() if v is not None else "—" for v in values]
        if len(sizes) > 1:
            lo, hi = values[0], values[-1]
            cells.append(f"×{hi / lo:.2f}" if lo and hi is not None else "—")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run_script(main)
