"""Audits on the candidate: a release decision from gold on a random sample of the candidate itself.

Pure functions over arrays (numpy, scipy), no Django. An audit labels the candidate's outputs in one
seeded random order (the plan's order) and combines that gold with the judge's verdicts on all N
outputs. Everything here takes, in the plan's order:

- ``verdicts``: the judge's verdict on each of the N outputs, 1 (PASS), 0 (FAIL) or NaN/None for no
  usable verdict (ERROR, ABSTAIN, N/A or missing: see `judge_scores`);
- ``gold``: the gold of the first n outputs of that order (the labeled prefix), 1, 0, NOT_APPLICABLE (-1)
  where the criterion does not apply to the output, or NaN/None while the gold is pending (labeled but not
  settled, or settled as Can't tell). n may be 0.

The pass rate theta is the gate's: passes / (passes + fails) over the N outputs, N/A left out. An N/A item
enters the tests as the tested value m itself: sum(y) = m N exactly when theta = m, so the tests of the
share of passes become tests of the pass rate among the outputs the criterion applies to, with nothing else
changed (the null means, the bets' bounds and Ville's inequality all hold as before). Without N/A gold
every figure is what it was.

What is assumed: only that the order is a uniformly random permutation, fixed before any label (the
plan's seed), and that the labels are taken in that order without skipping. Nothing about the judge is
assumed: its verdicts only reduce the variance; a judge that is wrong, biased or different from the
calibration set costs labels, never validity.

The parts:
- `ppi_estimate`: the finite-population PPI++ (regression) estimate of theta, the mean gold over all N,
  and its fixed-n normal interval with the finite-population correction (for display, not for deciding).
- `audit_decision`: the decision rule. Two one-sided anytime-valid betting tests for sampling without
  replacement (Waudby-Smith & Ramdas, NeurIPS 2020) at (1 - confidence)/2 each, with the judge as a
  control variate inside the test, plus the exact rule; and the anytime-valid bounds (the confidence
  sequence) for display.
- `audit_forecast`: a Monte Carlo forecast from the posterior predictive (a forecast, not a promise).
- `labels_per_decision`: the price of gating, an estimate of labels per release decision from a
  calibration's figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

# The arrays: gold, judge scores, capitals and bounds are floats (gold 1, 0, -1 N/A, NaN pending); label counts
# and row indices integers; decisions ("PASS", "FAIL", "") and how they came, Python strings.
Floats = NDArray[np.float64]
Ints = NDArray[np.integer[Any]]
Objects = NDArray[np.object_]
Bools = NDArray[np.bool_]

PASS = "PASS"
FAIL = "FAIL"
# The gold of an output the criterion does not apply to, in the gold arrays (see the module's docstring).
NOT_APPLICABLE = -1.0

# No decision by the betting tests before this many settled gold items, N/A included (the exact rule always
# applies).
# Validity does not need it (Ville's inequality holds from the first label, and the capital grows from the
# first label; only the decision waits), so it costs labels only when a decision would come earlier. Why
# 20: the judge's weight lambda and the bet sizes are estimated from the labels, and below about 20 they
# are mostly noise (one label moves a covariance of 10 points by a tenth); a lead asked "why did we ship?"
# should be able to point at more than a handful of labels; and at 2.5% per side the tests need about 10
# consecutive favourable labels anyway, so 20 rarely delays a decision the data supports (bench/audit.py
# medians are above it everywhere).
MIN_GOLD = 20

# Bets are truncated at this share of the largest bet that keeps the capital non-negative for every value
# the next draw can take (Waudby-Smith & Ramdas truncate at 1/2 or 3/4). Validity holds for any share <= 1;
# a share < 1 keeps one unlucky draw from losing most of the capital.
BET_SHARE = 0.5

# The bets shrink their estimate of the residual variance towards 1/4 (the largest a 0/1 gold can have) with
# this many pseudo-labels, so the first bets are small and a run of early alike labels cannot make them large.
PRIOR_WEIGHT = 4.0

# Each test is a mixture (the average) of betting processes, one per edge theta - m it bets on: 8 edges
# spaced evenly in log from 2 to 20 points, the margins a lead sets. The average of test martingales is one,
# so validity is unchanged, and it follows whichever edge the labels show without estimating it: a bet
# sized from an estimate of theta (the plug-in) is mostly noise in the first hundred labels, when a
# 5-point edge is smaller than the estimate's error. bench/audit.py, 500 orders per cell: the median labels
# to a decision fell in 50 of its 53 cells (by 2.4% of N on average, up to 7.5%; at most 0.4% more in the
# other three), e.g. from 55.7% to 51.7% of N on USR topical at margin 0.05. A bet sized on the true theta
# (known only in a simulation) needs about 45% there: the mixture gets most of the way.
EDGES = np.geomspace(0.02, 0.20, 8)


def _as_float_array(values: Iterable[float | None], *, name: str, allow_na: bool = False) -> Floats:
    array = np.array([np.nan if v is None else v for v in values], dtype=float).ravel()
    usable = array[~np.isnan(array)]
    known = {0.0, 1.0, NOT_APPLICABLE} if allow_na else {0.0, 1.0}
    if not np.all(np.isin(usable, list(known))):
        na = ", -1 (N/A)" if allow_na else ""
        raise ValueError(f"{name} must be 1 (PASS), 0 (FAIL){na} or None/NaN, got {sorted(set(usable) - known)}")
    return array


def judge_scores(*, verdicts: Iterable[float | None]) -> Floats:
    """The judge's score f for each output: its verdict, and for outputs without a usable verdict the
    judge's pass rate on the rest.

    An ERROR (or ABSTAIN, N/A, missing) is not a verdict. Any f fixed before sampling keeps the estimate
    unbiased and the tests valid (the control variate only needs f known on all N), so those outputs get
    the judge's pass rate over the outputs it did judge: a constant that tells nothing about the item and
    does not move mean_N(f) away from the judged items' rate. If the judge judged nothing, f is 0 everywhere:
    a constant, so lambda is 0 and the audit is plain sampling. The forecast treats them as a stratum of
    their own.
    """
    raw = _as_float_array(verdicts, name="verdicts")
    missing = np.isnan(raw)
    fill = float(raw[~missing].mean()) if (~missing).any() else 0.0
    return np.where(missing, fill, raw)


def checked_inputs(
    *, gold: Iterable[float | None], verdicts: Iterable[float | None], confidence: float
) -> tuple[Floats, Floats, Floats]:
    raw = _as_float_array(verdicts, name="verdicts")
    g = _as_float_array(gold, name="gold", allow_na=True)
    if raw.size == 0:
        raise ValueError("an audit needs at least one output")
    if g.size > raw.size:
        raise ValueError(f"gold has {g.size} items but there are only {raw.size} outputs")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return g, raw, judge_scores(verdicts=raw)


def power_tuned_lambda(*, y: Floats, f: Floats) -> float:
    """lambda = Cov(y, f) / Var(f) on the labeled items, clipped to [0, 1]; 0 when f does not vary there."""
    if y.size < 2:
        return 0.0
    var_f = float(np.var(f))
    if var_f <= 1e-12:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    return min(1.0, max(0.0, cov / var_f))


@dataclass(frozen=True)
class PPIEstimate:
    estimate: float | None  # theta_hat (None without settled gold)
    lower: float | None  # the fixed-n normal interval, clipped to [0, 1]
    upper: float | None
    std_error: float | None
    lam: float  # the judge's weight
    n: int  # settled gold items used
    N: int
    fpc: bool


def ppi_estimate(
    *,
    gold: Iterable[float | None],
    verdicts: Iterable[float | None],
    confidence: float = 0.95,
    fpc: bool = True,
    lam: float | None = None,
) -> PPIEstimate:
    """theta_hat = lam * mean_N(f) + mean_n(y - lam f), over the settled gold of the labeled prefix.

    Variance (1 - n/N) * Var(y - lam f) / n (sample variance, ddof = 1; the factor 1 - n/N is the
    finite-population correction, left out with fpc=False, which is the N -> infinity interval of
    ppi_py), and a normal interval at `confidence`. Pending items are left out of the estimate (the
    decision counts them against itself instead); this interval is fixed-n: looking at it after every
    label and stopping when it clears a threshold is not valid, the decision uses `audit_decision`.
    """
    g, _raw, f = checked_inputs(gold=gold, verdicts=verdicts, confidence=confidence)
    N = f.size
    if np.any(g == NOT_APPLICABLE):
        return _ratio_estimate(g=g, f=f, fpc=fpc)
    settled = ~np.isnan(g)
    y = g[settled]
    fy = f[: g.size][settled]
    n = int(y.size)
    if lam is None:
        lam = power_tuned_lambda(y=y, f=fy)
    if n == 0:
        return PPIEstimate(None, None, None, None, lam, 0, N, fpc)
    residual = y - lam * fy
    estimate = lam * float(f.mean()) + float(residual.mean())
    if n < 2:
        return PPIEstimate(estimate, 0.0, 1.0, None, lam, n, N, fpc)
    factor = (1 - n / N) if fpc else 1.0
    std_error = math.sqrt(max(factor, 0.0) * float(np.var(residual, ddof=1)) / n)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    lower = min(1.0, max(0.0, estimate - z * std_error))
    upper = min(1.0, max(0.0, estimate + z * std_error))
    return PPIEstimate(estimate, lower, upper, std_error, lam, n, N, fpc)


def _ratio_estimate(*, g: Floats, f: Floats, fpc: bool) -> PPIEstimate:
    """With N/A gold among the labels: theta_hat = P_hat / A_hat, the PPI++ estimates of the share of
    passes and of the share the criterion applies to (N/A counts 0 in the first and 0 in the second, a pass
    or fail 1 in the second), each with its own lambda. Consistent, not unbiased; no fixed-n interval (the
    decision's anytime-valid bounds are the interval to read)."""
    N = f.size
    settled = ~np.isnan(g)
    labeled = g[settled]
    fy = f[: g.size][settled]
    shares = []
    for y in ((labeled == 1).astype(float), (labeled != NOT_APPLICABLE).astype(float)):
        lam = power_tuned_lambda(y=y, f=fy)
        shares.append(lam * float(f.mean()) + float((y - lam * fy).mean()))
    passes, applicable = shares
    estimate = min(1.0, max(0.0, passes / applicable)) if applicable > 0 else None
    return PPIEstimate(estimate, None, None, None, 0.0, int(labeled.size), N, fpc)


def betting_log_capital(*, y: Floats, f: Floats, m: ArrayLike, bet_share: float = BET_SHARE) -> Floats:
    """log K_t of the test of "theta <= m" (bets >= 0), after each of the first T draws.

    y: (S, T) gold of the first T draws (0/1) of S sequences; f: (S, N) the judge's scores of all N outputs
    in each sequence's order; m: the null value, a scalar or one per sequence (S,).

    Sampling without replacement, under theta = m the next draw's gold has conditional mean
    (N m - S_y) / (N - t + 1) given the past (S_y: the gold passes drawn so far, t the draw's number), and
    its f has conditional mean mean(f over the not-yet-drawn items), known exactly. So with the judge as a
    control variate, z_t = y_t - lambda_t (f_t - mean_N f), lambda_t from the labels before t, the null mean
    of z_t is c_t = (N m - S_y)/(N - t + 1) - lambda_t (mean of f not yet drawn - mean_N f), and
    K_t = prod (1 + beta_i (z_i - c_i)) with beta_i >= 0 chosen before draw i is a non-negative martingale
    when theta = m and a supermartingale when theta < m. Ville: P(sup_t K_t >= 1/a) <= a.

    K_t here is the average of one such process per edge d in EDGES. Each bets Kelly for theta = m + d:
    E[z - c] is then N d / (N - t + 1) exactly, so beta = g / (v + g^2) with g that drift and v the residual
    variance of the labels before t (shrunk towards 1/4, PRIOR_WEIGHT). Each bet is truncated to
    [0, bet_share / (c_t - z_min)], z_min = -lambda_t (max f not yet drawn - mean_N f) the smallest value
    z_t can take, so 1 + beta (z - c) >= 0 for every value of the next draw.
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    f = np.asarray(f, dtype=float)
    # One order shared by every row (the confidence sequence's grid of m) is kept 1-D: no (S, N) copies.
    if f.ndim == 1:
        f = f[None, :]
    S, T = y.shape
    N = f.shape[1]
    if T > N:
        raise ValueError("more draws than outputs")
    m = np.broadcast_to(np.asarray(m, dtype=float), (S,))
    f_mean = np.broadcast_to(f.mean(axis=1), (S,))
    f_total = np.broadcast_to(f.sum(axis=1), (S,))
    # The largest f among the outputs not yet drawn before draw t: a suffix maximum.
    f_max_rest = np.maximum.accumulate(f[:, ::-1], axis=1)[:, ::-1]
    s_y = np.zeros(S)
    s_f = np.zeros(S)
    s_yf = np.zeros(S)
    s_ff = np.zeros(S)
    s_yy = np.zeros(S)
    log_k = np.zeros((S, EDGES.size))  # one column per edge
    out = np.empty((S, T))
    w = PRIOR_WEIGHT
    for t in range(T):  # t draws are in the past
        rest = N - t
        if t >= 2:
            var_f = s_ff / t - (s_f / t) ** 2
            cov = s_yf / t - (s_y / t) * (s_f / t)
            with np.errstate(divide="ignore", invalid="ignore"):
                lam = np.where(var_f > 1e-12, np.clip(cov / var_f, 0.0, 1.0), 0.0)
        else:
            lam = np.zeros(S)
        f_rest_mean = (f_total - s_f) / rest
        c = (N * m - s_y) / rest - lam * (f_rest_mean - f_mean)
        z_min = -lam * (f_max_rest[:, t] - f_mean)  # (1,) for a shared order: broadcasts
        s_r = s_y - lam * s_f
        s_rr = s_yy - 2 * lam * s_yf + lam**2 * s_ff
        var_r = (w * 0.25 + np.maximum(s_rr - (s_r**2 / t if t else 0.0), 0.0)) / (t + w)
        gain = (N / rest) * EDGES  # (K,): the drift of z - c if theta = m + edge
        beta = gain / (var_r[:, None] + gain**2)
        room = c - z_min
        with np.errstate(divide="ignore"):
            cap = np.where(room > 1e-12, bet_share / np.maximum(room, 1e-12), 1e6)
        beta = np.minimum(beta, cap[:, None])
        yt = y[:, t]
        ft = f[:, t]
        z = yt - lam * (ft - f_mean)
        log_k += np.log1p(np.maximum(beta * (z - c)[:, None], -1 + 1e-15))
        top = log_k.max(axis=1)  # log of the average, without overflow when one process is far ahead
        out[:, t] = top + np.log(np.exp(log_k - top[:, None]).sum(axis=1))
        s_y += yt
        s_f += ft
        s_yf += yt * ft
        s_ff += ft * ft
        s_yy += yt * yt
    return out - math.log(EDGES.size)


@dataclass(frozen=True)
class Decisions:
    decided: Objects  # (S,) "PASS", "FAIL" or ""
    at: Ints  # (S,) the number of labels (prefix length) when decided, -1 if not
    by: Objects  # (S,) "exact", "test" or ""
    log_k_pass: Floats  # (S, T)
    log_k_fail: Floats  # (S, T)


def decide_each_label(*, gold: Floats, f: Floats, minimum: float, confidence: float, min_gold: int) -> Decisions:
    """The first decision along each of S sequences; gold (S, T) with NaN for pending, f (S, N) or one
    order (N,) shared by all."""
    f = np.atleast_2d(f)
    S, T = gold.shape
    N = f.shape[1]
    if T == 0:  # nothing labeled yet (a plan just started): nothing to decide on, and argmax needs a column
        none = np.full(S, "", dtype=object)
        return Decisions(none, np.full(S, -1), none.copy(), np.zeros((S, 0)), np.zeros((S, 0)))
    y_for_pass, y_for_fail = tested_gold(gold=gold, minimum=minimum)
    log_k_pass = betting_log_capital(y=y_for_pass, f=f, m=minimum)
    # "theta >= minimum" is "1 - theta <= 1 - minimum" on the complemented gold and scores.
    log_k_fail = betting_log_capital(y=1.0 - y_for_fail, f=1.0 - f, m=1.0 - minimum)
    return first_decisions(
        gold=gold,
        N=N,
        log_k_pass=log_k_pass,
        log_k_fail=log_k_fail,
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
    )


def tested_gold(*, gold: Floats, minimum: float) -> tuple[Floats, Floats]:
    """The gold each test reads: a pending item counts against the decision it would help; an N/A item counts
    as the minimum itself, so the tests are of the pass rate among the outputs the criterion applies to (the
    module's docstring). Shared with audit_predictor.py."""
    pending = np.isnan(gold)
    na = gold == NOT_APPLICABLE
    return np.where(pending, 0.0, np.where(na, minimum, gold)), np.where(pending, 1.0, np.where(na, minimum, gold))


def first_decisions(
    *,
    gold: Floats,
    N: int,
    log_k_pass: Floats,
    log_k_fail: Floats,
    minimum: float,
    confidence: float,
    min_gold: int,
) -> Decisions:
    """The first decision along each of S label sequences (gold (S, T), NaN pending, N/A -1), given each test's
    log capital after each label (S, T): the test's threshold once min_gold items are settled, the exact rule
    always. Shared by the uniform audit and the stratified one (audit_strata.py), whose capitals differ."""
    S, T = gold.shape
    if T == 0:  # nothing labeled yet (a plan just started): nothing to decide on, and argmax needs a column
        none = np.full(S, "", dtype=object)
        return Decisions(none, np.full(S, -1), none.copy(), np.zeros((S, 0)), np.zeros((S, 0)))
    pending = np.isnan(gold)
    na = gold == NOT_APPLICABLE
    threshold = math.log(2 / (1 - confidence))
    settled = np.cumsum(~pending, axis=1)
    allowed = settled >= min(min_gold, N)
    passes = np.cumsum(gold == 1, axis=1)
    fails = np.cumsum(gold == 0, axis=1)
    # At most this many outputs can count in the pass rate: all but the labeled N/A ones.
    applicable = N - np.cumsum(na, axis=1)
    # The exact rule (the rate whatever the unknown gold turns out to be), with a little room for floating
    # point in minimum * applicable.
    exact_pass = passes >= minimum * applicable - 1e-9
    exact_fail = applicable - fails < minimum * applicable - 1e-9
    test_pass = allowed & (log_k_pass >= threshold)
    test_fail = allowed & (log_k_fail >= threshold)
    any_pass = exact_pass | test_pass
    any_fail = exact_fail | test_fail
    first_pass = np.where(any_pass.any(axis=1), any_pass.argmax(axis=1), T)
    first_fail = np.where(any_fail.any(axis=1), any_fail.argmax(axis=1), T)
    rows = np.arange(S)
    decided = np.full(S, "", dtype=object)
    at = np.full(S, -1)
    by = np.full(S, "", dtype=object)
    is_pass = (first_pass < T) & (first_pass <= first_fail)
    # Both at once is possible only on an error of the tests; the exact rule breaks the tie (it cannot err).
    tie = is_pass & (first_pass == first_fail) & exact_fail[rows, np.minimum(first_fail, T - 1)]
    is_pass &= ~tie
    is_fail = (first_fail < T) & ~is_pass
    decided[is_pass] = PASS
    decided[is_fail] = FAIL
    at[is_pass] = first_pass[is_pass] + 1
    at[is_fail] = first_fail[is_fail] + 1
    idx = np.minimum(np.where(is_pass, first_pass, first_fail), T - 1) if T else np.zeros(S, dtype=int)
    if T:
        was_exact = np.where(is_pass, exact_pass[rows, idx], exact_fail[rows, idx])
        by[is_pass | is_fail] = np.where(was_exact, "exact", "test")[is_pass | is_fail]
    return Decisions(decided, at, by, log_k_pass, log_k_fail)


@dataclass(frozen=True)
class AuditDecision:
    decided: str | None  # "PASS", "FAIL" or None (not yet)
    decided_at: int | None  # labels in the order when it was decided
    decided_by: str | None  # "exact" (the labeled passes or fails alone settle it) or "test"
    lower: float  # the anytime-valid bounds on theta (the confidence sequence), for display
    upper: float
    estimate: PPIEstimate
    n_labeled: int  # the labeled prefix of the order, pending included
    n_gold: int  # settled PASS or FAIL gold in it
    n_pending: int  # no gold yet, or gold Can't tell: counted against either decision
    n_not_applicable: int  # gold N/A: outside the pass rate
    N: int
    minimum: float
    confidence: float
    min_gold: int
    evidence_pass: float  # the capital K of each test now (it decides at 2 / (1 - confidence))
    evidence_fail: float


def _confidence_sequence(
    *, f: Floats, gold: Floats, confidence: float, capital: Callable[..., Floats] | None = None
) -> tuple[float, float]:
    """The m not rejected by either test at any time so far (on the grid k/N, where theta lies without N/A
    gold; on a grid of 2,001 points widened to its neighbours otherwise), and the exact bounds (labeled
    passes / A, 1 - labeled fails / A, A the outputs not labeled N/A). `capital`: the tests' log capital,
    betting_log_capital with f (N,), or audit_predictor.jury_log_capital with several signals f (N, K)."""
    capital = betting_log_capital if capital is None else capital
    N = f.shape[0]
    T = gold.size
    pending = np.isnan(gold)
    na = gold == NOT_APPLICABLE
    passes = int(np.sum(gold == 1))
    fails = int(np.sum(gold == 0))
    applicable = N - int(na.sum())
    if applicable == 0:  # every output is N/A: there is no pass rate to bound
        return 0.0, 1.0
    exact_lower, exact_upper = passes / applicable, (applicable - fails) / applicable
    if T == 0:
        return exact_lower, exact_upper
    exact_grid = N <= 2000 and not na.any()
    grid = np.arange(N + 1) / N if exact_grid else np.linspace(0, 1, 2001)
    G = grid.size
    threshold = math.log(2 / (1 - confidence))
    y_pass = np.where(pending, 0.0, gold)
    y_fail = np.where(pending, 1.0, gold)
    if na.any():  # an N/A item is each grid point's m (one row of gold per m)
        y_pass = np.where(na[None, :], grid[:, None], y_pass[None, :])
        y_fail = np.where(na[None, :], grid[:, None], y_fail[None, :])
    y_pass, y_fail = np.broadcast_to(y_pass, (G, T)), np.broadcast_to(y_fail, (G, T))
    # A point outside the exact bounds is out whatever the tests say. The rest run to a horizon that grows
    # fourfold, each time only on the points not rejected yet: a test that crossed its threshold by then has
    # crossed it "at some time so far", and most points are rejected within the first labels, so late in a
    # large audit only the few points near the interval run to the last label. The same bounds as running
    # every point to T.
    rejected = (grid < exact_lower - 1e-12) | (grid > exact_upper + 1e-12)
    todo = np.flatnonzero(~rejected)
    for horizon in horizons(start=0, first=64, end=T):
        if not todo.size:
            break
        k_pass = capital(y=y_pass[todo, :horizon], f=f, m=grid[todo])
        k_fail = capital(y=1 - y_fail[todo, :horizon], f=1 - f, m=1 - grid[todo])
        # "theta <= m" or "theta >= m" rejected
        out = (k_pass >= threshold).any(axis=1) | (k_fail >= threshold).any(axis=1)
        rejected[todo[out]] = True
        todo = todo[~out]
    kept = ~rejected
    if not kept.any():  # the tests contradict each other (an error they allow with probability <= alpha)
        return exact_lower, exact_upper
    first, last = int(np.argmax(kept)), G - 1 - int(np.argmax(kept[::-1]))
    if exact_grid:
        lower, upper = grid[first], grid[last]
    else:  # theta may lie between grid points: widen to the neighbours
        lower, upper = grid[max(first - 1, 0)], grid[min(last + 1, G - 1)]
    return max(float(lower), exact_lower), min(float(upper), exact_upper)


def audit_decision(
    *,
    gold: Iterable[float | None],
    verdicts: Iterable[float | None],
    minimum: float,
    confidence: float = 0.95,
    min_gold: int = MIN_GOLD,
) -> AuditDecision:
    """PASS once "theta < minimum" is rejected, FAIL once "theta >= minimum" is, each at (1 - confidence)/2.

    The test of "theta < minimum" is the betting test of "theta <= minimum" (valid for every theta at or
    below it, so a PASS means theta > minimum with the exact rule's ">=" aside); the test of
    "theta >= minimum" is the same test on 1 - gold and 1 - f. The exact rule always applies, before the
    minimum of gold items too: labeled passes >= minimum * A is PASS, A - labeled fails < minimum * A is
    FAIL, with A the outputs not labeled N/A. A pending item counts as FAIL for the PASS test and as PASS
    for the FAIL test (and in neither count of the exact rule); an N/A item as the minimum in both tests.
    The decision is the first one along the order (the labels are re-read from the start each time, so a
    settled pending item may move it; a caller that records decisions keeps the first recorded one).
    """
    if not 0 <= minimum <= 1:
        raise ValueError(f"minimum must be between 0 and 1, got {minimum}")
    if min_gold < 1:
        raise ValueError("min_gold must be at least 1")
    g, _raw, f = checked_inputs(gold=gold, verdicts=verdicts, confidence=confidence)
    N = f.size
    d = decide_each_label(gold=g[None, :], f=f, minimum=minimum, confidence=confidence, min_gold=min_gold)
    lower, upper = _confidence_sequence(f=f, gold=g, confidence=confidence)
    estimate = ppi_estimate(gold=g, verdicts=verdicts, confidence=confidence)
    return decision_of(d, gold=g, N=N, bounds=(lower, upper), estimate=estimate, rule=(minimum, confidence, min_gold))


def decision_of(
    d: Decisions,
    *,
    gold: Floats,
    N: int,
    bounds: tuple[float, float],
    estimate: PPIEstimate,
    rule: tuple[float, float, int],
) -> AuditDecision:
    """One audit's AuditDecision from its first decision (`first_decisions` on one sequence), its gold, its
    bounds and estimate, and the rule (minimum, confidence, min_gold): shared with audit_strata.py."""
    pending = np.isnan(gold)
    na = gold == NOT_APPLICABLE
    last = gold.size - 1
    minimum, confidence, min_gold = rule
    return AuditDecision(
        decided=d.decided[0] or None,
        decided_at=int(d.at[0]) if d.at[0] > 0 else None,
        decided_by=d.by[0] or None,
        lower=bounds[0],
        upper=bounds[1],
        estimate=estimate,
        n_labeled=int(gold.size),
        n_gold=int((~pending & ~na).sum()),
        n_pending=int(pending.sum()),
        n_not_applicable=int(na.sum()),
        N=N,
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
        evidence_pass=float(math.exp(min(d.log_k_pass[0, last], 700))) if gold.size else 1.0,
        evidence_fail=float(math.exp(min(d.log_k_fail[0, last], 700))) if gold.size else 1.0,
    )


PASS_SIDE, FAIL_SIDE = "PASS", "FAIL"


def horizons(*, start: int, first: int, end: int) -> Iterator[int]:
    """The horizons a replay runs to: start + first, then fourfold steps, and `end` (always the last) as soon as
    the next would pass half of it: a replay of nearly `end` is not worth doing twice."""
    step = first
    while True:
        horizon = min(end, start + step)
        yield horizon
        if horizon == end:
            return
        step = 4 * step if start + 4 * step <= end // 2 else end
