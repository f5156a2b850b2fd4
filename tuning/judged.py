"""A collection's judged queries: the queries and relevance judgements of one split.

What every system is scored on — the BM25 grid search (tuning.grid), the learned verifier's training
(tuning.train_ranker) and the evaluation (evals.runner). It imports nothing of tuning.
"""

from __future__ import annotations

from collections.abc import Set

from stores.collection import Collection
from stores.errors import QuarryError


def pick_split(col: Collection, split: str | None) -> str:
    splits = col.corpus.splits()
    if not splits:
        raise QuarryError(
            "no_qrels",
            f"collection {col.name!r} has no relevance judgements",
            "ingest a BEIR folder with qrels/<split>.tsv to evaluate",
        )
    if split is None:
        return "test" if "test" in splits else splits[0]
    if split not in splits:
        raise QuarryError("bad_split", f"no split {split!r} in {col.name!r}", f"choose one of: {', '.join(splits)}")
    return split


def judged_queries(
    col: Collection, split: str | None, limit: int | None = None, only: Set[str] | None = None
) -> tuple[str, list[str], dict[str, str], dict[str, dict[str, int]]]:
    """(split, judged query ids in a stable order, query texts, qrels) — the queries every
    system and the BM25 grid search are scored on; `only` keeps those ids (a held-out half)."""
    split = pick_split(col, split)
    qrels = col.corpus.qrels(split)
    texts = col.corpus.queries()
    qids = sorted((q for q in qrels if q in texts and (only is None or q in only)), key=lambda q: (len(q), q))
    if limit:
        qids = qids[:limit]
    if not qids:
        raise QuarryError("no_queries", f"split {split!r} has no judged queries with text", "check queries.jsonl")
    return split, qids, texts, qrels
