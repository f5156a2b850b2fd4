"""Probe: does MiniLM adapted to a collection on its own cloze pairs rank its real queries better?

    python -m evals.dense_adaptation_probe cranfield --home H [--pairs 1000] [--epochs 1] [--seed 13]

(H holds the collection, ingested: its documents, queries and qrels are read from there.)

Why: fitted on a collection's own qrels, the verifier's features reach at most +0.2%
over the default agent on scifact-train and +3.7% on Cranfield (docs/eval/ranker.md, in-sample
bound), so +3% without qrels needs a signal the agent does not have. The semantic channel is the agent's strongest one, and
it is the one part never fitted to the collection. This measures the first step of fitting it: the
inverse cloze task (a sentence of a document → the rest of that document, `tuning.cloze_queries`),
in-batch negatives, a few hundred steps on the CPU — then dense retrieval alone, before and after,
on the collection's real judged queries.

Honest by construction: the pairs come from the documents alone (never a query or a qrel), and
every setting (learning rate, batch, epochs, pair count) is fixed here before the one scoring run;
nothing is chosen on the queries it reports. A document is embedded whole ("title. text", the
model's 256-token window), the same way before and after, so the difference is the model's alone.
Not the dense index Quarry searches (chunks, max over a document's chunks): a probe, not a system.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from stores.collection import Collection
from stores.records import DocRecord
from tuning.cloze_queries import take_out_sentence
from tuning.judged import judged_queries
from tuning.metrics import per_query
from tuning.significance import compare
from workflows.processes.exit import run_script

BATCH = 32
LEARNING_RATE = 2e-5
WARMUP_SHARE = 0.1
SCALE = 20.0  # cosine × 20 as logits: sentence-transformers' MultipleNegativesRankingLoss default
TRAIN_MAX_TOKENS = 256
DEPTH = 100


def as_text(rec: DocRecord) -> str:
    return f"{rec.title}. {rec.text}" if rec.title else rec.text


def cloze_pairs(docs: list[DocRecord], n: int, seed: int) -> list[tuple[str, str]]:
    """Up to `n` seeded (sentence, rest of its document) pairs, one per document."""
    rng = random.Random(seed)
    pairs = []
    for rec in rng.sample(docs, len(docs)):
        taken = take_out_sentence(rec, rng)
        if taken is not None:
            rest, sentence = taken
            pairs.append((sentence, as_text(rest)))
        if len(pairs) >= n:
            break
    return pairs


def train(model: Any, pairs: list[tuple[str, str]], epochs: int, seed: int) -> dict[str, float]:
    """In-batch-negatives contrastive training of `model` (a SentenceTransformer) on the pairs."""
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    model.max_seq_length = TRAIN_MAX_TOKENS
    model.train()
    steps = epochs * math.ceil(len(pairs) / BATCH)
    optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    warmup = max(1, int(steps * WARMUP_SHARE))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup))
    )
    losses, started = [], time.perf_counter()
    for _ in range(epochs):
        order = rng.sample(pairs, len(pairs))
        for i in range(0, len(order), BATCH):
            batch = order[i : i + BATCH]
            if len(batch) < 2:
                continue
            q = model(model.tokenize([a for a, _ in batch]))["sentence_embedding"]
            d = model(model.tokenize([b for _, b in batch]))["sentence_embedding"]
            logits = SCALE * torch.nn.functional.normalize(q, dim=1) @ torch.nn.functional.normalize(d, dim=1).T
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            losses.append(float(loss))
            print(f"  step {len(losses)}/{steps} loss {losses[-1]:.3f}", flush=True)
    model.eval()
    return {"steps": len(losses), "seconds": round(time.perf_counter() - started, 1),
            "loss_first": round(float(np.mean(losses[:5])), 3), "loss_last": round(float(np.mean(losses[-5:])), 3)}  # fmt: skip


def dense_run(model: Any, docs: list[DocRecord], queries: dict[str, str]) -> dict[str, dict[str, float]]:
    """Top `DEPTH` documents per query by cosine, whole documents embedded once."""
    import torch

    with torch.inference_mode():
        d = model.encode([as_text(r) for r in docs], batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        qids = list(queries)
        q = model.encode([queries[x] for x in qids], batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    scores = np.asarray(q) @ np.asarray(d).T
    run = {}
    for row, qid in enumerate(qids):
        top = np.argsort(-scores[row])[:DEPTH]
        run[qid] = {docs[j].docid: float(scores[row, j]) for j in top}
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collection", help="a collection of --home with judged queries")
    parser.add_argument("--home", type=Path, default=None, help="QUARRY_HOME holding the collection")
    parser.add_argument("--split", default=None, help="qrels split (default: the one `quarry eval` picks)")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--metric", default="ndcg@20")
    args = parser.parse_args()
    from stores.embedder import _model

    col = Collection(args.collection, home=args.home)  # a QuarryError ends it in one line (run_script)
    _, qids, texts, qrels = judged_queries(col, args.split)
    docs = list(col.corpus.iter_records())
    queries = {q: texts[q] for q in qids}
    base = _model()  # fp32, the weights Quarry ships
    before = per_query(qrels, dense_run(base, docs, queries))
    pairs = cloze_pairs(docs, args.pairs, args.seed)
    adapted = copy.deepcopy(base)
    log = train(adapted, pairs, args.epochs, args.seed)
    after = per_query(qrels, dense_run(adapted, docs, queries))
    result = compare("adapted", after, "minilm", before, args.metric)
    assert result is not None
    print(json.dumps({"collection": args.collection, "pairs": len(pairs), "training": log,
                      "metric": args.metric, "queries": result.queries,
                      "minilm": round(result.baseline_mean, 4), "adapted": round(result.system_mean, 4),
                      "relative": round(result.relative, 4), "p": round(result.p_value, 4),
                      "ci": [round(result.ci_low, 4), round(result.ci_high, 4)]}, indent=1))  # fmt: skip


if __name__ == "__main__":
    run_script(main)
