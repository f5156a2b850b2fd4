"""Self-tuning: choose a collection's BM25 k1/b and channel weights on pseudo-queries, never on qrels.

`self_tune` makes pseudo-queries from the documents (evals.pseudo_queries), adds the queries the
collection's jobs judged (model librarians, a user's marks: stores.judgements), scores every (k1, b)
of the BM25 grid on them (the same search loop as the judged grid search, evals.tuning.grid_runs),
then — when the collection has a dense index — the semantic channel's RRF weight against the
lexical one at the chosen k1/b, and last a verifier fitted on the agent's candidates for them
(evals.self_verifier). What each kind of pseudo-query alone would choose is kept beside
the choice, so a report can say which kinds carry the signal; only judged queries
(`CHOOSING_KINDS`: real intents with a person's or a model's judgements) choose, because what the
kinds made from documents alone chose lost on every judged collection measured. A collection
whose jobs judged nothing yet keeps the defaults, and its profile says so. The result is the collection's
self-tuned profile (stores.profiles); `apply` also stores k1/b with the index, so every job and
tool uses them.

Why a grid and not a smoother optimiser: nDCG over a few hundred known-item queries is a step
function of k1/b, and the grid is the one the judged tuning reports, so the two are comparable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evals.metrics import per_query
from evals.pseudo_queries import (
    CHOOSING_KINDS,
    DEFAULT_QUERIES,
    DEFAULT_SEED,
    KINDS,
    PseudoQuerySet,
    from_judgements,
    generate,
)
from evals.tuning import DEFAULT_B_GRID, DEFAULT_K1_GRID, OBJECTIVE, SECONDARY, GridCell, grid_runs, pick_best
from nodes.ranking.fusion import reciprocal_rank_fusion
from stores.collection import Collection, reindex
from stores.errors import QuarryError
from stores.judgements import Judgement, JudgementStore, judgements_path
from stores.profiles import (
    KindChoice,
    SelfProfile,
    documents_signature,
    profile_status,
    save_profile,
    save_pseudo_queries,
)
from stores.readers import ProgressFn

TUNE_DEPTH = 100  # nDCG@20 and MAP of a known-item search are decided in the first hundred
MIN_VERIFIER_QUERIES = 30  # judged queries needed to fit a verifier on them
# Judged queries needed before they choose k1/b and the semantic weight: with 10 marked queries the
# marks simulation lost up to 5.1% (BM25, Cranfield, significant) on held-out queries; from 26 on
# no choice lost more than 3.3% anywhere, none significantly (docs/eval/self-tuning/README.md).
MIN_CHOOSING_QUERIES = 25
SEMANTIC_WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0)  # relative to the lexical channel's 1
Run = dict[str, dict[str, float]]


@dataclass(frozen=True)
class SelfTuneResult:
    profile: SelfProfile
    profile_file: Path
    queries_file: Path


def _without(run: Run, excluded: Mapping[str, Sequence[str]]) -> Run:
    """The run with each query's own source left out where it must be (citation pseudo-queries)."""
    return {q: {d: s for d, s in r.items() if d not in excluded.get(q, ())} for q, r in run.items()}


def _scores(qrels: Mapping[str, Mapping[str, int]], run: Run) -> dict[str, dict[str, float]]:
    rows = per_query(qrels, run)
    return {q: {OBJECTIVE: r[OBJECTIVE], SECONDARY: r[SECONDARY]} for q, r in rows.items()}


def _mean(rows: Mapping[str, Mapping[str, float]], qids: Sequence[str]) -> dict[str, float]:
    return {m: sum(rows[q][m] for q in qids) / max(len(qids), 1) for m in (OBJECTIVE, SECONDARY)}


def _best_weight(scored: Mapping[float, Mapping[str, Mapping[str, float]]], qids: Sequence[str]) -> float:
    """The semantic weight with the best mean objective on `qids`; ties go to the weight nearest 1
    (plain RRF), so a flat objective keeps the default."""
    return max(scored, key=lambda w: (round(_mean(scored[w], qids)[OBJECTIVE], 10), -abs(w - 1.0)))


def self_tune(
    col: Collection,
    *,
    queries: int = DEFAULT_QUERIES,
    seed: int = DEFAULT_SEED,
    kinds: tuple[str, ...] = KINDS,
    k1_grid: Sequence[float] = DEFAULT_K1_GRID,
    b_grid: Sequence[float] = DEFAULT_B_GRID,
    threads: int = 2,
    apply: bool = False,
    verifier: bool = True,
    judgements: Sequence[Judgement] | None = None,
    progress: ProgressFn | None = None,
) -> SelfTuneResult:
    """Tune on pseudo-queries and store the profile (see module doc); `apply` also reindexes;
    `verifier` also fits the profile's own verifier (evals.self_verifier: one in-process agent job
    per pseudo-query it uses). `judgements` replaces the collection's stored ones (None: read them),
    so an evaluation can tune on simulated marks without writing them into a collection."""
    started = time.perf_counter()
    hashes = col.corpus.hashes()
    pseudo = generate(col, queries, seed, kinds, hashes)
    if judgements is None:
        judgements = JudgementStore(judgements_path(col.paths)).all()
    pseudo = pseudo.plus(from_judgements(list(judgements)))
    if not pseudo.queries:
        raise QuarryError(
            "no_pseudo_queries",
            f"no pseudo-queries could be made from {col.name!r}: no document has a title of three words "
            "or a sentence of eight",
            "self-tuning needs documents with titles or running text; keep the defaults for this collection",
        )
    index = col.lucene
    default = (index.meta.k1, index.meta.b)
    settings = sorted({(float(k), float(b)) for k in k1_grid for b in b_grid} | {default})
    texts, qrels, excluded = pseudo.texts(), pseudo.qrels(), pseudo.excluded()
    runs = grid_runs(index, texts, settings, TUNE_DEPTH, threads, progress)
    rows = {s: _scores(qrels, _without(run, excluded)) for s, run in runs.items()}
    qids, by_kind = list(texts), pseudo.by_kind()

    def best_for(ids: Sequence[str]) -> GridCell:
        return pick_best([GridCell(k1, b, _mean(rows[(k1, b)], ids)) for k1, b in settings])

    # Only judged queries choose (evals.pseudo_queries.CHOOSING_KINDS); without any, the defaults
    # stay and the profile says so.
    choosing_set = pseudo.only(CHOOSING_KINDS)
    if len(choosing_set.queries) < MIN_CHOOSING_QUERIES:
        choosing_set = pseudo.only(())  # too few to choose on: the defaults stay
    choosing = [q.qid for q in choosing_set.queries]
    chosen = best_for(choosing) if choosing else GridCell(*default, _mean(rows[default], qids))
    sem_rows = _semantic_rows(col, pseudo, runs[(chosen.k1, chosen.b)], excluded, progress)
    weight = _best_weight(sem_rows, choosing) if sem_rows and choosing else None
    kind_choices = {}
    for kind, ids in by_kind.items():
        own = best_for(ids)
        kind_choices[kind] = KindChoice(
            queries=len(ids),
            k1=own.k1,
            b=own.b,
            semantic_weight=_best_weight(sem_rows, ids) if sem_rows else None,
            ndcg_default=round(_mean(rows[default], ids)[OBJECTIVE], 4),
            ndcg_chosen=round(own.metrics[OBJECTIVE], 4),
        )
    scored_on = choosing or qids
    profile = SelfProfile(
        collection=col.name,
        documents=documents_signature(hashes),
        document_count=len(hashes),
        sample=pseudo.sources,
        k1=chosen.k1,
        b=chosen.b,
        semantic_weight=weight,
        queries=len(qids),
        seed=seed,
        kinds=kind_choices,
        chosen_on=tuple(sorted({q.kind for q in choosing_set.queries})),
        min_judged=MIN_CHOOSING_QUERIES,
        pseudo_default=round(_mean(rows[default], scored_on)[OBJECTIVE], 4),
        pseudo_chosen=round(_mean(rows[(chosen.k1, chosen.b)], scored_on)[OBJECTIVE], 4),
        applied=apply,
        tuned_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 1),
    )
    queries_file = save_pseudo_queries(col.paths, pseudo.payload())
    profile_file = save_profile(col.paths, profile)  # the verifier's jobs search with it
    if verifier and len(choosing) >= MIN_VERIFIER_QUERIES:
        from evals.self_verifier import fit_self_verifier  # lazy: it loads the search graph

        weights, figures = fit_self_verifier(col, choosing_set, progress=progress)
        profile = profile.model_copy(
            update={"verifier": weights, "verifier_pseudo": figures, "seconds": round(time.perf_counter() - started, 1)}
        )
        save_profile(col.paths, profile)
    if apply and (chosen.k1, chosen.b) != default:
        reindex(col.name, home=col.paths.root.parent.parent, k1=chosen.k1, b=chosen.b)
    return SelfTuneResult(profile, profile_file, queries_file)


def _semantic_rows(
    col: Collection, pseudo: PseudoQuerySet, lexical: Run, excluded: Mapping[str, Sequence[str]], progress
) -> dict[float, dict[str, dict[str, float]]]:
    """Per-query scores of lexical+semantic RRF at each semantic weight; {} without a dense index."""
    try:
        dense = col.dense
    except (QuarryError, ImportError):
        return {}
    texts, qrels = pseudo.texts(), pseudo.qrels()
    semantic: dict[str, list[str]] = {}
    for n, (qid, text) in enumerate(texts.items(), start=1):
        semantic[qid] = [h.docid for h in dense.search(text, TUNE_DEPTH)]
        if progress:
            progress("semantic searches", n, len(texts))
    lex = {q: sorted(r, key=lambda d: -r[d]) for q, r in lexical.items()}
    out = {}
    for w in SEMANTIC_WEIGHTS:
        run = {q: dict(reciprocal_rank_fusion([lex[q], semantic[q]], [1.0, w])[:TUNE_DEPTH]) for q in texts}
        out[w] = _scores(qrels, _without(run, excluded))
    return out


def self_profile(
    col: Collection, *, tune_if_missing: bool = True, note: Callable[[str], None] | None = None
) -> SelfProfile:
    """The collection's current self-tuned profile; tuned now (not applied) when it has none or a
    stale one and `tune_if_missing`, else a clear error."""
    status = profile_status(col.paths, col.name, col.corpus.hashes())
    if status is not None and not status.stale:
        return status.profile
    if not tune_if_missing:
        from nodes.job.profile_choice import resolve_profile

        resolve_profile(col.name, "self", status)  # raises the one no_profile / stale_profile error
    if note:
        note(f"self-tuning {col.name} on pseudo-queries (no qrels read)…")
    return self_tune(col).profile


__all__ = [
    "MIN_CHOOSING_QUERIES",
    "MIN_VERIFIER_QUERIES",
    "SEMANTIC_WEIGHTS",
    "TUNE_DEPTH",
    "SelfTuneResult",
    "self_profile",
    "self_tune",
]
