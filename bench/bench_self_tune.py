"""How long `quarry tune NAME --self` takes on an existing collection, phase by phase.

    python -m bench.bench_self_tune --home H [--collection scifact-train] [--queries 300] [--no-verifier]
                                          [--judged 150]

The target: self-tuning a 5k-document collection (scifact-train: 5,183 documents, dense
index built) in at most ten minutes on this 2-core machine. The collection must already be
ingested and indexed in H (`quarry ingest`, `quarry index NAME --dense`): building it is not
part of the tuning. The run writes the collection's profile as `quarry tune --self` would (not
applied: the index is left as it is). Phases are timed from the tuner's own progress reports:
pseudo-queries made and the BM25 grid searched, the semantic searches, the verifier's agent jobs.
The reference in the same run is one BM25 index build of the same corpus (what `--apply` adds),
so the figure can be read against this machine's speed. Only judged queries choose (and fit the
profile's verifier, one in-process agent job each); `--judged N` times that path on a collection
nobody judged by standing in N judged intents — documents' titles, each judged relevant to its
own document — for the collection's judgement store, which is not written.
bench/out/bench_self_tune.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from workflows.processes.exit import run_script

OUT = Path(__file__).resolve().parent / "out" / "bench_self_tune.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="scifact-train")
    parser.add_argument("--queries", type=int, default=None, help="pseudo-queries (the tuner's default if unset)")
    parser.add_argument("--no-verifier", action="store_true")
    parser.add_argument("--judged", type=int, default=0, help="stand-in judged intents (see above)")
    args = parser.parse_args()

    import tempfile

    from stores.collection import Collection
    from stores.lucene_build import build_index
    from tuning.pseudo_queries import DEFAULT_QUERIES
    from tuning.self_tuning import self_tune

    col = Collection(args.collection, args.home)
    if args.judged:
        from stores.judgements import Judgement, JudgementStore

        titled = [r for r in col.corpus.iter_records() if len(r.title.split()) >= 3][: args.judged]
        stand_in = [Judgement(f"bench-{i}", r.title, r.docid, "user", 1.0) for i, r in enumerate(titled)]
        JudgementStore.all = lambda self: list(stand_in)  # type: ignore[method-assign]
    ends: dict[str, float] = {}  # phase → seconds from the start to its last progress report
    started = time.perf_counter()

    def progress(label: str, done: int, total: int | None) -> None:
        ends[label] = time.perf_counter() - started

    result = self_tune(col, queries=args.queries or DEFAULT_QUERIES, verifier=not args.no_verifier, progress=progress)
    total = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="quarry-bench-tune-") as tmp:
        t = time.perf_counter()
        build_index(col.corpus.iter_records(), Path(tmp) / "lucene", fingerprint="x")
        bm25_build = time.perf_counter() - t
    # Each phase from the end of the one before (the first includes making the pseudo-queries).
    phases, previous = {}, 0.0
    for label, end in ends.items():
        phases[label] = round(end - previous, 1)
        previous = end
    phases["saving the profile"] = round(total - previous, 1)
    figures = {
        "collection": args.collection,
        "documents": result.profile.document_count,
        "pseudo_queries": result.profile.queries,
        "verifier": not args.no_verifier,
        "judged_stand_ins": args.judged,
        "verifier_fitted_on": (result.profile.verifier_pseudo or {}).get("queries", 0),
        "total_s": round(total, 1),
        "phases_s": phases,
        "bm25_build_s": round(bm25_build, 1),
        "ratio_to_bm25_build": round(total / bm25_build, 1),
        "target_s": 600,
    }
    print(json.dumps(figures, indent=2))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    run_script(main)
