"""The forecast of a jury plan (issue 38): the labels the jury's own test (audit_predictor.jury_decide_each_label)
will take to decide, simulated from the gold so far.

audit_forecast.audit_forecast models gold by the judge's verdict (two strata) and replays the one-bit test. A jury
reads several signals, and its test gains from all of them; replaying the one-bit test forecast more labels than
the jury needs. Here both halves are the jury's: gold is modelled by strata of the jury's score, and the replay is
the jury's test on its signals.

The strata: the signals' mean per output (fixed before any label: the signals are frozen at the plan's start, and
the mean takes no weight from the labels), cut at its quantiles into SCORE_BINS bins, or one stratum per value where
it takes no more values than that (so one 0/1 signal gives the verdict's two strata), plus one stratum for the
outputs without any usable signal. Each stratum's gold is audit_forecast.posterior_gold's (Beta(1, 1) priors, N/A
as audit_forecast handles it).

What that assumes: within a stratum the gold does not follow the signals. The simulated gold then follows the
jury's score only from band to band, so the simulated tests gain less from the signals than the real one (most where
one signal carries the jury and the mean dilutes it). Measured with each stratum's true rate (the posterior's width
left out) on a known-truth jury of signals of r 0.45, 0.7 and 0.3 with gold (test_jury_forecast.py): 25 to 27% more
labels than the jury takes, where the one-bit replay asked 80 to 100% more. Like audit_forecast's, the forecast is
pessimistic early: its posterior still holds pass rates near the minimum, which take much of the candidate to
decide, and they weigh in its mean.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from calibration.stats.audit_forecast import AuditForecast, forecast_of, posterior_gold
from calibration.stats.audit_predictor import checked, jury_decide_each_label
from calibration.stats.audit_stats import MIN_GOLD, Floats, Ints
from calibration.stats.jury_replay import jury_decisions_forward

# Strata of the jury's score. Measured with each stratum's true rate on the known-truth jury of
# tests/calibration/stats/test_jury_forecast.py (2,000 outputs, signals of r 0.45, 0.7, 0.3, minimum 0.64; the jury
# takes 195 and 201 labels on two candidates): 2, 3, 5 and 8 bins and a stratum per value (10) replay 261/308,
# 350/279, 222/232, 254/226 and 227/227 labels. So 5: more bins gain nothing and split the labels thinner (each
# bin's Beta(1, 1) prior pulls a thin bin's rate towards 1/2).
SCORE_BINS = 5


def jury_strata(f: Floats, usable: ArrayLike | None = None, bins: int = SCORE_BINS) -> tuple[Ints, int]:
    """Each output's stratum (N,) and how many there are: bins of the signals' mean F (N, K) among the `usable`
    outputs (those with at least one signal; default all), numbered from the lowest score, and last the stratum of
    the rest. A score of few values gets one stratum per value."""
    if bins < 1:
        raise ValueError("bins must be >= 1")
    f = np.asarray(f, dtype=float)
    N = f.shape[0]
    usable = np.ones(N, dtype=bool) if usable is None else np.asarray(usable, dtype=bool)
    if usable.shape != (N,):
        raise ValueError(f"usable needs one flag per output ({N}), got shape {usable.shape}")
    score = f.mean(axis=1)
    values = np.unique(score[usable])
    if values.size <= bins:
        inner, n_bins = np.searchsorted(values, score), values.size
    else:
        cuts = np.unique(np.quantile(score[usable], np.arange(1, bins) / bins))
        inner, n_bins = np.searchsorted(cuts, score, side="right"), cuts.size + 1
    return np.where(usable, inner, n_bins), n_bins + 1


def jury_forecast(
    *,
    gold: Iterable[float | None],
    f: Floats,
    minimum: float,
    usable: ArrayLike | None = None,
    confidence: float = 0.95,
    k: int = 25,
    n_sims: int = 1000,
    seed: int = 0,
    min_gold: int = MIN_GOLD,
    bins: int = SCORE_BINS,
) -> AuditForecast:
    """A Monte Carlo forecast of the jury plan's decision (audit_forecast's figures), seeded and deterministic.

    gold: the labeled prefix in the plan's order (1, 0, -1 N/A, None/NaN pending); f: the signals of all N outputs
    in that order (N, K), as the tests read them (`audit_predictor.predictor(...).scores`); `usable`: which outputs
    have at least one signal (default all). Each simulation draws each stratum's rates (`jury_strata`), then the
    gold of every output without settled gold (pending ones included: they will settle), and runs the jury's test
    along the plan's remaining order. An already decided audit gets the settled forecast. As good as the strata
    describe the outputs; it assumes the pending items settle before the labels that follow them.
    """
    if k < 0 or n_sims < 1:
        raise ValueError("k must be >= 0 and n_sims >= 1")
    if not 0 <= minimum <= 1:
        raise ValueError(f"minimum must be between 0 and 1, got {minimum}")
    g, f = checked(gold=gold, f=np.asarray(f, dtype=float), confidence=confidence)
    current = jury_decide_each_label(
        gold=g[None, :], f=f, minimum=minimum, confidence=confidence, min_gold=min_gold
    ).decided[0]
    if current:
        return AuditForecast.settled(k=k, decided=current, n_sims=n_sims)
    strata, n_strata = jury_strata(f, usable, bins)
    rng = np.random.default_rng(seed)
    drawn = posterior_gold(gold=g, strata=strata, n_strata=n_strata, n_sims=n_sims, rng=rng)
    # The labels before the first pending one are every simulation's, and decide nothing (the plan is undecided).
    shared = int(np.argmax(np.r_[np.isnan(g), True]))
    decisions, at_label = jury_decisions_forward(
        drawn=drawn, f=f, shared=shared, minimum=minimum, confidence=confidence, min_gold=min_gold
    )
    return forecast_of(decisions=decisions, at_label=at_label, n=g.size, k=k)
