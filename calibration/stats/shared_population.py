"""Known-truth candidates of k gating criteria, for the shared audit's validity tests and its bench
(tests/calibration/stats/test_audit_shared.py, bench/audit_shared.py). Pure numpy, no Django.

Each output has a latent quality per criterion, a_j = rho z + sqrt(1 - rho^2) e_j (z shared by the criteria, e_j
its own), and its gold on criterion j is PASS for exactly the round(theta_j N) outputs with the highest a_j: the
truth is known exactly. The judge's score on criterion j is b_j = c a_j + sqrt(1 - c^2) (s w + sqrt(1 - s^2) e'_j),
w a judge noise shared by the criteria, and it passes exactly the round(rate_j N) highest. rho correlates the
criteria's gold, s their judge's errors, c each judge with its gold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.stats.audit_stats import Floats, Ints


@dataclass(frozen=True)
class SharedPopulation:
    gold: Floats  # (k, N) 1 / 0
    verdicts: Floats  # (k, N) 1 / 0

    @property
    def thetas(self) -> Floats:
        means: Floats = self.gold.mean(axis=1)
        return means

    def phi(self) -> Floats:
        """Each judge's correlation with its gold."""
        return np.array([np.corrcoef(g, v)[0, 1] for g, v in zip(self.gold, self.verdicts, strict=True)])

    def gold_correlation(self) -> float:
        """The correlation of the first two criteria's gold."""
        return float(np.corrcoef(self.gold[0], self.gold[1])[0, 1])

    def orders(self, count: int, seed: int) -> Ints:
        """`count` uniformly random orders of the N outputs (count, N): the shared orders every criterion reads."""
        N = self.gold.shape[1]
        return np.argsort(np.random.default_rng(seed).random((count, N)), axis=1)


def _top(values: Floats, count: int) -> Floats:
    out = np.zeros(values.size)
    out[np.argsort(-values, kind="stable")[:count]] = 1.0
    return out


def shared_population(
    *,
    N: int,
    thetas: Sequence[float],
    judge_rates: Sequence[float],
    rho: float,
    judge_shared: float,
    judge_weight: float = 0.75,
    seed: int = 0,
) -> SharedPopulation:
    """k = len(thetas) criteria on N outputs (the module's docstring): rho the gold's correlation between criteria
    (0 independent), judge_shared the share of the judges' noise they have in common, judge_weight c."""
    if len(thetas) != len(judge_rates):
        raise ValueError("one judge rate per criterion")
    rng = np.random.default_rng(seed)
    k = len(thetas)
    z = rng.standard_normal(N)
    w = rng.standard_normal(N)
    gold, verdicts = [], []
    for j in range(k):
        a = rho * z + np.sqrt(1 - rho**2) * rng.standard_normal(N)
        noise = judge_shared * w + np.sqrt(1 - judge_shared**2) * rng.standard_normal(N)
        b = judge_weight * a + np.sqrt(1 - judge_weight**2) * noise
        gold.append(_top(a, round(thetas[j] * N)))
        verdicts.append(_top(b, round(judge_rates[j] * N)))
    return SharedPopulation(np.stack(gold), np.stack(verdicts))
