"""The pass rate corrected for the judge's own errors (Rogan-Gladen, with a bootstrap over the calibration set's
cells and the candidate), the gate's bound beside the observed Wilson one (metrics.wilson_interval). It assumes
the judge errs on the candidate as it did on the calibration set."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration.stats.metrics import (
    BOOTSTRAP_SEED,
    CI_CONFIDENCE,
    percentile_interval,
    resample_patterns,
    wilson_interval,
)

# The corrected pass rate's bound decides a release against a threshold, so its Monte Carlo error must be
# far below the margins a lead sets. Measured (tests/calibration/gate/test_gate_corrected.py): with a 100-item
# calibration,
# the lower bound's spread over seeds is about 0.010 at 2,000 replicates, enough to flip a decision near
# the threshold, and about 0.003 at 20,000 (it falls as 1/sqrt(B)). Each replicate is a handful of
# numbers, so 20,000 cost tens of milliseconds, once per gating criterion per gate call.
CORRECTED_REPLICATES = 20_000


@dataclass(frozen=True)
class CorrectedPassRate:
    """The candidate's pass rate corrected for the judge's own errors (Rogan & Gladen 1978).

    `observed` is the judge's pass rate on the candidate; `tpr` and `tnr` are the judge's, measured on
    the calibration set (gold is the truth); `estimate` = (observed + tnr - 1) / (tpr + tnr - 1), clipped
    to [0, 1]; `lower` and `upper` the two-sided interval at `confidence` (see corrected_pass_rate).
    Everything but `observed` is None when the correction is impossible; `reason` says why.
    """

    observed: float | None
    tpr: float | None
    tnr: float | None
    estimate: float | None
    lower: float | None
    upper: float | None
    reason: str = ""


def rogan_gladen(observed: ArrayLike | None, tpr: ArrayLike, tnr: ArrayLike) -> NDArray[np.float64]:
    """(observed + tnr - 1) / (tpr + tnr - 1), clipped to [0, 1]; NaN where tpr + tnr <= 1 (a judge no
    better than chance, whose verdicts say nothing about the truth) or an input is undefined."""
    observed, tpr, tnr = (np.asarray(x, dtype=float) for x in (observed, tpr, tnr))
    denominator = tpr + tnr - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        corrected = np.clip((observed + tnr - 1.0) / denominator, 0.0, 1.0)
    return np.where(denominator > 0, corrected, np.nan)


def corrected_pass_rate(
    passes: int,
    n: int,
    calibration: tuple[int, int, int, int],
    confidence: float = CI_CONFIDENCE,
    *,
    replicates: int = CORRECTED_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
) -> CorrectedPassRate:
    """The Rogan-Gladen corrected pass rate of a candidate with `passes` of `n` PASS verdicts, from the
    judge's calibration cells (true pass, false pass, false fail, true fail), with an interval that
    carries both uncertainties.

    The interval is a percentile bootstrap over both samples: each replicate resamples the calibration
    items (a multinomial draw of the four cells, as for kappa: tpr* and tnr*) and, independently, the
    candidate's items (passes* ~ Binomial(n, passes / n)), and corrects passes* / n with tpr* and tnr*;
    replicates where tpr* + tnr* <= 1 are left out. A bootstrap of the candidate collapses when every
    verdict is PASS (every resample is 35 of 35), so the interval is widened to hold the correction of
    the Wilson interval of the observed pass rate too (the correction is increasing in it, with the
    calibration's point tpr and tnr): the lower bound is never above what the Wilson bound alone gives,
    and with a perfect calibration it is exactly the Wilson bound (35 of 35 clears 0.90, 34 of 34 does
    not, as without the correction).
    """
    observed = passes / n if n else None
    tp, fp, fn, tn = (int(x) for x in calibration)
    if n == 0:
        return CorrectedPassRate(None, None, None, None, None, None, "no PASS/FAIL verdicts on the candidate")
    if tp + fn == 0 or tn + fp == 0:
        missing = "PASS" if tp + fn == 0 else "FAIL"
        return CorrectedPassRate(
            observed,
            None,
            None,
            None,
            None,
            None,
            f"the calibration has no gold {missing} item to measure the judge on",
        )
    tpr, tnr = tp / (tp + fn), tn / (tn + fp)
    estimate = float(rogan_gladen(observed, tpr, tnr))
    if math.isnan(estimate):
        return CorrectedPassRate(
            observed,
            tpr,
            tnr,
            None,
            None,
            None,
            f"on the calibration the judge is no better than chance (passes {tpr:.0%} of good outputs, catches "
            f"{tnr:.0%} of failures: together not above 100%), so its verdicts cannot be corrected",
        )
    cells = resample_patterns(np.array([tp, fp, fn, tn]), replicates=replicates, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr_star = cells[:, 0] / (cells[:, 0] + cells[:, 2])
        tnr_star = cells[:, 3] / (cells[:, 3] + cells[:, 1])
    candidate = np.random.default_rng(seed + 1).binomial(n, passes / n, size=replicates) / n  # n > 0 here
    interval = percentile_interval(rogan_gladen(candidate, tpr_star, tnr_star), confidence)
    wilson = wilson_interval(passes, n, confidence)
    floor, ceiling = (float(rogan_gladen(x, tpr, tnr)) for x in (wilson.lower, wilson.upper))
    lower = min(floor, interval[0]) if interval else floor
    upper = max(ceiling, interval[1]) if interval else ceiling
    return CorrectedPassRate(observed, tpr, tnr, estimate, lower, upper)
