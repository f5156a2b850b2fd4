"""Citation expansion: how the citation graph's relations are combined into one ranking.

The graph and its relations (references, cited-by, co-citation, coupling, personalised
PageRank) belong to `stores.citations.CitationGraph`; the formula combining them and its
weights are ranking policy and live here. Results use the store's conventions: `(docid, score)`
sorted by `(-score, docid)`, scores rounded, seeds never returned, cut to `limit` (None = all).
"""

from __future__ import annotations

from collections.abc import Mapping

from stores.citations import CitationGraph, Scored, ranked, seed_ids, seed_weights

__all__ = ["LINK_BONUS", "PPR_ALPHA", "SHARED_BONUS", "expand", "ppr"]

PPR_ALPHA = 0.85  # PageRank damping: the walk restarts at the seeds with probability 1 - alpha
LINK_BONUS = 0.01  # expand(): per unit of seed weight, for a direct link to or from that seed
SHARED_BONUS = 0.005  # expand(): per unit of seed weight, times co-citation + coupling cosine


def ppr(
    graph: CitationGraph, seeds: list[str] | Mapping[str, float], limit: int | None = None, alpha: float = PPR_ALPHA
) -> Scored:
    """Personalised PageRank from `seeds` (a list, or docid → weight), seeds excluded
    (`CitationGraph.ppr` with this module's damping)."""
    return graph.ppr(seeds, limit, alpha=alpha)


def expand(
    graph: CitationGraph, seeds: list[str] | Mapping[str, float], limit: int | None = None, alpha: float = PPR_ALPHA
) -> Scored:
    """Citation expansion of a set of scored seeds, for the retrieval node.

    With w_s the seed weights normalised to sum 1 (non-positive weights dropped; seeds
    without links ignored), every document d reachable from a seed is scored

        score(d) = PPR(d) + Σ_s w_s · ( LINK_BONUS   · [d cites s or s cites d]
                                      + SHARED_BONUS · (cocite_cos(s, d) + coupling_cos(s, d)) )

    where PPR is personalised PageRank (damping `alpha`) from the weighted seeds and the cosines
    are the normalised co-citation and bibliographic-coupling scores (each in [0, 1]). The
    candidate set is the union of references, citing papers, co-cited and coupled documents of
    every seed and the PPR support (the seeds' connected components). Seeds are excluded.
    """
    weights = {d: w for d, w in seed_weights(seeds).items() if graph.has(d)}
    if not weights:
        return []
    total = sum(weights.values())
    weights = {d: w / total for d, w in weights.items()}
    scores: dict[str, float] = dict(graph.ppr_scores(weights, alpha))
    for s, w in weights.items():
        for d in graph.linked(s):
            scores[d] = scores.get(d, 0.0) + w * LINK_BONUS
        for d, cos in graph.co_cited(s, normalize=True) + graph.coupled(s, normalize=True):
            scores[d] = scores.get(d, 0.0) + w * SHARED_BONUS * cos
    return ranked(scores, seed_ids(seeds), limit)
