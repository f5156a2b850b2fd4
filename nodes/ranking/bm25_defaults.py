"""BM25 (k1, b) for a collection without relevance judgements: a rule on mean document length.

Ranking policy, so it lives with the rankers; the index store (`stores.lucene`) only records
whatever k1/b it is given (its own defaults are Anserini's, `DEFAULT_K1`/`DEFAULT_B`).
Callers: `tuning/grid.py` (untuned collections) and `bench/bench_scale.py`.
"""

from __future__ import annotations

import math

__all__ = ["LONG_DOC_PARAMS", "LONG_DOC_TOKENS", "SHORT_DOC_PARAMS", "SHORT_DOC_TOKENS", "default_bm25_params"]

# Anchors of `default_bm25_params`, from ../shared/DESIGN.md (see its docstring).
SHORT_DOC_TOKENS, SHORT_DOC_PARAMS = 50.0, (2.0, 0.4)  # CACM-like records: ~55 words
LONG_DOC_TOKENS, LONG_DOC_PARAMS = 5000.0, (20.0, 1.0)  # BrowseComp-Plus-like web pages


def default_bm25_params(avg_doc_tokens: float) -> tuple[float, float]:
    """BM25 (k1, b) for a collection without relevance judgements, from its mean document length
    in words (title + text + keywords, what the index sees).

    Reasoning (facts in ../shared/DESIGN.md; nothing here is fitted on any collection's qrels):
    - k1 sets how slowly term frequency saturates. In a short record a term said twice is
      already strong evidence, so a moderate k1 suits it (CACM, ~55 words: grid optimum k1≈2).
      In a long document a topic the reader wants is discussed at length, while passing
      mentions are one-offs; a large k1 keeps rewarding repetition (BrowseComp-Plus web pages,
      thousands of words: k1≈16–25).
    - b sets how much a document is penalised for being long. Short records differ in length
      mostly because some have an abstract and some do not, which is not verbosity, so partial
      normalisation (b≈0.4). Long documents differ by verbosity and by covering many topics, so
      full normalisation (b=1); with a large k1 it is also what keeps raw length from winning.
    Rule: on a log-length scale, t runs from 0 at `SHORT_DOC_TOKENS` to 1 at `LONG_DOC_TOKENS`
    (clamped) through a smoothstep, so the rule is flat at both anchors and continuous between;
    k1 is interpolated geometrically (2 → 20) and b linearly (0.4 → 1.0). Both are
    non-decreasing in length. Values are rounded to 2 decimals so stored settings read well.
    A grid search on judged queries (`quarry tune`) should replace this whenever it can.
    """
    length = max(float(avg_doc_tokens), 1.0)
    x = (math.log(length) - math.log(SHORT_DOC_TOKENS)) / (math.log(LONG_DOC_TOKENS) - math.log(SHORT_DOC_TOKENS))
    x = min(max(x, 0.0), 1.0)
    t = x * x * (3.0 - 2.0 * x)
    (k1_short, b_short), (k1_long, b_long) = SHORT_DOC_PARAMS, LONG_DOC_PARAMS
    k1 = math.exp(math.log(k1_short) + t * (math.log(k1_long) - math.log(k1_short)))
    b = b_short + t * (b_long - b_short)
    return round(k1, 2), round(b, 2)
