"""Agreement and gate statistics: pure functions over arrays and DataFrames, no Django.

Everything here takes plain outcome strings ("PASS", "FAIL", ...) or counts and
returns small frozen dataclasses, so it can be tested with hand-worked numbers
and no database. `calibration/data/frames.py` builds the inputs; `calibration/report/rows.py`
and `calibration/gate/release_gate.py` arrange the outputs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

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

# The mean pairwise kappa is the human ceiling only if the pairs it averages share enough items. With
# n shared items a pair's kappa has a large-sample standard error of about sqrt(po(1 - po)/n)/(1 - pe),
# 0.8/sqrt(n) at 80% raw and 50% chance agreement: 0.25 at n = 10, as wide as the whole trend band. A
# mean of pairs sharing a median of fewer items (crowd labels, where people change from item to item:
# QAGS pairs share a median of 2-3 sentences) averages noise, and its bootstrap duplicates those few
# items; Krippendorff's alpha pools every item and is the ceiling then. PROVISIONAL (2026-12-01).
PAIR_MIN_ITEMS = 10

# Items people labeled but that have no gold yet (ties, splits, a lone label, no unanimity) are left out
# of every figure, and they are not a random sample: ties are the hard items, where a judge most likely
# errs. Left out items can move raw agreement by up to their share s, and kappa by up to s / (1 - pe):
# at the background's 65% chance agreement, s = 5% moves kappa by up to 0.14, enough to cross the
# 0.2-wide trend band's edge from its middle. Above this share the report says so. PROVISIONAL
# (2026-12-01).
MAX_UNSETTLED_SHARE = 0.05

# A judge that disagrees with itself cannot agree with anyone: with several samples per item, its
# self-agreement (Krippendorff's alpha over its PASS/FAIL samples) below the human ceiling's bar means
# the verdicts are partly a coin toss. Same provenance as TREND_MIN_KAPPA (provisional).
JUDGE_SELF_MIN_ALPHA = TREND_MIN_KAPPA

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

    def as_dict(self) -> dict[str, str]:
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
class PairwiseKappa:
    """The mean of Cohen's kappa over every pair of annotators (people) who labeled the same items.

    `pairs` is how many pairs have a defined kappa and are averaged; `undefined_pairs` shared items but
    gave one and the same outcome on all of them (kappa 0/0), and are left out; `items` is how many items
    have at least one such pair (the units the interval resamples); `median_items` is the median number
    of items an averaged pair shares.
    """

    kappa: float | None
    kappa_ci: tuple[float, float] | None
    pairs: int
    undefined_pairs: int
    items: int
    median_items: float = 0.0

    @property
    def sparse(self) -> bool:
        """Most pairs share too few items for their kappas to mean much (see PAIR_MIN_ITEMS)."""
        return self.median_items < PAIR_MIN_ITEMS


@dataclass(frozen=True)
class HumanAgreement:
    """The human ceiling for one criterion.

    Order-free figures: the mean pairwise Cohen's kappa over annotator pairs and Krippendorff's alpha
    over every PASS/FAIL annotation, each with a bootstrap interval over items. Beside them, annotator A
    vs B (`n`, `kappa`, `kappa_ci`) over only the items exactly two people labeled PASS/FAIL (then which
    of them is "A" cannot matter: kappa is symmetric); `over_two` items had more and are left out of it.
    """

    n: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    alpha: float | None
    alpha_ci: tuple[float, float] | None = None
    pairwise: PairwiseKappa | None = None
    over_two: int = 0

    @property
    def pairwise_kappa(self) -> float | None:
        return self.pairwise.kappa if self.pairwise else None

    @property
    def pairwise_kappa_ci(self) -> tuple[float, float] | None:
        return self.pairwise.kappa_ci if self.pairwise else None

    @property
    def pairs(self) -> int:
        return self.pairwise.pairs if self.pairwise else 0

    @property
    def pairs_undefined(self) -> int:
        return self.pairwise.undefined_pairs if self.pairwise else 0

    @property
    def pair_median_items(self) -> float:
        return self.pairwise.median_items if self.pairwise else 0.0

    @property
    def ceiling_source(self) -> str:
        return self.ceiling[0]

    @property
    def ceiling_value(self) -> float | None:
        return self.ceiling[1]

    @property
    def ceiling_ci(self) -> tuple[float, float] | None:
        return self.ceiling[2]

    @property
    def ceiling(self) -> tuple[str, float | None, tuple[float, float] | None]:
        """The order-free figure the warnings and the chart use: (name, value, interval).

        The mean pairwise kappa, on the same scale as the judge's kappa against gold; Krippendorff's
        alpha where no pair of annotators has a defined kappa, or where the pairs share too few items
        for their kappas to mean anything (crowd labels, where people change from item to item).
        """
        if self.pairwise is not None and self.pairwise.kappa is not None and not self.pairwise.sparse:
            return ("mean pairwise kappa", self.pairwise.kappa, self.pairwise.kappa_ci)
        return ("alpha", self.alpha, self.alpha_ci)


def kappa_from_cells(
    tp: NDArray[np.integer[Any]],
    fp: NDArray[np.integer[Any]],
    fn: NDArray[np.integer[Any]],
    tn: NDArray[np.integer[Any]],
) -> NDArray[np.float64]:
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


def resample_patterns(
    counts: NDArray[np.integer[Any]], *, replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED
) -> NDArray[np.integer[Any]]:
    """Bootstrap draws over items, given how many items show each distinct pattern: (replicates, patterns).

    Items with the same pattern (a 2x2 cell, a PASS/FAIL count, a set of annotator-pair cells) are
    interchangeable for the statistic, so resampling n items with replacement is exactly a multinomial
    draw of the pattern counts with the observed proportions (see BOOTSTRAP_REPLICATES).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, counts / n, size=replicates)


def percentile_interval(values: NDArray[np.float64], confidence: float = CI_CONFIDENCE) -> tuple[float, float] | None:
    """The two-sided percentile interval of bootstrap replicates, NaN (undefined) replicates left out."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return (float(low), float(high))


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
    if tp + fp + fn + tn == 0:
        return None
    draws = resample_patterns(np.array([tp, fp, fn, tn]), replicates=replicates, seed=seed)
    return percentile_interval(kappa_from_cells(draws[:, 0], draws[:, 1], draws[:, 2], draws[:, 3]), confidence)


# The four (rater, reference) pairs of a 2x2 table, for scikit-learn with cell counts as weights.
_RATER = np.array([PASS, PASS, FAIL, FAIL], dtype=object)
_REFERENCE = np.array([PASS, FAIL, PASS, FAIL], dtype=object)


# A page after a new label asks again for the kappas of every criterion whose cells that label did not move
# (and Home, the overview and the report for the same judge's): scikit-learn's checks cost milliseconds a call.
@lru_cache(maxsize=4096)
def sklearn_kappa(tp: int, fp: int, fn: int, tn: int) -> float:
    """scikit-learn's Cohen's kappa of the items behind these cells (remembered per cells: a pure function).

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


def cohen_agreement(rater: pd.Series | NDArray[np.object_], reference: pd.Series | NDArray[np.object_]) -> Agreement:
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


@dataclass(frozen=True)
class Rates:
    """The confusion matrix named for people, PASS as the positive class (gold is the truth).

    tpr = true pass / gold PASS: the share of good outputs the judge passes; tnr = true fail / gold
    FAIL: the share of failures it catches (1 - tnr is the false-pass rate). Balanced accuracy is their
    mean; F1 = 2 tp / (2 tp + fp + fn) for PASS. None where undefined (no gold PASS for tpr, no gold
    FAIL for tnr, both for balanced accuracy, no PASS on either side for F1). Intervals at 95%: Wilson
    for tpr and tnr (each a proportion of a known count of gold PASS or FAIL items, so the interval stays
    honest at 0% and 100%), the percentile bootstrap over items for the other two (resample_patterns
    over the four cells, the kappa interval's draws).
    """

    tpr: float | None
    tpr_ci: tuple[float, float] | None
    tnr: float | None
    tnr_ci: tuple[float, float] | None
    balanced_accuracy: float | None
    balanced_accuracy_ci: tuple[float, float] | None
    f1: float | None
    f1_ci: tuple[float, float] | None


def _ratio(numerator: ArrayLike, denominator: ArrayLike) -> NDArray[np.float64]:
    numerator, denominator = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator == 0, np.nan, numerator / denominator)


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


# A cell count, or one per bootstrap draw.
_Counts = int | NDArray[np.integer[Any]]


def classification_rates(tp: int, fp: int, fn: int, tn: int, *, confidence: float = CI_CONFIDENCE) -> Rates:
    """TPR, TNR, balanced accuracy and F1 of a judge against gold, with intervals (see Rates)."""

    def rates(
        tp: _Counts, fp: _Counts, fn: _Counts, tn: _Counts
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        tpr, tnr = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
        return tpr, tnr, (tpr + tnr) / 2.0, _ratio(2 * tp, 2 * tp + fp + fn)

    tpr, tnr, ba, f1 = (_none_if_nan(float(x)) for x in rates(tp, fp, fn, tn))

    def wilson(successes: int, n: int) -> tuple[float, float] | None:
        w = wilson_interval(successes, n, confidence)
        return None if w.lower is None or w.upper is None else (w.lower, w.upper)

    ba_ci = f1_ci = None
    if tp + fp + fn + tn:
        draws = resample_patterns(np.array([tp, fp, fn, tn]))
        _, _, ba_draws, f1_draws = rates(draws[:, 0], draws[:, 1], draws[:, 2], draws[:, 3])
        ba_ci = percentile_interval(ba_draws, confidence) if ba is not None else None
        f1_ci = percentile_interval(f1_draws, confidence) if f1 is not None else None
    return Rates(tpr, wilson(tp, tp + fn), tnr, wilson(tn, tn + fp), ba, ba_ci, f1, f1_ci)


def krippendorff_alpha_nominal(value_counts: NDArray[np.integer[Any]]) -> float | None:
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


def alpha_from_counts(
    pass_counts: NDArray[np.integer[Any]], fail_counts: NDArray[np.integer[Any]], weights: NDArray[np.integer[Any]]
) -> NDArray[np.float64]:
    """Krippendorff's nominal alpha for two values, vectorized over rows of `weights` (NaN: undefined).

    `pass_counts`, `fail_counts`: per pattern of a unit (how many coders said PASS, FAIL; at least two in
    all); `weights`: (replicates, patterns) how many units show each pattern. From the coincidence
    matrix, alpha = 1 - (n - 1) * D / (n_PASS * n_FAIL), D = sum over units of p * f / (m - 1)
    (Krippendorff 2011, nominal, two values); the tests check it against the krippendorff package.
    """
    p = np.asarray(pass_counts, dtype=float)
    f = np.asarray(fail_counts, dtype=float)
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    n_pass, n_fail = w @ p, w @ f
    n = n_pass + n_fail
    disagreement = w @ (p * f / (p + f - 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * disagreement / (n_pass * n_fail)
    return np.where(n_pass * n_fail == 0, np.nan, alpha)


def bootstrap_alpha_ci(
    value_counts: NDArray[np.integer[Any]], *, seed: int = BOOTSTRAP_SEED, confidence: float = CI_CONFIDENCE
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of nominal alpha over units (items): a units x (PASS, FAIL) matrix.

    Alpha depends on a unit only through its (PASS, FAIL) counts, so the units are resampled as a
    multinomial draw over the distinct count patterns (resample_patterns), whatever the number of items.
    """
    counts = np.asarray(value_counts, dtype=np.int64)
    if counts.ndim != 2 or counts.size == 0:
        return None
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.shape[0] == 0:
        return None
    width = int(pairable[:, 1].max()) + 1  # (PASS, FAIL) as one integer: np.unique(axis=0) is far slower
    codes, units = np.unique(pairable[:, 0] * width + pairable[:, 1], return_counts=True)
    draws = resample_patterns(units, seed=seed)
    return percentile_interval(alpha_from_counts(codes // width, codes % width, draws), confidence)


# Replicates of the pairwise-kappa bootstrap are computed this many table cells at a time, so memory
# stays bounded (about 40 MB of int64) however many annotator pairs a crowd-labeled set has.
_PAIRWISE_CHUNK_CELLS = 5_000_000


def mean_pairwise_kappa(
    items: NDArray[np.integer[Any]],
    pairs: NDArray[np.integer[Any]],
    cells: NDArray[np.integer[Any]],
    *,
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CI_CONFIDENCE,
) -> PairwiseKappa:
    """Mean Cohen's kappa over annotator pairs, with a percentile bootstrap interval over items.

    One entry per (item, pair of annotators who both said PASS or FAIL on it): `items` and `pairs` are
    integer codes, `cells` 0..3 = both PASS, first PASS and second FAIL, first FAIL and second PASS,
    both FAIL. Each pair's kappa is over the items it shares; pairs whose kappa is undefined are left
    out of the mean (and counted). The bootstrap resamples items, each carrying all its pairs' cells:
    items with the same set of (pair, cell) are interchangeable, so a replicate is a multinomial draw
    over those patterns (resample_patterns); replicates whose every pair is undefined are left out.
    """
    items, pairs, cells = (np.asarray(x, dtype=np.int64) for x in (items, pairs, cells))
    if items.size == 0:
        return PairwiseKappa(None, None, 0, 0, 0)
    n_pairs = int(pairs.max()) + 1
    code = pairs * 4 + cells
    frame = pd.DataFrame({"item": items, "code": code}).sort_values(["item", "code"], kind="stable")
    if frame["item"].is_unique:
        keys = frame["code"].to_numpy()
    else:
        keys = frame.groupby("item", sort=False)["code"].agg(tuple).to_numpy()
    pattern_of_item, patterns = pd.factorize(keys)
    units = np.bincount(pattern_of_item)
    # (pattern, table column) entries: which cells of which pairs one item of each pattern fills.
    entry_pattern = np.repeat(np.arange(len(patterns)), [len(p) if isinstance(p, tuple) else 1 for p in patterns])
    entry_column = np.fromiter(
        (c for p in patterns for c in (p if isinstance(p, tuple) else (p,))), dtype=np.int64, count=len(entry_pattern)
    )

    order = np.argsort(entry_column, kind="stable")
    sorted_pattern, sorted_column = entry_pattern[order], entry_column[order]
    starts = np.flatnonzero(np.r_[True, sorted_column[1:] != sorted_column[:-1]])
    columns = sorted_column[starts]

    def kappas(weights: NDArray[np.integer[Any]]) -> tuple[NDArray[np.float64], NDArray[np.integer[Any]]]:
        """Mean pairwise kappa per row of pattern weights (NaN where no pair is defined), and how many
        pairs were defined."""
        tables = np.zeros((weights.shape[0], n_pairs * 4), dtype=np.int64)
        tables[:, columns] = np.add.reduceat(weights[:, sorted_pattern], starts, axis=1)
        t = tables.reshape(weights.shape[0], n_pairs, 4)
        per_pair = kappa_from_cells(t[..., 0], t[..., 1], t[..., 2], t[..., 3])
        defined = ~np.isnan(per_pair)
        total = np.where(defined, per_pair, 0.0).sum(axis=1)
        count = defined.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 0, total / count, np.nan), count

    point, defined_pairs = kappas(units[np.newaxis, :])
    sharing = int(np.unique(pairs).size)
    if np.isnan(point[0]):
        return PairwiseKappa(None, None, 0, sharing, int(units.sum()))
    shared = np.bincount(pairs, minlength=n_pairs)
    t = np.bincount(code, minlength=n_pairs * 4).reshape(n_pairs, 4)
    defined = ~np.isnan(kappa_from_cells(t[:, 0], t[:, 1], t[:, 2], t[:, 3])) & (shared > 0)
    median_items = float(np.median(shared[defined]))
    draws = resample_patterns(units, replicates=replicates, seed=seed)
    step = max(1, _PAIRWISE_CHUNK_CELLS // max(n_pairs * 4, len(entry_pattern)))
    replicated = np.concatenate([kappas(draws[i : i + step])[0] for i in range(0, replicates, step)])
    return PairwiseKappa(
        float(point[0]),
        percentile_interval(replicated, confidence),
        int(defined_pairs[0]),
        sharing - int(defined_pairs[0]),
        int(units.sum()),
        median_items,
    )


@dataclass(frozen=True)
class WilsonBound:
    n: int
    successes: int
    lower: float | None
    upper: float | None


def wilson_interval(successes: int, n: int, confidence: float) -> WilsonBound:
    """Wilson score interval (Wilson 1927), two-sided at `confidence`: statsmodels' proportion_confint.

    For a gate the lower end matters: it is what the pass rate is, at worst, with the stated
    confidence, so a small eval set cannot pass by luck (35/35 clears 0.90 at 95%, 34/34 does not).
    The gate reads the lower end of the two-sided interval, so alpha is 1 - confidence (statsmodels
    halves it per side); a one-sided bound at the same confidence would be higher.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return WilsonBound(0, 0, None, None)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    lower, upper = proportion_confint(successes, n, alpha=1.0 - confidence, method="wilson")
    return WilsonBound(n, successes, float(lower), float(upper))


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
