"""Paired comparisons of systems on the same queries: the mean difference, its 95% bootstrap
confidence interval and a paired randomization test (scipy.stats, seeded, so reports reproduce).

Per query, the difference of one metric between two systems; the randomization test swaps the two
systems' values within each query at random (10,000 times) to ask how often a mean difference at
least this large arises by chance; the interval resamples queries with replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

RESAMPLES = 10_000
SEED = 0
ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    system: str
    baseline: str
    metric: str
    queries: int
    system_mean: float
    baseline_mean: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def relative(self) -> float:
        return self.diff / self.baseline_mean if self.baseline_mean else 0.0

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    def summary(self, digits: int = 3) -> str:
        """One line: "n=52 before 0.590 after 0.594 diff +0.004 [95% CI -0.010, +0.019] p=0.558"."""
        d = digits
        return (
            f"n={self.queries} before {self.baseline_mean:.{d}f} after {self.system_mean:.{d}f} "
            f"diff {self.diff:+.{d}f} [95% CI {self.ci_low:+.{d}f}, {self.ci_high:+.{d}f}] p={self.p_value:.4f}"
        )


def compare(
    system: str,
    per_system: Mapping[str, Mapping[str, float]],
    baseline: str,
    per_baseline: Mapping[str, Mapping[str, float]],
    metric: str,
) -> Comparison | None:
    """`system` against `baseline` on the queries both have (None with fewer than two)."""
    qids = sorted(set(per_system) & set(per_baseline))
    if len(qids) < 2:
        return None
    x = np.array([per_system[q].get(metric, 0.0) for q in qids])
    y = np.array([per_baseline[q].get(metric, 0.0) for q in qids])
    diffs = x - y
    if np.allclose(diffs, 0.0):
        return Comparison(system, baseline, metric, len(qids), float(x.mean()), float(y.mean()), 0.0, 0.0, 0.0, 1.0)
    test = stats.permutation_test(
        (x, y),
        lambda a, b: np.mean(a - b),
        permutation_type="samples",
        n_resamples=RESAMPLES,
        alternative="two-sided",
        random_state=SEED,
    )
    ci = stats.bootstrap(
        (diffs,), np.mean, confidence_level=0.95, n_resamples=RESAMPLES, method="percentile", random_state=SEED
    ).confidence_interval
    return Comparison(
        system,
        baseline,
        metric,
        len(qids),
        float(x.mean()),
        float(y.mean()),
        float(diffs.mean()),
        float(ci.low),
        float(ci.high),
        float(test.pvalue),
    )
