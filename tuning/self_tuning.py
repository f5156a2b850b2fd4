"""Self-tuning: choose a collection's BM25 k1/b and channel weights on pseudo-queries, never on qrels.

`self_tune` makes pseudo-queries from the documents (tuning.pseudo_queries; cloze queries searched
in an altered copy, tuning.cloze_queries), adds the queries the collection's jobs judged (model
librarians, a user's marks: stores.judgements), scores every (k1, b) of the BM25 grid on them (the
same search loop as the judged grid search, tuning.grid.grid_runs), then — when the collection has
a dense index — the semantic channel's RRF weight against the lexical one at the chosen k1/b, and
last a verifier fitted on the agent's candidates for them (tuning.self_verifier). What each kind of
pseudo-query alone would choose is kept beside the choice, so a report can say which kinds carry
the signal. Who chooses (docs/eval/self-tuning/README.md has the measurements behind each rule):
- judged queries (`CHOOSING_KINDS`: real intents with a person's or a model's judgements), from
  `MIN_CHOOSING_QUERIES` on, choose everything;
- else cloze queries choose k1/b alone, by `nearest_within_noise`: what they chose for the
  semantic weight lost on hybrid, and title, sentence and citation queries (known-item searches)
  chose settings that lost on every judged collection measured;
- else the defaults stay, and the profile says so.
The result is the collection's self-tuned profile (stores.profiles); `apply` also stores k1/b with
the index, so every job and tool uses them. Without `apply` nothing in use changes: a profile
applied before (and not stale) stays as it is, and the new one is kept beside it as a candidate.

Tuning holds the collection's writer lock (stores.locks) from start to end: it reads one version
throughout, and another writer's commit could prune that version under its searchers; a writer
that comes meanwhile is told the collection is busy, as is a tune that comes while one writes.
Its cloze copy is scratch in QUARRY_HOME (stores.scratch), swept if a tune is killed.

Why a grid and not a smoother optimiser: nDCG over a few hundred known-item queries is a step
function of k1/b, and the grid is the one the judged tuning reports, so the two are comparable.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from nodes.ranking.fusion import reciprocal_rank_fusion
from stores.collection import Collection, reindex
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.home import current_version
from stores.judgements import Judgement, JudgementStore, judgements_path
from stores.locks import writer_lock
from stores.lucene import forget_searchers
from stores.profiles import (
    KindChoice,
    SelfProfile,
    candidate_path,
    documents_signature,
    profile_status,
    save_profile,
    save_pseudo_queries,
)
from stores.scratch import scratch_dir
from tuning.cloze_queries import KIND as CLOZE
from tuning.cloze_queries import MIN_QUERIES as MIN_CLOZE_QUERIES
from tuning.cloze_queries import cloze_queries
from tuning.grid import DEFAULT_B_GRID, DEFAULT_K1_GRID, OBJECTIVE, SECONDARY, GridCell, grid_runs, pick_best
from tuning.metrics import per_query
from tuning.pseudo_queries import (
    CHOOSING_KINDS,
    DEFAULT_QUERIES,
    DEFAULT_SEED,
    KINDS,
    PseudoQuery,
    PseudoQuerySet,
    from_judgements,
    generate,
)

TUNE_DEPTH = 100  # nDCG@20 and MAP of a known-item search are decided in the first hundred
MIN_VERIFIER_QUERIES = 30  # judged queries needed to fit a verifier on them
# Judged queries needed before they choose k1/b and the semantic weight: with 10 marked queries the
# marks simulation lost up to 5.1% (BM25, Cranfield, significant) on held-out queries; from 26 on
# no choice lost more than 3.3% anywhere, none significantly (docs/eval/self-tuning/README.md).
MIN_CHOOSING_QUERIES = 25
SEMANTIC_WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0)  # relative to the lexical channel's 1
ALL_KINDS = (*KINDS, CLOZE)
Run = dict[str, dict[str, float]]
Rows = dict[str, dict[str, float]]  # query id -> metric -> value


@dataclass(frozen=True)
class SelfTuneResult:
    profile: SelfProfile
    profile_file: Path  # the candidate's file when `in_use` was kept
    queries_file: Path
    in_use: SelfProfile | None = None  # the applied profile a tune without `apply` left in place


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
    kinds: tuple[str, ...] = ALL_KINDS,
    k1_grid: Sequence[float] = DEFAULT_K1_GRID,
    b_grid: Sequence[float] = DEFAULT_B_GRID,
    threads: int = 2,
    apply: bool = False,
    verifier: bool = True,
    judgements: Sequence[Judgement] | None = None,
    progress: ProgressFn | None = None,
) -> SelfTuneResult:
    """Tune on pseudo-queries and store the profile (see module doc); `apply` also reindexes;
    `verifier` also fits the profile's own verifier (tuning.self_verifier: one in-process agent job
    per pseudo-query it uses). `judgements` replaces the collection's stored ones (None: read them),
    so an evaluation can tune on simulated marks without writing them into a collection."""
    with writer_lock(col.paths.root, col.name, who="self-tuning in process", reentrant=True):
        if current_version(col.paths.root) != col.version:  # a writer committed since `col` was opened
            col = Collection(col.name, _home(col))
        _drop_old_scratch(col)
        return _tune_locked(
            col,
            queries=queries,
            seed=seed,
            kinds=kinds,
            k1_grid=k1_grid,
            b_grid=b_grid,
            threads=threads,
            apply=apply,
            verifier=verifier,
            judgements=judgements,
            progress=progress,
        )


def _home(col: Collection) -> Path:
    return col.paths.root.parent.parent


def _drop_old_scratch(col: Collection) -> None:
    """Remove cloze copies that tunes killed before scratch moved to QUARRY_HOME left in the
    collection's runs folder (no other tune runs: this one holds the writer lock)."""
    if col.paths.runs_dir.is_dir():
        for left in col.paths.runs_dir.glob("cloze-*"):
            shutil.rmtree(left, ignore_errors=True)


def _in_use(col: Collection, hashes: dict[str, str]) -> SelfProfile | None:
    """The applied profile jobs use now (applied and not stale), which only `apply` may replace."""
    status = profile_status(col.paths, col.name, hashes)
    return status.profile if status is not None and status.profile.applied and not status.stale else None


# Long: one tuning pass; its steps share the grid's rows and it stores last (module at the 400-line cap).
def _tune_locked(
    col: Collection,
    *,
    queries: int,
    seed: int,
    kinds: tuple[str, ...],
    k1_grid: Sequence[float],
    b_grid: Sequence[float],
    threads: int,
    apply: bool,
    verifier: bool,
    judgements: Sequence[Judgement] | None,
    progress: ProgressFn | None,
) -> SelfTuneResult:
    """`self_tune` with the collection's writer lock held. What it stores is written last, once
    everything was chosen (and applied, with `apply`), so a failure leaves the old state whole."""
    started = time.perf_counter()
    hashes = col.corpus.hashes()
    pseudo = generate(col, queries, seed, tuple(k for k in kinds if k in KINDS), hashes)
    if judgements is None:
        judgements = JudgementStore(judgements_path(col.paths)).all()
    pseudo = pseudo.plus(from_judgements(list(judgements)))
    index = col.lucene
    default = (index.meta.k1, index.meta.b)
    settings = sorted({(float(k), float(b)) for k in k1_grid for b in b_grid} | {default})
    texts, qrels, excluded = pseudo.texts(), pseudo.qrels(), pseudo.excluded()
    runs = grid_runs(index, texts, settings, TUNE_DEPTH, threads, progress)
    rows = {s: _scores(qrels, _without(run, excluded)) for s, run in runs.items()}
    cloze: tuple[PseudoQuery, ...] = ()
    if CLOZE in kinds:
        cloze, cloze_rows = _cloze_rows(col, queries, seed, hashes, settings, threads, progress)
        rows = {s: rows[s] | cloze_rows[s] for s in settings}
    every = PseudoQuerySet(
        (*pseudo.queries, *cloze), seed, pseudo.sources | {q.source: hashes[q.source] for q in cloze}
    )
    if not every.queries:
        raise QuarryError(
            "no_pseudo_queries",
            f"no pseudo-queries could be made from {col.name!r}: no document has a title of three words "
            "or a sentence of eight",
            "self-tuning needs documents with titles or running text; keep the defaults for this collection",
        )
    qids, by_kind = [q.qid for q in every.queries], every.by_kind()

    def best_for(ids: Sequence[str]) -> GridCell:
        return pick_best([GridCell(k1, b, _mean(rows[(k1, b)], ids)) for k1, b in settings])

    # Judged queries choose everything from MIN_CHOOSING_QUERIES on (tuning.pseudo_queries.CHOOSING_KINDS);
    # below that, cloze queries choose k1/b alone (tuning.cloze_queries), and with neither the
    # defaults stay and the profile says so.
    choosing_set = pseudo.only(CHOOSING_KINDS)
    if len(choosing_set.queries) < MIN_CHOOSING_QUERIES:
        choosing_set = pseudo.only(())  # too few to choose on
    choosing = [q.qid for q in choosing_set.queries]
    cloze_ids = [q.qid for q in cloze]
    chosen_on: tuple[str, ...]
    if choosing:
        chosen, chosen_on = best_for(choosing), ("judged",)
    elif len(cloze_ids) >= MIN_CLOZE_QUERIES:
        k1, b = nearest_within_noise(rows, settings, cloze_ids, default)
        chosen, chosen_on = GridCell(k1, b, _mean(rows[(k1, b)], cloze_ids)), (CLOZE,)
    else:
        chosen, chosen_on = GridCell(*default, _mean(rows[default], qids)), ()
    sem_rows = _semantic_rows(col, pseudo, runs[(chosen.k1, chosen.b)], excluded, progress)
    weight = _best_weight(sem_rows, choosing) if sem_rows and choosing else None
    kind_choices = {}
    for kind, ids in by_kind.items():
        own = best_for(ids)
        kind_choices[kind] = KindChoice(
            queries=len(ids),
            k1=own.k1,
            b=own.b,
            semantic_weight=_best_weight(sem_rows, ids) if sem_rows and kind != CLOZE else None,
            ndcg_default=round(_mean(rows[default], ids)[OBJECTIVE], 4),
            ndcg_chosen=round(own.metrics[OBJECTIVE], 4),
        )
    scored_on = choosing or (cloze_ids if chosen_on == (CLOZE,) else qids)
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
        chosen_on=chosen_on,
        min_judged=MIN_CHOOSING_QUERIES,
        pseudo_default=round(_mean(rows[default], scored_on)[OBJECTIVE], 4),
        pseudo_chosen=round(_mean(rows[(chosen.k1, chosen.b)], scored_on)[OBJECTIVE], 4),
        applied=apply,
        tuned_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 1),
    )
    if verifier and len(choosing) >= MIN_VERIFIER_QUERIES:
        from tuning.self_verifier import fit_self_verifier  # lazy: it loads the search graph

        weights, figures = fit_self_verifier(col, choosing_set, profile, progress=progress)  # its jobs search with it
        profile = profile.model_copy(
            update={"verifier": weights, "verifier_pseudo": figures, "seconds": round(time.perf_counter() - started, 1)}
        )
    if apply and (chosen.k1, chosen.b) != default:
        reindex(col.name, home=_home(col), k1=chosen.k1, b=chosen.b)  # the lock is ours: it enters again
    in_use = None if apply else _in_use(col, hashes)
    queries_file = save_pseudo_queries(col.paths, every.payload())
    profile_file = save_profile(col.paths, profile, candidate=in_use is not None)
    if in_use is None:
        candidate_path(col.paths).unlink(missing_ok=True)  # this profile supersedes any candidate
    return SelfTuneResult(profile, profile_file, queries_file, in_use)


def nearest_within_noise(
    rows: Mapping[tuple[float, float], Rows],
    settings: Sequence[tuple[float, float]],
    ids: Sequence[str],
    default: tuple[float, float],
) -> tuple[float, float]:
    """The setting nearest `default` (in steps of the grid) among those whose mean objective on
    `ids` is within one standard error of the best's (paired, per query); ties to the higher mean.

    Why not the best itself: near its top the objective of a few hundred pseudo-queries is flat,
    and its argmax wandered between seeds to settings that lost on real queries (scifact-train: k1 3,
    b 1, −1.6% for BM25); the one-standard-error rule keeps the stored setting unless the evidence
    against it is clear, and still moved CACM and Cranfield towards their real optima
    (docs/eval/self-tuning/README.md, fourth measurement)."""
    ks, bs = sorted({k for k, _ in settings}), sorted({b for _, b in settings})
    means = {s: _mean(rows[s], ids)[OBJECTIVE] for s in settings}
    best = max(settings, key=lambda s: (means[s], -_steps(s, default, ks, bs)))

    def within(s: tuple[float, float]) -> bool:
        diffs = [rows[best][q][OBJECTIVE] - rows[s][q][OBJECTIVE] for q in ids]
        mu = sum(diffs) / len(diffs)
        var = sum((d - mu) ** 2 for d in diffs) / max(len(diffs) - 1, 1)
        return mu <= math.sqrt(var / len(diffs)) + 1e-12

    return min((s for s in settings if within(s)), key=lambda s: (_steps(s, default, ks, bs), -means[s], s))


def _steps(s: tuple[float, float], to: tuple[float, float], ks: list[float], bs: list[float]) -> int:
    return abs(ks.index(s[0]) - ks.index(to[0])) + abs(bs.index(s[1]) - bs.index(to[1]))


def _cloze_rows(
    col: Collection,
    n: int,
    seed: int,
    hashes: Mapping[str, str],
    settings: Sequence[tuple[float, float]],
    threads: int,
    progress: ProgressFn | None,
) -> tuple[tuple[PseudoQuery, ...], dict[tuple[float, float], Rows]]:
    """Cloze queries and their per-query scores at every setting, searched in the altered copy
    (tuning.cloze_queries), which is built in a scratch folder of QUARRY_HOME and removed."""
    if len(hashes) < MIN_CLOZE_QUERIES:  # too few documents to make enough: no copy to build
        return (), {s: {} for s in settings}
    with scratch_dir(_home(col), "cloze-") as scratch:
        if progress:
            progress("cloze copy", 0, None)
        made = cloze_queries(col, scratch / "lucene", n, seed, hashes)
        if progress:
            progress("cloze copy", made.documents, made.documents)
        texts = {q.qid: q.text for q in made.queries}
        qrels = {q.qid: dict.fromkeys(q.relevant, 1) for q in made.queries}
        try:
            runs = grid_runs(made.index, texts, settings, TUNE_DEPTH, threads, _prefixed("cloze ", progress))
        finally:
            forget_searchers()  # the copy's cached searchers would hold the removed folder open
    return made.queries, {s: _scores(qrels, run) if texts else {} for s, run in runs.items()}


def _prefixed(prefix: str, progress: ProgressFn | None) -> ProgressFn | None:
    """`progress` with its stage names prefixed, so a second grid reports as a phase of its own."""
    if progress is None:
        return None
    report = progress
    return lambda stage, done, total: report(prefix + stage, done, total)


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
    "ALL_KINDS",
    "MIN_CHOOSING_QUERIES",
    "MIN_VERIFIER_QUERIES",
    "SEMANTIC_WEIGHTS",
    "TUNE_DEPTH",
    "SelfTuneResult",
    "nearest_within_noise",
    "self_profile",
    "self_tune",
]
