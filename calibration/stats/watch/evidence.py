"""The watch's evidence: betting tests of "the rate has stayed at or above a bound", restarted on a schedule.

Pure numpy, no Django. Every function works on S parallel copies at once (arrays of shape (S,)): one copy for
a watch, a grid of bounds for the band, thousands of simulated streams for the tests and the bench.

The null is "mu_t >= bound at every step t", where mu_t is the conditional mean of the step's observation x_t
given the past (the production pass rate, or the judge's TPR or TNR); mu_t may change over time as long as
it stays at or above the bound. A betting process multiplies its capital by 1 + beta_t (bound - x_t) at each
step, with beta_t >= 0 chosen before x_t (predictable) and small enough that the factor is non-negative for
every value x_t can take. Under the null each factor has conditional mean 1 + beta_t (bound - mu_t) <= 1, so
the capital is a non-negative supermartingale starting at 1, whatever the bets and however mu_t moves.

A single such process erodes while the rate sits above the bound: every positive bet loses on average, and
after a long quiet period the capital may be so low that a real drop takes long to show. So the evidence
is a mixture over start times (an e-process for the same null): weight FIRST_WEIGHT on the process started
at step 0, and (1 - FIRST_WEIGHT) / (k (k + 1)) on the k-th restart, a process started afresh at capital 1
after every `restart_every` steps (k = 1, 2, ...). The weights sum to 1 over unlimited time; a process not
yet started holds its weight as cash (capital 1). Each started process is a non-negative supermartingale
under the null, so the weighted sum M_t is one too, with M_0 = 1, and Ville's inequality gives
P(sup_t M_t >= 1/alpha) <= alpha: the false-alarm probability over unlimited monitoring is at most alpha.
This is a test restarted on a schedule with alpha spent across the restarts, the restarts added rather than
Bonferroni-split, so a restart costs nothing while the first process is still healthy. (E-detectors, Shin, Ramdas
& Rinaldo 2023, weigh the processes started at every step equally, which bounds the average time to a false
alarm; summable weights bound the probability of any.)

What a restart costs: a drop after the k-th restart is seen by that restart with a threshold
1 / (alpha w_k) instead of 1 / alpha, i.e. log(2 k (k + 1)) more log-capital to earn (about 9.9 at k = 100,
11.3 at k = 200), plus on average half a restart period before it starts. The process started at step 0 pays
only log 2, but it pays whatever it lost during the quiet period. The bets (tracks.py) are 0 while the recent
labels say the rate is above the bound, so in the common case the first process has barely eroded and the
alarm comes from it.

All the processes share the same bets, so the mixture is updated in O(1): with R_t the weighted capital of
the started processes, R <- R + w_k when the k-th restart begins, then R <- R * factor; M_t = R_t + the
weight of the restarts not begun. The change-point estimate is that of CUSUM: the process started right
after step j has log capital log_s_t - log_s_j (log_s the log capital of the process started at 0 with
weight 1), so the start with most evidence now is the step where log_s was at its minimum. With bets of 0
most of the time, log_s is flat for long stretches, and a small lucky gain early in one would date every later
change before it; so the change is dated at the last step where log_s was within SINCE_TOLERANCE of its
minimum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

# The weight of the process started at step 0; the restarts share the rest.
FIRST_WEIGHT = 0.5

# Bets are truncated at this share of the largest bet that keeps the capital non-negative for every value the
# next observation can take (as the audit's, audit_stats.BET_SHARE): one unlucky observation cannot take more
# than half the capital.
BET_SHARE = 0.5

# The change-point estimate's slack, in log-capital (module docstring): within a factor 1.35 of the lowest
# capital. Measured on a pass rate falling from 0.82 to 0.72 (minimum 0.80, judge TPR 0.90 TNR 0.80, p = 0.01,
# 300 streams; the estimate minus the true change, in audit labels, after 2,000 / 10,000 quiet labels): with no
# slack the median was 71 / 71 late but 10% / 14% of streams were dated more than 100 labels early (a small
# lucky gain early in a quiet stream dates every later change before it); 0.1 gave 86 / 95 late and 6% / 9%;
# 0.3 gives 110 / 119 late and 2% / 4%. Late by about a window's length is the lesser error.
SINCE_TOLERANCE = 0.3


def restart_weight(k: Floats) -> Floats:
    """The weight of the k-th restart (k >= 1): (1 - FIRST_WEIGHT) / (k (k + 1)), summing to 1 - FIRST_WEIGHT."""
    return (1.0 - FIRST_WEIGHT) / (k * (k + 1.0))


def unstarted_weight(starts: Floats) -> Floats:
    """The weight of the restarts not begun after `starts` of them: (1 - FIRST_WEIGHT) / (starts + 1)."""
    return (1.0 - FIRST_WEIGHT) / (starts + 1.0)


@dataclass(frozen=True)
class Evidence:
    """S copies of one mixture's state (module docstring); every field has shape (S,)."""

    log_r: Floats  # log of the started processes' weighted capital, R
    starts: Floats  # restarts begun so far, k
    log_s: Floats  # log capital of the process started at step 0 (weight 1): for the change-point estimate
    low: Floats  # its minimum so far (0 at step 0)
    low_at: Floats  # the last step at which it was near that minimum: the change is estimated right after it
    steps: Floats  # steps so far (audit labels, or gold items of one class)
    clock: Floats  # a second count of the same time (outputs, for the pass rate)
    low_clock: Floats  # the clock at low_at

    def to_json(self) -> dict[str, list[float]]:
        return {f.name: [float(x) for x in getattr(self, f.name)] for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(**{f.name: np.asarray(data[f.name], dtype=float) for f in fields(cls)})


def new_evidence(size: int) -> Evidence:
    zeros = np.zeros(size)
    return Evidence(
        log_r=np.full(size, math.log(FIRST_WEIGHT)),
        starts=zeros,
        log_s=zeros.copy(),
        low=zeros.copy(),
        low_at=zeros.copy(),
        steps=zeros.copy(),
        clock=zeros.copy(),
        low_clock=zeros.copy(),
    )


def log_capital(ev: Evidence) -> Floats:
    """log M_t: the started processes' weighted capital plus the cash of those not begun."""
    return np.logaddexp(ev.log_r, np.log(unstarted_weight(ev.starts)))


def begin_restarts(ev: Evidence, due: Bools) -> Evidence:
    """Begin the next restart where `due` (before the step's factor is applied)."""
    k = ev.starts + due
    added = np.logaddexp(ev.log_r, np.log(restart_weight(np.maximum(k, 1.0))))
    return replace(ev, log_r=np.where(due, added, ev.log_r), starts=k)


def apply_factor(ev: Evidence, log_factor: Floats, *, steps: Floats | float, clock: Floats | float) -> Evidence:
    """Multiply every process's capital by exp(log_factor) (the step's betting factor, or a batch's product),
    and move the time on by `steps` (0 for a batch of outputs without a label) and `clock`."""
    log_s = ev.log_s + log_factor
    now = ev.steps + steps
    clock_now = ev.clock + clock
    low = np.minimum(ev.low, log_s)
    near = log_s <= low + SINCE_TOLERANCE
    return replace(
        ev,
        log_r=ev.log_r + log_factor,
        log_s=log_s,
        low=low,
        low_at=np.where(near, now, ev.low_at),
        low_clock=np.where(near, clock_now, ev.low_clock),
        steps=now,
        clock=clock_now,
    )


def kelly_bet(*, drift: Floats, variance: Floats, cap: Floats) -> Floats:
    """The bet for an expected drift of bound - x per step (0 where the drift is not positive): drift / (variance +
    drift^2), the Kelly bet for a bounded observation, truncated at `cap`."""
    gain = np.maximum(drift, 0.0)
    bet: Floats = np.minimum(gain / (variance + gain**2), cap)
    return bet


def log_factor(beta: Floats, side: Floats, bound: Floats, x: Floats | float) -> Floats:
    """log(1 + beta side (bound - x)): side +1 tests "mu_t >= bound" (evidence of a drop below it), side -1 tests
    "mu_t <= bound" (evidence of a rise above it, for the band's lower edge). The bets' caps keep the argument
    at or above 1 - BET_SHARE; the floor only guards against rounding."""
    return np.log(np.maximum(1.0 + beta * side * (bound - x), 1e-300))
