"""Agreement and gate statistics: pure functions over arrays and DataFrames, no Django.

Everything here takes plain outcome strings ("PASS", "FAIL", ...) or counts and
returns small frozen dataclasses, so it can be tested with hand-worked numbers
and no database. `calibration/data.py` builds the inputs; `calibration/report.py`
and `calibration/gate.py` arrange the outputs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import krippendorff
import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

PASS = "PASS"
FAIL = "FAIL"
NOT_APPLICABLE = "NOT_APPLICABLE"
ABSTAIN = "ABSTAIN"
ERROR = "ERROR"
BINARY = (PASS, FAIL)

# --- Tiers. PROVISIONAL (set 2026-11-30, to be revisited once we have our own calibration history).
# Where they come from: the background essays (../shared/background/000 and 004) read kappa as
# "below about 0.4 the judge is not usable; 0.4 to 0.6 is usable for trend watching with human spot
# checks; above 0.6 is reasonable for a release gate", which matches Landis & Koch (1977), who call
# 0.41-0.60 "moderate" and 0.61-0.80 "substantial" agreement. Those are conventions, not derived from
# what a false pass costs us; the essays say so themselves.
GATE_MIN_KAPPA = 0.6
TREND_MIN_KAPPA = 0.4

# PROVISIONAL (2026-11-30). Below this many compared items the tier is `insufficient`. Derivation:
# the background asks for 150-200 calibration cases and calls 100 "enough to be informative"; at
# n = 100 with 90% raw agreement and 65% chance agreement (its worked example) the large-sample
# standard error of kappa is about sqrt(po(1-po)/n)/(1-pe) = 0.086, so the 95% interval spans
# roughly +-0.17, already wider than the 0.2-wide trend band. Fewer items cannot place a criterion
# in a tier with any confidence.
MIN_N = 100

# Human agreement below this means the gold itself is noisy: a judge cannot be calibrated against
# people who do not agree with each other. Same provenance as TREND_MIN_KAPPA (provisional).
HUMAN_MIN_KAPPA = TREND_MIN_KAPPA

# Confidence intervals for kappa: percentile bootstrap over items. With two binary raters an item is
# one of four cells (true pass, false pass, false fail, true fail), so resampling n items with
# replacement is exactly a multinomial draw of the four cell counts with the observed cell
# proportions; we draw the counts directly, which costs O(B) instead of O(B * n) and gives the same
# distribution. B = 2000 keeps the Monte Carlo error of a 2.5% percentile well under 0.01 for
# n >= 100 (Efron & Tibshirani 1993, ch. 13 recommend B >= 1000 for percentile intervals). The seed
# is fixed so the same data always gives the same interval; a replicate whose kappa is undefined
# (every resampled item in one agreeing cell) is left out of the percentiles.
BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20261130
CI_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Finding:
    """A warning shown next to a number: a stable code for programs and a sentence for people."""

    code: str
    message: str

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Agreement:
    """Cohen's kappa of a rater against a reference over the items both call PASS or FAIL.

    Cells are named from the rater's side: false_pass = rater PASS, reference FAIL (for the judge
    against gold, the dangerous one). Rates and agreements are None when n = 0; kappa is None when
    it is undefined (n = 0, or both sides gave one and the same outcome on every item).
    """

    n: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    observed_agreement: float | None
    expected_agreement: float | None
    rater_pass_rate: float | None
    reference_pass_rate: float | None
    true_pass: int
    false_pass: int
    true_fail: int
    false_fail: int


@dataclass(frozen=True)
class HumanAgreement:
    """The human ceiling for one criterion: annotator A vs B, and every annotation together."""

    n: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    alpha: float | None


@dataclass(frozen=True)
class WilsonBound:
    n: int
    successes: int
    lower: float | None
    upper: float | None


def kappa_from_cells(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """Cohen's kappa for arrays of 2x2 cell counts (NaN where undefined).

    Written in integer arithmetic as (n * agree - S) / (n^2 - S), S = sum over outcomes of the
    product of marginal counts, so "undefined" (n^2 == S) is an exact test, not a float compare.
    """
    tp, fp, fn, tn = (np.asarray(x, dtype=np.int64) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    chance = (tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)
    denominator = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (n * (tp + tn) - chance) / denominator
    return np.where(denominator == 0, np.nan, kappa)


def bootstrap_kappa_ci(
    tp: int,
    fp: int,
    fn: int,
    tn: int,
    *,
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CI_CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of kappa over items (see BOOTSTRAP_REPLICATES for the method)."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.array([tp, fp, fn, tn], dtype=float) / n, size=replicates)
    kappas = kappa_from_cells(draws[:, 0], draws[:, 1], draws[:, 2], draws[:, 3])
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(kappas, [tail, 1.0 - tail])
    return (float(low), float(high))


# The four (rater, reference) pairs of a 2x2 table, for scikit-learn with cell counts as weights.
_RATER = np.array([PASS, PASS, FAIL, FAIL], dtype=object)
_REFERENCE = np.array([PASS, FAIL, PASS, FAIL], dtype=object)


def sklearn_kappa(tp: int, fp: int, fn: int, tn: int) -> float:
    """scikit-learn's Cohen's kappa of the items behind these cells.

    Kappa depends on the items only through their 2x2 table, so the four distinct (rater, reference)
    pairs weighted by their counts give scikit-learn exactly the table the items would: the same
    number, without sorting hundreds of thousands of strings (the property tests check it against
    scikit-learn on the raw item lists).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an undefined kappa must never pass as a number
        return float(
            cohen_kappa_score(_REFERENCE, _RATER, labels=list(BINARY), sample_weight=np.array([tp, fp, fn, tn]))
        )


def cohen_agreement(rater: pd.Series | np.ndarray, reference: pd.Series | np.ndarray) -> Agreement:
    """Kappa with its bootstrap interval, both agreements, pass rates and the confusion cells.

    Both inputs hold only PASS or FAIL (the caller filters the other outcomes out and counts them).
    """
    rater = np.asarray(rater, dtype=object)
    reference = np.asarray(reference, dtype=object)
    r_pass, g_pass = rater == PASS, reference == PASS
    tp = int(np.sum(r_pass & g_pass))
    fp = int(np.sum(r_pass & ~g_pass))
    fn = int(np.sum(~r_pass & g_pass))
    tn = int(np.sum(~r_pass & ~g_pass))
    n = tp + fp + fn + tn
    if n == 0:
        return Agreement(0, None, None, None, None, None, None, 0, 0, 0, 0)
    observed = (tp + tn) / n
    rater_rate, reference_rate = (tp + fp) / n, (tp + fn) / n
    expected = rater_rate * reference_rate + (1 - rater_rate) * (1 - reference_rate)
    kappa: float | None = None
    ci = None
    if not (tp == n or tn == n):  # otherwise expected agreement is 1 and kappa is 0/0
        kappa = sklearn_kappa(tp, fp, fn, tn)
        ci = bootstrap_kappa_ci(tp, fp, fn, tn)
    return Agreement(n, kappa, ci, observed, expected, rater_rate, reference_rate, tp, fp, tn, fn)


def krippendorff_alpha_nominal(value_counts: np.ndarray) -> float | None:
    """Krippendorff's alpha (nominal) from a units x values matrix of counts (any number of coders).

    Units with fewer than two values are not pairable and drop out, as in Krippendorff's definition.
    None when it is undefined: no pairable unit, or every pairable value the same (no disagreement
    is possible, so expected disagreement is 0).
    """
    counts = np.asarray(value_counts, dtype=float)
    if counts.ndim != 2 or counts.size == 0:
        return None
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.shape[0] == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    return float(krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"))


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for a confidence level (0.95 -> 1.95996...)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(successes: int, n: int, confidence: float) -> WilsonBound:
    """Wilson score interval (Wilson 1927), two-sided at `confidence`.

    For a gate the lower end matters: it is what the pass rate is, at worst, with the stated
    confidence, so a small eval set cannot pass by luck (35/35 clears 0.90 at 95%, 34/34 does not).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return WilsonBound(0, 0, None, None)
    z = z_for(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return WilsonBound(n, successes, centre - half, centre + half)


def tier_for(kappa: float | None, n: int) -> str:
    """gate / trend / unusable from kappa; insufficient when n < MIN_N or kappa is undefined."""
    if kappa is None or n < MIN_N:
        return "insufficient"
    if kappa >= GATE_MIN_KAPPA:
        return "gate"
    if kappa >= TREND_MIN_KAPPA:
        return "trend"
    return "unusable"


def fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"
