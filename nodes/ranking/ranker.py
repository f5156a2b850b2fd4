"""The learned verifier: candidate features, and the final order a trained scorer gives them.

PaSaMaster's librarians score candidates with a lightweight model trained on query–paper
judgements; this is the offline version. Every feature is something Quarry already computed for
the candidate: its ranks in each channel's rankings, the fused retrieval score, the verification
score S and p, the per-requirement evidence scores (min / mean / max, coverage), citation links to
the other top candidates, and the document's length — and, for a scorer that must carry to
collections it was not trained on, the same signals as reciprocal ranks 1/(60 + rank) (`RANK_FEATURES`):
rank in the intent's own lexical and semantic searches, best rank in the job's other (feedback)
searches, rank by S and by the best requirement's evidence among the verified, and rank under three
other BM25 settings of the intent's words (k1 1.2–4, b 0.75: near the settings cross-validated tuning chose on the team's
collections — so the leave-one-collection-out figures are not fully blind to them, docs/eval/ranker.md). A rank carries
across collections where a raw score's scale does not. A `Verifier` (weights trained by
`python -m tuning.train_ranker`) scores verified candidates; the final order is by that score,
unverified candidates after them as before. Without a verifier the rule in
`nodes.job.state.ranked_candidates` stands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodes.job.state import Candidate, ranked_candidates

ALT_BM25 = ((1.2, 0.75), (2.0, 0.75), (4.0, 0.75))  # (k1, b) of the alternative lexical rankings
RANK_FEATURES = (
    "lex0_rrf",
    "sem0_rrf",
    "feedback_rrf",
    "s_rrf",
    "evmax_rrf",
    *(f"bm25_k{k1:g}_b{b:g}_rrf" for k1, b in ALT_BM25),
)
FEATURES = (
    "fused_rel",
    "p",
    "S",
    "ev_min",
    "ev_mean",
    "ev_max",
    "ev_coverage",
    "lex_best_inv",
    "sem_best_inv",
    "cit_best_inv",
    "meta_hit",
    "n_rankings",
    "heur_rank_inv",
    "s_rank_inv",
    "fused_rank_inv",
    "cites_top",
    "log_len",
    *RANK_FEATURES,
)
RRF_K = 60  # the reciprocal-rank offset, as in the job's fusion (nodes.ranking.fusion)
ABSENT_RANK = 1001  # a document a ranking does not hold ranks just past a full-depth ranking
HEURISTIC_ORDER = "heuristic rule (RRF of S and retrieval)"  # the final order without a verifier
REACT_ORDER = "RRF of S and (the model's submission, then the job's fused rankings); the model's order if it ranked"
MET = 3.0  # an item counts as covered from this evidence score (0–5) on
TOP_LINKS = 10  # citation links are counted to the current top ten


def _inv(rank: int | None) -> float:
    return 1.0 / (1.0 + rank) if rank else 0.0


def _rrf(rank: int | None) -> float:
    return 1.0 / (RRF_K + (rank or ABSENT_RANK))


@dataclass(frozen=True)
class RankContext:
    """What the rank features need beyond the candidates: the docids of the intent's lexical and
    semantic rankings (full depth), of the job's other rankings, and each verified candidate's
    BM25 score for the intent's words under each `ALT_BM25` setting. Built by
    `nodes.rounds.answer.ranker_inputs` from the job's stored rankings and the collection's index."""

    lexical: Sequence[str] = ()
    semantic: Sequence[str] = ()
    others: Sequence[Sequence[str]] = ()
    alt_bm25: Mapping[tuple[float, float], Mapping[str, float]] | None = None


def _positions(docids: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r, d in enumerate(docids, start=1):
        out.setdefault(d, r)
    return out


def _rank_within(values: Mapping[str, float]) -> dict[str, int]:
    """1-based rank by value, highest first, ties by docid (deterministic)."""
    return {d: r for r, (d, _) in enumerate(sorted(values.items(), key=lambda p: (-p[1], p[0])), start=1)}


def rank_features(pool: Mapping[str, Candidate], context: RankContext | None) -> dict[str, dict[str, float]]:
    """`RANK_FEATURES` of each candidate in `pool` (the verified, not excluded ones)."""
    ctx = context or RankContext()
    lex, sem = _positions(ctx.lexical), _positions(ctx.semantic)
    feedback: dict[str, int] = {}
    for ranking in ctx.others:
        for d, r in _positions(ranking).items():
            if r < feedback.get(d, ABSENT_RANK):
                feedback[d] = r
    by_s = _rank_within({d: float(c.get("score", 0.0)) for d, c in pool.items()})
    by_evmax = _rank_within({d: max((e["score"] for e in c.get("evidence", [])), default=0.0) for d, c in pool.items()})
    alt = {}
    for k1, b in ALT_BM25:
        scores = (ctx.alt_bm25 or {}).get((k1, b))
        alt[f"bm25_k{k1:g}_b{b:g}_rrf"] = _rank_within({d: scores.get(d, 0.0) for d in pool}) if scores else {}
    return {
        d: {
            "lex0_rrf": _rrf(lex.get(d)),
            "sem0_rrf": _rrf(sem.get(d)),
            "feedback_rrf": _rrf(feedback.get(d)),
            "s_rrf": _rrf(by_s[d]),
            "evmax_rrf": _rrf(by_evmax[d]),
            **{name: _rrf(ranks.get(d)) for name, ranks in alt.items()},
        }
        for d in pool
    }


def candidate_features(
    cands: Sequence[Candidate],
    channel_of: Mapping[str, str],
    *,
    neighbours: Mapping[str, set[str]] | None = None,
    lengths: Mapping[str, int] | None = None,
    context: RankContext | None = None,
) -> dict[str, list[float]]:
    """Features of each verified, not excluded candidate (docid → vector in FEATURES order)."""
    pool = {c["docid"]: c for c in cands if c.get("verified_version") and not c.get("excluded")}
    if not pool:
        return {}
    ranked = rank_features(pool, context)
    heuristic = [c["docid"] for c in ranked_candidates(pool)]
    by_s = sorted(pool.values(), key=lambda c: (-c.get("score", 0.0), c["docid"]))
    by_f = sorted(pool.values(), key=lambda c: (-c.get("fused", 0.0), c["docid"]))
    s_rank = {c["docid"]: r for r, c in enumerate(by_s, start=1)}
    f_rank = {c["docid"]: r for r, c in enumerate(by_f, start=1)}
    h_rank = {d: r for r, d in enumerate(heuristic, start=1)}
    best_fused = max((c.get("fused", 0.0) for c in pool.values()), default=0.0) or 1.0
    top = set(heuristic[:TOP_LINKS])
    out: dict[str, list[float]] = {}
    for docid, cand in pool.items():
        scores = [e["score"] for e in cand.get("evidence", [])]
        best: dict[str, int | None] = {"lexical": None, "semantic": None, "citations": None, "metadata": None}
        for sid, rank in cand.get("ranks", {}).items():
            channel = channel_of.get(sid, "lexical")
            current = best.get(channel)
            if current is None or rank < current:
                best[channel] = rank
        links = len((neighbours or {}).get(docid, set()) & (top - {docid}))
        length = (lengths or {}).get(docid, 0)
        values = {
            "fused_rel": cand.get("fused", 0.0) / best_fused,
            "p": cand.get("p", 0.0),
            "S": cand.get("score", 0.0),
            "ev_min": min(scores, default=0.0) / 5,
            "ev_mean": (sum(scores) / len(scores) / 5) if scores else 0.0,
            "ev_max": max(scores, default=0.0) / 5,
            "ev_coverage": (sum(s >= MET for s in scores) / len(scores)) if scores else 0.0,
            "lex_best_inv": _inv(best["lexical"]),
            "sem_best_inv": _inv(best["semantic"]),
            "cit_best_inv": _inv(best["citations"]),
            "meta_hit": 1.0 if best["metadata"] else 0.0,
            "n_rankings": float(len(cand.get("ranks", {}))),
            "heur_rank_inv": _inv(h_rank[docid]),
            "s_rank_inv": _inv(s_rank[docid]),
            "fused_rank_inv": _inv(f_rank[docid]),
            "cites_top": float(links),
            "log_len": math.log1p(length),
            **ranked[docid],
        }
        out[docid] = [float(values[name]) for name in FEATURES]
    return out


@dataclass(frozen=True)
class Verifier:
    """A linear scorer over standardised features (what `tuning.train_ranker` chose by measurement)."""

    name: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Verifier:
        unknown = [f for f in raw["features"] if f not in FEATURES]
        if unknown:
            raise ValueError(f"verifier {raw.get('name')!r} was trained on other features: {', '.join(unknown)}")
        return cls(
            str(raw["name"]),
            tuple(raw["features"]),
            tuple(map(float, raw["mean"])),
            tuple(map(float, raw["scale"])),
            tuple(map(float, raw["weights"])),
            float(raw["bias"]),
        )

    def score(self, vector: Sequence[float]) -> float:
        """The score of one candidate's full feature vector (in FEATURES order); a verifier may
        use a subset of the features."""
        values = [vector[FEATURES.index(f)] for f in self.features]
        return self.bias + sum(
            w * (x - m) / (s or 1.0) for w, x, m, s in zip(self.weights, values, self.mean, self.scale, strict=False)
        )


def uses_alt_bm25(verifier: Verifier) -> bool:
    """Whether `verifier` reads the alternative BM25 rankings (so a job must score its head under
    `ALT_BM25`); the shipped verifier-v3 does not."""
    return any(f.startswith("bm25_") for f in verifier.features)


def final_order(
    candidates: Mapping[str, Candidate],
    channel_of: Mapping[str, str],
    verifier: Verifier | None,
    *,
    neighbours: Mapping[str, set[str]] | None = None,
    lengths: Mapping[str, int] | None = None,
    context: RankContext | None = None,
) -> list[Candidate]:
    """The answer's order: verified candidates by the verifier's score (ties by the heuristic
    order), then the rest as `ranked_candidates` orders them; `ranked_candidates` without one."""
    heuristic = ranked_candidates(candidates)
    if verifier is None:
        return heuristic
    feats = candidate_features(
        list(candidates.values()), channel_of, neighbours=neighbours, lengths=lengths, context=context
    )
    position = {c["docid"]: i for i, c in enumerate(heuristic)}
    score = {d: verifier.score(vector) for d, vector in feats.items()}
    scored = sorted(
        (c for c in heuristic if c["docid"] in score), key=lambda c: (-score[c["docid"]], position[c["docid"]])
    )
    rest = [c for c in heuristic if c["docid"] not in score]
    ordered: list[Candidate] = [{**c, "rank_score": round(score[c["docid"]], 6)} for c in scored]
    return ordered + rest
