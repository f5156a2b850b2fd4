"""The Markdown of the learned verifier's leave-one-collection-out measurement (docs/eval/ranker.md).

`tuning.train_ranker` computes the figures and decides what ships; this only turns them into the
report's table and prose (the scorers, features, shipping rule and how to reproduce the run), so
the long text of the report does not crowd the training code.
"""

from __future__ import annotations

import os
from typing import Any

from nodes.ranking.ranker import FEATURES, RANK_FEATURES
from tuning.ranker_scorers import ASCENT_STEPS, SHRINK_STEPS, UNLEAKED


def report(
    results: list[dict[str, Any]],
    labels: list[str],
    gain: dict[str, float],
    heuristic_gain: float,
    best: str,
    datasets: dict[str, dict[str, Any]],
) -> str:
    """The leave-one-collection-out table as Markdown (docs/eval/ranker.md)."""
    return (
        "\n".join(
            _table(results, labels)
            + _findings(results, labels, gain, heuristic_gain, best)
            + _method(results)
            + _reproduce(datasets)
        )
        + "\n"
    )


def _table(results: list[dict[str, Any]], labels: list[str]) -> list[str]:
    """The title, what a row is, and a row per held-out collection."""
    lines = [
        "# Learned verifier: leave-one-collection-out",
        "",
        "Each row: a scorer trained on the other two collections re-orders the verified head (≈100 "
        "candidates) of the heuristic agent's run on the held-out collection. Relative gain over hybrid "
        "RRF(BM25, MiniLM) on the same queries; paired randomization test p, 95% bootstrap interval of the "
        "difference. `agent` is the heuristic order the verifier would replace.",
        "",
        "| held out | metric | queries | hybrid | agent (heuristic) | " + " | ".join(labels) + " |",
        "|---|---|---|---|---|" + "---|" * len(labels),
    ]
    for r in results:
        cells = []
        for label in labels:
            c = r[f"{label}_vs_hybrid"]
            cells.append(
                f"{r[f'agent_{label}']:.4f} ({c['relative']:+.1%}, p={c['p']:.3f}, "
                f"CI [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}])"
            )
        lines.append(
            f"| {r['held_out']} | {r['metric']} | {r['queries']} | {r['hybrid']:.4f} | "
            f"{r['agent_heuristic']:.4f} ({r['agent_heuristic'] / r['hybrid'] - 1:+.1%}) | " + " | ".join(cells) + " |"
        )
    return lines


def _findings(
    results: list[dict[str, Any]], labels: list[str], gain: dict[str, float], heuristic_gain: float, best: str
) -> list[str]:
    """The mean and worst gains, the scorer chosen and whether it met the target, the in-sample bound."""
    target = all(r[f"{best}_vs_hybrid"]["relative"] >= 0.03 for r in results)
    return [
        "",
        f"Mean relative gain over hybrid: heuristic order {heuristic_gain:+.2%}; "
        + "; ".join(f"{k} {v:+.2%}" for k, v in gain.items())
        + ".",
        "",
        "Worst held-out collection, relative to hybrid: heuristic order "
        f"{min(r['agent_heuristic'] / r['hybrid'] - 1 for r in results):+.2%}; "
        + "; ".join(f"{label} {min(r[f'{label}_vs_hybrid']['relative'] for r in results):+.2%}" for label in labels)
        + ".",
        "",
        f"Chosen by its worst held-out collection (the mean breaks ties), among the scorers whose held-out "
        f"figures are blind ({', '.join(results[0]['blind'])}; the others use the alternative BM25 rankings, "
        f"whose k1 came from tuning on these collections): **{best}**. Target (≥ +3% over hybrid on every held-out collection): "
        + (
            "met."
            if target
            else "**not met** — "
            + ", ".join(f"{r['held_out']} {r[f'{best}_vs_hybrid']['relative']:+.1%}" for r in results)
            + "."
        ),
        "",
        "In-sample bound (not a result: `ascent_ranks` fitted on the held-out collection's own judgements "
        "and scored on the same queries — the most its grid of weights could give there): "
        + ", ".join(f"{r['held_out']} {r['bound']['relative']:+.1%}" for r in results if "bound" in r)
        + ". Where it is below +3%, this kind of scorer misses the target on that collection whatever it "
        "is trained on (a scorer of another kind may not: compare the other columns).",
        "",
    ]


def _method(results: list[dict[str, Any]]) -> list[str]:
    """The scorers, the features, the learned weights per fold and the shipping rule."""
    return [
        "Scorers: `logistic` — pointwise logistic regression (scikit-learn) on all features; "
        "`logistic_transferable` — the same on the raw features whose scale does not depend on the "
        "collection; `logistic_ranks` — the same on the reciprocal-rank features; `ascent_ranks` — a linear "
        "scorer on the reciprocal-rank features fitted by coordinate ascent on nDCG (listwise, weights "
        f"from {{{', '.join(f'{x:g}' for x in ASCENT_STEPS)}}}, each training collection weighing the same); "
        "`ascent_unleaked` — the same without the three alternative BM25 rankings (their k1 values came from "
        f"tuning on these collections' judgements): {', '.join(UNLEAKED)}; `ascent_unleaked_shrunkλ` — "
        "its weights (normalised to sum 1) pulled towards hybrid fusion of the verified head, "
        "(1 − λ)·w + λ·(lex0_rrf + sem0_rrf)/2, for λ in "
        f"{{{', '.join(f'{x:g}' for x in SHRINK_STEPS)}}} (tuning.ranker_scorers.shrink); "
        "`lambdamart` — LightGBM LambdaMART on all features, only if lightgbm is installed (not shippable: "
        "the verifier file holds a linear model).",
        "",
        "Features: " + ", ".join(FEATURES[: len(FEATURES) - len(RANK_FEATURES)]) + "; reciprocal-rank features "
        "1/(60 + rank): " + ", ".join(RANK_FEATURES) + " (nodes/ranking/ranker.py says what each is).",
        "",
        *(
            f"`{label}` weights per fold (held out → weights learned on the other two): "
            + "; ".join(
                f"{r['held_out']}: " + ", ".join(f"{k} {v:g}" for k, v in r["weights"][label].items() if v)
                for r in results
            )
            + "."
            for label in ("ascent_ranks", "ascent_unleaked")
        ),
        "",
        "Shipping rule (tuning.train_ranker.shipping_decision; since 2026-12-03 by the worst held-out "
        "collection, before by the mean): the scorer whose worst held-out gain over hybrid is highest is "
        "written to stores/data/verifier.json if it is linear, does better at worst than the heuristic "
        "order at worst, and is significantly worse than the heuristic order on no held-out collection "
        "(paired randomization test, p < 0.05); otherwise `--write` removes the file and jobs keep the "
        "heuristic order.",
        "",
    ]


def _reproduce(datasets: dict[str, dict[str, Any]]) -> list[str]:
    """The command that makes the measurement, and the versions and corpora it ran on."""
    import platform

    import sklearn

    return [
        "## Reproduce",
        "",
        "```",
        "python -m tuning.train_ranker --home H   # H holds cacm, cranfield, scifact-train, BM25 defaults, --dense",
        "```",
        "",
        "Feature collection: "
        + ", ".join(f"{n} {d['seconds']} s" for n, d in datasets.items())
        + f". scikit-learn {sklearn.__version__}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores. Corpus fingerprints: "
        + ", ".join(f"{n} {d['fingerprint'][:12]}" for n, d in datasets.items())
        + ".",
    ]
