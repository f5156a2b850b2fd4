"""A retrieval system run over a collection's judged queries: the shared ground of tuning and evaluation.

Systems are plain functions `query text -> [(docid, score)]` (`system_ranker`), run on the queries
and judgements of a split (tuning.judged). The learned verifier's training (tuning.train_ranker)
scores systems with them, and so does the evaluation (evals.runner), which imports them from here:
tuning never imports evals. A `*-self` system reads the self-tuned profile (tuning.self_tuning),
so this module sits above it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from nodes.policy.registry import model_policies
from nodes.ranking.fusion import reciprocal_rank_fusion
from stores.collection import Collection
from stores.errors import QuarryError
from stores.lucene import DEFAULT_B, DEFAULT_K1

RankFn = Callable[[str], list[tuple[str, float]]]
# Durable jobs: `agent` (the default policy) and one system per model policy (evals.agent_system).
# `*-self`: the collection's self-tuned profile (tuning.self_tuning: pseudo-queries, no qrels read);
# `agent-self` is the default policy's jobs with `--profile self`.
AGENT_SYSTEMS = ("agent", "agent-self", *model_policies())
SELF_SYSTEMS = ("bm25-self", "hybrid-self", "agent-self")
SYSTEMS = ("bm25", "bm25-tuned", "bm25-self", "dense", "hybrid", "hybrid-self", *AGENT_SYSTEMS)


def dense_index(col: Collection):
    """The collection's dense index (`search(text, k) -> list[Hit]`), or a clear error."""
    if not hasattr(type(col), "dense"):
        raise QuarryError(
            "no_dense",
            "this Quarry build has no dense retrieval (stores.dense / Collection.dense)",
            "use --system bm25, or update Quarry to a version with dense indexes",
        )
    try:
        return col.dense
    except ImportError as exc:
        raise QuarryError(
            "no_dense",
            f"dense retrieval is unavailable: {exc}",
            "install the embedding dependencies (sentence-transformers, chromadb)",
        ) from exc


def baseline_params(k1: float | None, b: float | None) -> tuple[float, float]:
    """`bm25` and `hybrid` mean Anserini's defaults unless --k1/--b say otherwise — never the
    parameters stored with the index, which `quarry tune --apply` may have fitted to these queries."""
    return (DEFAULT_K1 if k1 is None else float(k1)), (DEFAULT_B if b is None else float(b))


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def system_ranker(col: Collection, system: str, k1: float | None, b: float | None, depth: int) -> RankFn:
    lucene = col.lucene
    k1, b = baseline_params(k1, b)
    semantic_weight = 1.0
    if system in SELF_SYSTEMS:
        from tuning.self_tuning import self_profile  # lazy: pseudo-queries load the sentence splitter

        profile = self_profile(col, note=_stderr)
        k1, b, system = profile.k1, profile.b, system.removesuffix("-self")
        semantic_weight = profile.semantic_weight or 1.0
    if system == "bm25":
        return lambda text: [(h.docid, h.score) for h in lucene.search(text, depth, k1=k1, b=b)]
    if system == "dense":
        dense = dense_index(col)
        return lambda text: [(h.docid, h.score) for h in dense.search(text, depth)]
    if system == "hybrid":
        dense = dense_index(col)

        def fused(text: str) -> list[tuple[str, float]]:
            lexical = [h.docid for h in lucene.search(text, depth, k1=k1, b=b)]
            semantic = [h.docid for h in dense.search(text, depth)]
            return reciprocal_rank_fusion([lexical, semantic], [1.0, semantic_weight])[:depth]

        return fused
    raise QuarryError("bad_system", f"unknown system {system!r}", f"choose one of: {', '.join(SYSTEMS)}")
