"""Reciprocal Rank Fusion (Cormack et al., 2009), the one fusion rule of the project.

`rrf_score` is the per-document sum the retrieval node keeps up to date as rankings arrive;
`reciprocal_rank_fusion` fuses whole rankings (evaluation systems such as `hybrid`). Both use
1-based ranks and k=60, so the same inputs give the same scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60


def rrf_score(ranks: Mapping[str, int], weights: Mapping[str, float] | None = None, k: int = RRF_K) -> float:
    """Weighted RRF score of one document: `sum_r w_r / (k + rank_r)` over the rankings
    (`ranks`: ranking id → 1-based rank of the document; weights default to 1)."""
    weights = weights or {}
    return sum(weights.get(rid, 1.0) / (k + rank) for rid, rank in ranks.items())


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[str, float]]:
    """Fuse ranked docid lists (best first) into one `[(docid, score)]`, best first.

    A document missing from a ranking gets nothing from it; a docid repeated within one ranking
    counts at its best rank only. Ties are broken by docid, so the output is deterministic.
    """
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    ranks: dict[str, dict[str, int]] = {}
    for i, ranking in enumerate(rankings):
        for rank, docid in enumerate(ranking, start=1):
            ranks.setdefault(docid, {}).setdefault(str(i), rank)
    named = {str(i): float(w) for i, w in enumerate(weights)} if weights is not None else None
    fused = ((docid, rrf_score(r, named, k)) for docid, r in ranks.items())
    return sorted(fused, key=lambda p: (-p[1], p[0]))
