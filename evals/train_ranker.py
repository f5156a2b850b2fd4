"""Train the learned verifier and measure it on collections it was not trained on.

    python -m evals.train_ranker --home H [--collections cacm cranfield scifact-train] [--write]

1. For every judged query of each collection, the heuristic search graph runs in-process and the
   features of its verified candidates (nodes.ranker.FEATURES) are collected with their relevance
   grades (cached in the collection's runs folder; `--refresh` recomputes).
2. Leave one collection out: a scorer is trained on the other collections and re-orders the
   verified head of each held-out query's run; nDCG@20 (nDCG@10 for scifact) is compared with the
   heuristic agent's own order and with hybrid RRF(BM25, MiniLM) on the same queries, with a paired
   randomization test. Candidates: logistic regression (scikit-learn) on all features and on the
   features whose scale does not depend on the collection (`TRANSFERABLE`), and LambdaMART
   (LightGBM, only if installed: it is not a dependency) — chosen by the mean relative gain over
   hybrid across the held-out collections. The table goes to docs/eval/ranker.md.
3. `--write` fits the chosen scorer on all collections and writes it to stores/data/verifier.json
   (a linear model: a few hundred bytes, applied by nodes.ranker.Verifier without new
   dependencies) — only if, held out, it beat the heuristic agent's own order on average; else
   it says so and writes nothing (the heuristic order stays).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.metrics import per_query
from evals.runner import judged_queries, system_ranker
from evals.significance import compare
from nodes.ranker import FEATURES, Verifier, candidate_features
from stores.collection import Collection

REPO = Path(__file__).resolve().parents[1]
VERIFIER_FILE = REPO / "stores" / "data" / "verifier.json"
METRIC = {"scifact-train": "ndcg@10"}
CACHE = "ranker-features.json"
REPORT = REPO / "docs" / "eval" / "ranker.md"
# Features whose values do not depend on how long a collection's documents are or whether it has
# citation links or author metadata (CACM has both, Cranfield and scifact neither).
TRANSFERABLE = tuple(f for f in FEATURES if f not in ("log_len", "cites_top", "cit_best_inv", "meta_hit"))


def _collect_one(rt, col: Collection, qid: str, text: str) -> dict[str, Any]:
    from graphs.control import Control, reset_local_control, use_local_control
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.pool import load_pool

    job_id = f"ranker-{col.name}-{qid}"
    token = use_local_control(Control())
    try:
        state = asyncio.run(make_search_graph().compile().ainvoke(initial_state(job_id, col.name, text),
                                                                   config={"recursion_limit": 10_000}))
    finally:
        reset_local_control(token)
    pool = load_pool(rt.jobs, state)
    channel_of = {s["search_id"]: s["channel"] for s in state.get("searches", []) if s.get("search_id")}
    verified = [d for d, c in pool.items() if c.get("verified_version") and not c.get("excluded")]
    neighbours = {d: {n for n, _ in col.citations.references(d)} | {n for n, _ in col.citations.cited_by(d)}
                  for d in verified} if len(col.citations) else {}
    lengths = {d: len(r.text) for d, r in col.corpus.get_many(verified).items()}
    feats = candidate_features(list(pool.values()), channel_of, neighbours=neighbours, lengths=lengths)
    return {"qid": qid, "run": rt.jobs.load_draft(job_id)["run"], "features": feats}


def collect(home: Path, name: str, refresh: bool = False) -> dict[str, Any]:
    """Features and runs for every judged query of `name` (cached)."""
    from nodes.runtime import NodeRuntime, configure_runtime

    col = Collection(name, home)
    cache = col.paths.runs_dir / CACHE
    if cache.is_file() and not refresh:
        data = json.loads(cache.read_text())
        if data.get("features") == list(FEATURES) and data.get("fingerprint") == col.corpus.fingerprint:
            return data
    rt = NodeRuntime(home)
    configure_runtime(rt)
    split, qids, texts, qrels = judged_queries(col, None)
    started = time.perf_counter()
    rows = []
    for n, qid in enumerate(qids, start=1):
        rows.append(_collect_one(rt, col, qid, texts[qid]))
        if n % 50 == 0:
            print(f"  {name}: {n}/{len(qids)} queries, {time.perf_counter() - started:.0f} s", flush=True)
    configure_runtime(None)
    data = {"collection": name, "split": split, "fingerprint": col.corpus.fingerprint, "features": list(FEATURES),
            "queries": rows, "qrels": {q: qrels[q] for q in qids}, "seconds": round(time.perf_counter() - started, 1)}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(data))
    return data


def _matrix(datasets: list[dict[str, Any]], features: tuple[str, ...] = FEATURES) -> tuple[np.ndarray, np.ndarray, list[int]]:
    cols = [FEATURES.index(f) for f in features]
    xs, ys, groups = [], [], []
    for data in datasets:
        for row in data["queries"]:
            grades = data["qrels"][row["qid"]]
            if not row["features"]:
                continue
            for docid, vec in row["features"].items():
                xs.append([vec[c] for c in cols])
                ys.append(grades.get(docid, 0))
            groups.append(len(row["features"]))
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), groups


def fit_logistic(datasets: list[dict[str, Any]], name: str = "verifier",
                 features: tuple[str, ...] = FEATURES) -> Verifier:
    from sklearn.linear_model import LogisticRegression

    x, y, _ = _matrix(datasets, features)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
    model.fit((x - mean) / scale, (y > 0).astype(int))
    return Verifier(name, features, tuple(mean), tuple(scale), tuple(model.coef_[0]), float(model.intercept_[0]))


def fit_lambdamart(datasets: list[dict[str, Any]]):
    import lightgbm as lgb

    x, y, groups = _matrix(datasets)
    model = lgb.LGBMRanker(objective="lambdarank", n_estimators=200, learning_rate=0.05, num_leaves=15,
                           min_child_samples=20, random_state=0, verbose=-1)
    model.fit(x, y.astype(int), group=groups)
    return model


def rerank(data: dict[str, Any], score) -> dict[str, dict[str, float]]:
    """Each query's run with its verified head re-ordered by `score(matrix) -> scores`."""
    runs = {}
    for row in data["queries"]:
        run, feats = row["run"], row["features"]
        head = [d for d in run if d in feats]
        if head:
            scores = score(np.asarray([feats[d] for d in head], dtype=float))
            order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
            new_head = [head[i] for i in order]
            it = iter(new_head)
            run = [next(it) if d in feats else d for d in run]
        runs[row["qid"]] = {d: float(len(run) - i) for i, d in enumerate(run)}
    return runs


def loco(home: Path, names: list[str], datasets: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for held in names:
        train = [datasets[n] for n in names if n != held]
        test = datasets[held]
        metric = METRIC.get(held, "ndcg@20")
        qrels = test["qrels"]
        col = Collection(held, home)
        hybrid_rank = system_ranker(col, "hybrid", None, None, 1000)
        _, qids, texts, _ = judged_queries(col, None)
        hybrid = per_query(qrels, {q: dict(hybrid_rank(texts[q])) for q in qids})
        agent = per_query(qrels, {r["qid"]: {d: float(len(r["run"]) - i) for i, d in enumerate(r["run"])}
                                  for r in test["queries"]})
        row = {"held_out": held, "metric": metric, "queries": len(qids),
               "hybrid": float(np.mean([v[metric] for v in hybrid.values()])),
               "agent_heuristic": float(np.mean([v[metric] for v in agent.values()]))}
        logistic, transferable = fit_logistic(train), fit_logistic(train, features=TRANSFERABLE)
        models = {"logistic": lambda m, v=logistic: np.asarray([v.score(x) for x in m]),
                  "logistic_transferable": lambda m, v=transferable: np.asarray([v.score(x) for x in m])}
        try:
            lm = fit_lambdamart(train)
            models["lambdamart"] = lambda m, model=lm: model.predict(m)
        except ImportError:
            pass
        for label, score in models.items():
            pq = per_query(qrels, rerank(test, score))
            row[f"agent_{label}"] = float(np.mean([v[metric] for v in pq.values()]))
            own = compare(label, pq, "agent", agent, metric)
            row[f"{label}_vs_agent"] = {"relative": round(own.relative, 4), "p": round(own.p_value, 4)}
            c = compare(label, pq, "hybrid", hybrid, metric)
            row[f"{label}_vs_hybrid"] = {"diff": round(c.diff, 4), "relative": round(c.relative, 4),
                                         "ci": [round(c.ci_low, 4), round(c.ci_high, 4)], "p": round(c.p_value, 4)}
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collections", nargs="+", default=["cacm", "cranfield", "scifact-train"])
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--write", action="store_true", help="fit on all collections and write stores/data/verifier.json")
    args = parser.parse_args()
    datasets = {}
    for name in args.collections:
        datasets[name] = collect(args.home, name, args.refresh)
        print(f"{name}: {len(datasets[name]['queries'])} queries, features cached", flush=True)
    results = loco(args.home, args.collections, datasets)
    out = REPO / "bench" / "out" / "ranker-loco.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    labels = [k.removesuffix("_vs_hybrid") for k in results[0] if k.endswith("_vs_hybrid")]
    gain = {label: float(np.mean([r[f"{label}_vs_hybrid"]["relative"] for r in results])) for label in labels}
    heuristic_gain = float(np.mean([r["agent_heuristic"] / r["hybrid"] - 1 for r in results]))
    best = max(gain, key=gain.get)
    REPORT.write_text(report(results, labels, gain, heuristic_gain, best, datasets))
    print(f"wrote {REPORT}; best held-out scorer {best}: {gain[best]:+.2%} over hybrid on average "
          f"(heuristic order {heuristic_gain:+.2%})")
    if args.write and not best.startswith("logistic"):
        print(f"the best scorer ({best}) is not linear; nothing written")
    elif args.write and gain[best] <= heuristic_gain:
        print("held out, no scorer beat the heuristic agent's own order on average: nothing written, "
              "the heuristic order stays")
    elif args.write:
        features = TRANSFERABLE if best == "logistic_transferable" else FEATURES
        verifier = fit_logistic(list(datasets.values()), name="verifier-v1", features=features)
        VERIFIER_FILE.parent.mkdir(parents=True, exist_ok=True)
        VERIFIER_FILE.write_text(json.dumps({"name": verifier.name, "features": list(verifier.features),
                                             "mean": verifier.mean, "scale": verifier.scale, "weights": verifier.weights,
                                             "bias": verifier.bias, "trained_on": args.collections,
                                             "rebuild": "python -m evals.train_ranker --home H --write"}, indent=1))
        print(f"wrote {VERIFIER_FILE}")


def report(results: list[dict[str, Any]], labels: list[str], gain: dict[str, float], heuristic_gain: float,
           best: str, datasets: dict[str, dict[str, Any]]) -> str:
    """The leave-one-collection-out table as Markdown (docs/eval/ranker.md)."""
    import platform
    import sklearn

    lines = ["# Learned verifier: leave-one-collection-out", "",
             "Each row: a scorer trained on the other two collections re-orders the verified head (≈100 "
             "candidates) of the heuristic agent's run on the held-out collection. Relative gain over hybrid "
             "RRF(BM25, MiniLM) on the same queries; paired randomization test p, 95% bootstrap interval of the "
             "difference. `agent` is the heuristic order the verifier would replace.", "",
             "| held out | metric | queries | hybrid | agent (heuristic) | " + " | ".join(labels) + " |",
             "|---|---|---|---|---|" + "---|" * len(labels)]
    for r in results:
        cells = []
        for label in labels:
            c = r[f"{label}_vs_hybrid"]
            cells.append(f"{r[f'agent_{label}']:.4f} ({c['relative']:+.1%}, p={c['p']:.3f}, "
                         f"CI [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}])")
        lines.append(f"| {r['held_out']} | {r['metric']} | {r['queries']} | {r['hybrid']:.4f} | "
                     f"{r['agent_heuristic']:.4f} ({r['agent_heuristic'] / r['hybrid'] - 1:+.1%}) | " + " | ".join(cells) + " |")
    target = all(r[f"{best}_vs_hybrid"]["relative"] >= 0.03 for r in results)
    lines += ["", f"Mean relative gain over hybrid: heuristic order {heuristic_gain:+.2%}; "
              + "; ".join(f"{k} {v:+.2%}" for k, v in gain.items()) + ".", "",
              f"Best scorer held out: **{best}**. Target (≥ +3% over hybrid on every held-out collection): "
              + ("met." if target else "**not met** — " + ", ".join(
                  f"{r['held_out']} {r[f'{best}_vs_hybrid']['relative']:+.1%}" for r in results) + "."),
              "", "Features: " + ", ".join(FEATURES) + f"; transferable subset drops log_len, cites_top, "
              "cit_best_inv, meta_hit.", "",
              "## Reproduce", "", "```",
              "python -m evals.train_ranker --home H   # H holds cacm, cranfield, scifact-train, BM25 defaults, --dense",
              "```", "",
              f"Feature collection: " + ", ".join(f"{n} {d['seconds']} s" for n, d in datasets.items())
              + f". scikit-learn {sklearn.__version__}, Python {platform.python_version()}, {platform.machine()}, "
              f"{os.cpu_count()} cores. Corpus fingerprints: "
              + ", ".join(f"{n} {d['fingerprint'][:12]}" for n, d in datasets.items()) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
