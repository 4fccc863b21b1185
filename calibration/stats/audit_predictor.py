"""The audit's predictor from the judge's whole signal: several scores per output, combined by the regression
(multivariate PPI++) estimator inside audit_stats.py's betting tests, with coefficients fixed before each label.

Pure functions over arrays (numpy), no Django. Today's audit reads one bit per output (the judge's PASS/FAIL);
Icewater often stores more: repeated samples of one judge config (their vote share says how sure it was) and the
verdicts of several judge configs on the same candidate. Each of these is a *signal*: one number in [0, 1] per
output of the candidate, fixed before sampling (each config's verdicts only from its own runs, so no signal ever
reads gold). The K signals of the N outputs form F (N, K), in the plan's order.

The estimator. With gold y on the first n outputs of a uniformly random order, the regression estimator of the
pass rate theta is  theta_hat = mean_n(y - b.F) + b.mean_N(F),  b the slopes of the least-squares fit of y on F
(with an intercept) over the labeled outputs. With one 0/1 signal it is audit_stats.ppi_estimate's PPI++
estimate; it is also the mean over all N of the fitted line's predictions (tests check both).

Why the betting tests stay valid (the argument the tests in tests/calibration/stats/test_audit_predictor.py
check by exact enumeration): the test of "theta <= m" bets on  z_t = y_t - b_t.(F_t - mean_N F)  with b_t
computed from the labels before draw t only (predictable). Under sampling without replacement, given the past,
the next output is uniform over the N - t + 1 not yet drawn, so E[y_t | past] = (N m - S_y)/(N - t + 1) when
theta = m, and E[F_t | past] = the mean of F over the outputs not yet drawn, known exactly because F is known on
all N before sampling. For ANY b_t fixed before the draw, the control-variate term b_t.(F_t - mean_N F) therefore
has a known conditional mean, b_t.(mean of F not yet drawn - mean_N F), which the null mean c_t subtracts: z_t - c_t
has conditional mean zero under theta = m (and below zero when theta < m). So the capital prod(1 + beta_t (z_t - c_t))
with beta_t >= 0 predictable and small enough to keep every factor non-negative is a test (super)martingale, and
Ville's inequality gives P(ever >= 1/a) <= a, whatever the signals are and however wrong the judges. The choice of
b_t only decides how many labels the test needs: b_t = the least-squares slopes minimises the residual variance
Var(y - b.F), the variance the bets pay for, so a jury whose combination correlates with gold at R pays
(1 - R^2) of plain sampling's variance.

Missing signals (ERROR, ABSTAIN, N/A, no run of that config on the output) are imputed by the signal's mean over
the outputs where it exists: a constant computed from the signals alone before any label, never from gold. A
signal missing everywhere is 0 everywhere: a constant, which the fit gives no weight (its variance is zero).

The tests' slopes are shrunk towards 0 while the labels are few (SLOPE_PRIOR), and clipped to [0, 1], as
audit_stats clips its one lambda: a signal that, given the others,
counts against gold is left out rather than reversed while the labels are few (validity does not need the clip,
any predictable b does; with K = 1 it makes the tests exactly audit_stats.py's). The bounds of z_t for the bets'
truncation use each signal's largest value not yet drawn, a lower bound of z_t for b >= 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from calibration.stats import audit_stats
from calibration.stats.audit_stats import (
    BET_SHARE,
    EDGES,
    FAIL,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    PRIOR_WEIGHT,
    AuditDecision,
    Decisions,
    Floats,
)

# Below this variance (over the labeled outputs) a signal is read as constant there and gets no weight: the same
# cut as audit_stats.power_tuned_lambda's, so one 0/1 signal gives exactly its lambda.
CONSTANT = 1e-12

# With several signals the tests shrink the slopes towards 0 by a ridge of SLOPE_PRIOR / t times each signal's
# variance after t labels (as if SLOPE_PRIOR labels had shown no relation), so the first labels' noisy fit of
# K slopes bets less on them. Validity does not depend on it (any predictable slopes do). Measured on
# bench/audit_jury.py's synthetic jury, QAGS and USR persona uses_knowledge, 300 orders at distances 0.05 and
# 0.10 on both sides (12 cells): with 10, 0 to 1.3% of N fewer labels in the median than with none in every
# cell (4 gained less; 20 cost 0.6% of N at +0.10 on USR). One signal is left as audit_stats fits it.
SLOPE_PRIOR = 10.0

# The fit's ridge, relative to the signals' mean variance: enough to solve when two signals are identical on
# the labels so far (two configs that agree everywhere), far too small to move a fit that is well defined.
RIDGE = 1e-9


def vote_share(outcomes: Iterable[str]) -> float | None:
    """The share of PASS among one config's usable samples of one output (PASS and FAIL; ERROR, ABSTAIN and N/A
    are not votes), None without any: 3 of 5 samples PASS is 0.6, one sample is its verdict."""
    votes = [o for o in outcomes if o in (PASS, FAIL)]
    return sum(o == PASS for o in votes) / len(votes) if votes else None


@dataclass(frozen=True)
class Predictor:
    """The signals of the N outputs in the plan's order, missing values imputed (see the module's docstring)."""

    names: tuple[str, ...]
    scores: Floats  # (N, K)
    fills: tuple[float, ...]  # the constant each signal's missing values got
    missing: tuple[int, ...]  # how many outputs each signal misses


def predictor(signals: Mapping[str, Sequence[float | None]]) -> Predictor:
    """F from named signals, each one value in [0, 1] (a vote share or a 0/1 verdict) or None per output."""
    if not signals:
        raise ValueError("a predictor needs at least one signal")
    lengths = {len(values) for values in signals.values()}
    if len(lengths) != 1:
        raise ValueError(f"every signal needs one value per output, got lengths {sorted(lengths)}")
    if 0 in lengths:
        raise ValueError("an audit needs at least one output")
    columns, fills, missing = [], [], []
    for name, values in signals.items():
        raw = np.array([np.nan if v is None else v for v in values], dtype=float)
        gone = np.isnan(raw)
        if np.any((raw[~gone] < 0) | (raw[~gone] > 1)):
            raise ValueError(f"signal {name!r} must lie in [0, 1] (a vote share or a verdict)")
        fill = float(raw[~gone].mean()) if (~gone).any() else 0.0
        columns.append(np.where(gone, fill, raw))
        fills.append(fill)
        missing.append(int(gone.sum()))
    return Predictor(tuple(signals), np.column_stack(columns), tuple(fills), tuple(missing))


def slopes(*, cov_ff: Floats, cov_yf: Floats, shrink: float = 0.0) -> Floats:
    """The least-squares slopes b (..., K) from the signals' covariance (..., K, K) and their covariance with
    gold (..., K), clipped to [0, 1]; a signal constant on the labels gets 0. One signal: cov / var, exactly
    audit_stats.power_tuned_lambda. `shrink`: with several signals, a ridge of that many times each signal's
    variance (SLOPE_PRIOR / t in the tests)."""
    K = cov_yf.shape[-1]
    var = np.diagonal(cov_ff, axis1=-2, axis2=-1)
    varies = var > CONSTANT
    if K == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(varies, cov_yf / var, 0.0)
        return np.clip(b, 0.0, 1.0)
    system = slope_system(cov_ff=cov_ff, shrink=shrink)
    rhs = np.where(varies, cov_yf, 0.0)
    b = np.linalg.solve(system, rhs[..., None])[..., 0]
    return np.clip(b, 0.0, 1.0)


def slope_system(*, cov_ff: Floats, shrink: ArrayLike) -> Floats:
    """The left-hand side of `slopes`' K x K system (..., K, K), from the signals' covariance alone (so one order's
    system serves every gold: jury_replay.py). `shrink`: a scalar or one per system (...)."""
    K = cov_ff.shape[-1]
    var = np.diagonal(cov_ff, axis1=-2, axis2=-1)
    varies = var > CONSTANT
    both = varies[..., :, None] & varies[..., None, :]
    eye = np.eye(K)
    scale = np.maximum(np.where(varies, var, 0.0).mean(axis=-1), CONSTANT)[..., None, None]
    # A constant signal's row and column become the identity's, so its slope solves to its (zeroed) covariance.
    ridge = RIDGE * scale + np.asarray(shrink, dtype=float)[..., None, None] * var[..., :, None]
    return np.where(both, cov_ff, 0.0) + np.where(varies[..., None, :], 0.0, eye) + ridge * eye  # type: ignore[no-any-return]


def jury_log_capital(*, y: Floats, f: Floats, m: ArrayLike, bet_share: float = BET_SHARE) -> Floats:
    """log K_t of the test of "theta <= m" after each of the first T draws, with K signals as control variates.

    y: (S, T) gold of the first T draws of S sequences; f: (S, N, K) the signals of all N outputs in each
    sequence's order, or (N, K) for one order shared by every row; m: a scalar or one per sequence (S,).
    audit_stats.betting_log_capital with lambda_t a vector b_t (the module's docstring says why it stays valid):
    the same mixture over EDGES, the same Kelly bets on the residual variance, the same truncation.
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    f = np.asarray(f, dtype=float)
    if f.ndim == 2:
        f = f[None, :, :]
    S, T = y.shape
    N, K = f.shape[1], f.shape[2]
    if T > N:
        raise ValueError("more draws than outputs")
    m = np.broadcast_to(np.asarray(m, dtype=float), (S,))
    f_mean = f.mean(axis=1)  # (1 or S, K)
    f_total = f.sum(axis=1)
    # Each signal's largest value among the outputs not yet drawn before draw t: a suffix maximum per signal.
    f_max_rest = np.maximum.accumulate(f[:, ::-1, :], axis=1)[:, ::-1, :]
    # The confidence sequence tests many m on one order and one gold: everything but the null mean is then the
    # same for every m, so the sums, the slopes and the residual variance are kept once (R = 1 row) and
    # broadcast (the same numbers; on 20,000 outputs after 8,000 labels the decision took 17 s, 4 s this way).
    R = 1 if f.shape[0] == 1 and S > 1 and bool(np.all(y == y[:1])) else S
    s_y, s_yy = np.zeros(R), np.zeros(R)
    s_f, s_yf = np.zeros((R, K)), np.zeros((R, K))
    s_ff = np.zeros((R, K, K))
    log_k = np.zeros((S, EDGES.size))
    out = np.empty((S, T))
    w = PRIOR_WEIGHT
    for t in range(T):  # t draws are in the past
        rest = N - t
        if t >= 2:
            mean_f = s_f / t
            cov_ff = s_ff / t - mean_f[:, :, None] * mean_f[:, None, :]
            cov_yf = s_yf / t - (s_y / t)[:, None] * mean_f
            b = slopes(cov_ff=cov_ff, cov_yf=cov_yf, shrink=SLOPE_PRIOR / t)
        else:
            b = np.zeros((R, K))
        f_rest_mean = (f_total - s_f) / rest
        c = (N * m - s_y) / rest - np.sum(b * (f_rest_mean - f_mean), axis=1)
        z_min = -np.sum(b * (f_max_rest[:, t, :] - f_mean), axis=1)
        s_r = s_y - np.sum(b * s_f, axis=1)
        s_rr = s_yy - 2 * np.sum(b * s_yf, axis=1) + np.einsum("sk,skl,sl->s", b, s_ff, b)
        var_r = (w * 0.25 + np.maximum(s_rr - (s_r**2 / t if t else 0.0), 0.0)) / (t + w)
        gain = (N / rest) * EDGES
        beta = gain / (var_r[:, None] + gain**2)
        room = c - z_min
        with np.errstate(divide="ignore"):
            cap = np.where(room > 1e-12, bet_share / np.maximum(room, 1e-12), 1e6)
        beta = np.minimum(beta, cap[:, None])
        yt = y[:R, t]
        ft = np.broadcast_to(f[:, t, :], (R, K))
        z = yt - np.sum(b * (ft - f_mean), axis=1)
        log_k += np.log1p(np.maximum(beta * (z - c)[:, None], -1 + 1e-15))
        top = log_k.max(axis=1)
        out[:, t] = top + np.log(np.exp(log_k - top[:, None]).sum(axis=1))
        s_y += yt
        s_yy += yt * yt
        s_f += ft
        s_yf += yt[:, None] * ft
        s_ff += ft[:, :, None] * ft[:, None, :]
    return out - math.log(EDGES.size)


def jury_decide_each_label(*, gold: Floats, f: Floats, minimum: float, confidence: float, min_gold: int) -> Decisions:
    """The first decision along each of S sequences (gold (S, T), NaN pending, -1 N/A) with the signals f
    (S, N, K), or (N, K) shared: audit_stats.decide_each_label with the jury's capital."""
    f = np.asarray(f, dtype=float)
    N = f.shape[-2]
    y_for_pass, y_for_fail = audit_stats.tested_gold(gold=gold, minimum=minimum)
    log_k_pass = jury_log_capital(y=y_for_pass, f=f, m=minimum)
    log_k_fail = jury_log_capital(y=1.0 - y_for_fail, f=1.0 - f, m=1.0 - minimum)
    return audit_stats.first_decisions(
        gold=gold,
        N=N,
        log_k_pass=log_k_pass,
        log_k_fail=log_k_fail,
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
    )


@dataclass(frozen=True)
class JuryEstimate:
    estimate: float | None  # theta_hat (None without settled gold)
    lower: float | None  # the fixed-n normal interval with the finite-population correction, for display
    upper: float | None
    coefficients: tuple[float, ...]  # b, one per signal
    n: int
    N: int


def _fit(y: Floats, fy: Floats) -> Floats:
    if y.size < 2:
        return np.zeros(fy.shape[1])
    centred = fy - fy.mean(axis=0)
    cov_ff = centred.T @ centred / y.size
    cov_yf = centred.T @ (y - y.mean()) / y.size
    return slopes(cov_ff=cov_ff, cov_yf=cov_yf)


def _regression_share(y: Floats, fy: Floats, f: Floats) -> tuple[float, Floats, Floats]:
    b = _fit(y, fy)
    residual = y - fy @ b
    return float(residual.mean() + f.mean(axis=0) @ b), b, residual


def jury_estimate(*, gold: Iterable[float | None], f: Floats, confidence: float = 0.95) -> JuryEstimate:
    """The regression (multivariate PPI++) estimate theta_hat = mean_n(y - b.F) + b.mean_N(F) over the settled
    gold of the labeled prefix, b fitted on it; with N/A gold the ratio of the estimates of the passes and of
    the applicable outputs (as audit_stats.ppi_estimate), without an interval. For display, not for deciding."""
    f = np.asarray(f, dtype=float)
    g, _ = checked(gold=gold, f=f, confidence=confidence)
    N = f.shape[0]
    settled = ~np.isnan(g)
    labeled, fy = g[settled], f[: g.size][settled]
    n = int(labeled.size)
    if n == 0:
        return JuryEstimate(None, None, None, (0.0,) * f.shape[1], 0, N)
    if np.any(labeled == NOT_APPLICABLE):
        passes, b, _ = _regression_share((labeled == 1).astype(float), fy, f)
        applicable, _, _ = _regression_share((labeled != NOT_APPLICABLE).astype(float), fy, f)
        estimate = min(1.0, max(0.0, passes / applicable)) if applicable > 0 else None
        return JuryEstimate(estimate, None, None, tuple(map(float, b)), n, N)
    estimate, b, residual = _regression_share(labeled, fy, f)
    if n < 2:
        return JuryEstimate(estimate, 0.0, 1.0, tuple(map(float, b)), n, N)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    half = z * math.sqrt(max(1 - n / N, 0.0) * float(np.var(residual, ddof=1)) / n)
    lower, upper = min(1.0, max(0.0, estimate - half)), min(1.0, max(0.0, estimate + half))
    return JuryEstimate(estimate, lower, upper, tuple(map(float, b)), n, N)


def checked(*, gold: Iterable[float | None], f: Floats, confidence: float) -> tuple[Floats, Floats]:
    g = audit_stats._as_float_array(gold, name="gold", allow_na=True)
    if f.ndim != 2 or f.shape[0] == 0:
        raise ValueError("the signals must be an (N, K) array with N >= 1")
    if g.size > f.shape[0]:
        raise ValueError(f"gold has {g.size} items but there are only {f.shape[0]} outputs")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return g, f


def jury_decision(
    *,
    gold: Iterable[float | None],
    f: Floats,
    minimum: float,
    confidence: float = 0.95,
    min_gold: int = MIN_GOLD,
) -> AuditDecision:
    """audit_stats.audit_decision with the signals F (N, K) (`predictor(...).scores`) as the predictor: the same
    rule (two one-sided tests at (1 - confidence)/2, the exact rule, min_gold), the same anytime-valid bounds.
    Its `estimate` is `jury_estimate`'s."""
    if not 0 <= minimum <= 1:
        raise ValueError(f"minimum must be between 0 and 1, got {minimum}")
    if min_gold < 1:
        raise ValueError("min_gold must be at least 1")
    g, f = checked(gold=gold, f=np.asarray(f, dtype=float), confidence=confidence)
    N = f.shape[0]
    d = jury_decide_each_label(gold=g[None, :], f=f, minimum=minimum, confidence=confidence, min_gold=min_gold)
    capital: Callable[..., Floats] = jury_log_capital
    bounds = audit_stats._confidence_sequence(f=f, gold=g, confidence=confidence, capital=capital)
    jury = jury_estimate(gold=g, f=f, confidence=confidence)
    n = jury.n
    # The display estimate in audit_stats' shape: lam is the jury's total weight (b summed over the signals).
    estimate = audit_stats.PPIEstimate(jury.estimate, jury.lower, jury.upper, None, sum(jury.coefficients), n, N, True)
    rule = (minimum, confidence, min_gold)
    return audit_stats.decision_of(d, gold=g, N=N, bounds=bounds, estimate=estimate, rule=rule)


@dataclass(frozen=True)
class SignalReading:
    """One signal as the plan page shows it: its correlation with the gold settled so far."""

    name: str
    n: int  # settled PASS/FAIL gold where the signal exists (imputed values left out)
    correlation: float | None  # Pearson's r with gold (phi for a 0/1 signal); None where undefined
    coefficient: float  # its weight b in the jury now
    missing: int  # outputs of the candidate without this signal


@dataclass(frozen=True)
class JuryReading:
    signals: tuple[SignalReading, ...]
    correlation: float | None  # the jury's: r of gold with the combined score b.F on the settled gold
    n: int


def _r(a: Floats, b: Floats) -> float | None:
    if a.size < 2 or np.var(a) <= CONSTANT or np.var(b) <= CONSTANT:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def jury_reading(
    *, gold: Iterable[float | None], p: Predictor, raw: Mapping[str, Sequence[float | None]]
) -> JuryReading:
    """Which signals the jury uses and how each correlates with gold so far (the plan page's table).
    `raw`: the signals before imputation, so an imputed value never counts as agreement."""
    g, f = checked(gold=gold, f=p.scores, confidence=0.95)
    usable = (g == 0) | (g == 1)
    y, fy = g[usable], f[: g.size][usable]
    b = _fit(y, fy)
    readings = []
    for k, name in enumerate(p.names):
        values = np.array([np.nan if v is None else v for v in raw[name][: g.size]], dtype=float)[usable]
        present = ~np.isnan(values)
        readings.append(
            SignalReading(name, int(present.sum()), _r(y[present], values[present]), float(b[k]), p.missing[k])
        )
    return JuryReading(tuple(readings), _r(y, fy @ b), int(y.size))
