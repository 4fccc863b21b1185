"""The jury's test (audit_predictor.jury_log_capital) carried forwards on many simulated orders, a block of labels at
a time: what the jury plan's forecast (jury_forecast.py) replays, as audit_replay.py does for the one-bit test.

jury_log_capital runs a Python step per label for every sequence; a forecast near the minimum replays each
simulation for tens of thousands of labels. Here each test's state (the running sums its slopes and bets read, each
edge's log capital) is carried: the labels every simulation shares run once, and each later block of labels is a
few numpy expressions, every bet of the block at once (a bet reads only sums of the labels before it). What makes
that cheap with K signals: the plan's order is the same in every simulation, so the signals' sums, their
covariance and the slopes' K x K system before each label are one per label, not one per simulation; only the
right-hand side (gold's covariance with the signals) is per simulation, and one solve per label takes all of them.

The arithmetic is jury_log_capital's, term for term (the running sums are the same additions in the same order);
the solve of one system for many right-hand sides and the quadratic form's summation order may differ from it in
the last bits, so tests/calibration/stats/test_jury_replay.py holds the capitals to it within 1e-9 and the
decisions to jury_decide_each_label's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibration.stats.audit_predictor import CONSTANT, SLOPE_PRIOR, slope_system
from calibration.stats.audit_replay import decisions_forward
from calibration.stats.audit_stats import BET_SHARE, EDGES, PRIOR_WEIGHT, Floats, Ints


@dataclass(frozen=True)
class JuryOrder:
    """The signals of every output in the plan's order (N, K), with what each bet reads of them."""

    f: Floats
    N: int
    K: int
    f_mean: Floats  # (K,)
    f_total: Floats  # (K,)
    f_max_rest: Floats  # (N, K): each signal's largest value among the outputs not yet drawn before each label

    @classmethod
    def of(cls, f: Floats) -> JuryOrder:
        f = np.asarray(f, dtype=float)
        N, K = f.shape
        f_max_rest = np.maximum.accumulate(f[::-1], axis=0)[::-1]
        return cls(f, N, K, f.mean(axis=0), f.sum(axis=0), f_max_rest)


@dataclass
class JuryBetting:
    """One test of "theta <= m" (jury_log_capital's) for S sequences after t labels: the sums of the labels' gold
    y, y^2 (S,) and y F (S, K); of F (K,) and F F' (K, K), one each since the order is shared; and each edge's log
    capital, edges first (E, S): the block's arrays are (labels, edges, sequences), so that the sums over the few
    edges run along long rows (numpy reduces a short last axis slowly)."""

    s_y: Floats
    s_yy: Floats
    s_yf: Floats
    s_f: Floats
    s_ff: Floats
    log_k: Floats
    t: int

    @classmethod
    def fresh_for(cls, K: int, S: int) -> JuryBetting:
        return cls(
            np.zeros(S), np.zeros(S), np.zeros((S, K)), np.zeros(K), np.zeros((K, K)), np.zeros((EDGES.size, S)), 0
        )

    def repeated(self, S: int) -> JuryBetting:
        """One sequence's state as S alike ones."""
        return JuryBetting(
            np.repeat(self.s_y, S),
            np.repeat(self.s_yy, S),
            np.repeat(self.s_yf, S, axis=0),
            self.s_f,
            self.s_ff,
            np.repeat(self.log_k, S, axis=1),
            self.t,
        )

    def rows(self, rows: Ints) -> JuryBetting:
        return JuryBetting(
            self.s_y[rows], self.s_yy[rows], self.s_yf[rows], self.s_f, self.s_ff, self.log_k[:, rows], self.t
        )

    def advance(self, y: Floats, order: JuryOrder, m: float) -> Floats:
        """The next labels' gold y (S, B): log K after each of them (S, B), as jury_log_capital's `out`."""
        S, B = y.shape
        t0 = self.t
        t = np.arange(t0, t0 + B)
        f = order.f[t0 : t0 + B]  # (B, K)
        N = order.N
        # The sums before each label and after the last, (B + 1, ...): the same additions, in order, as the loop's.
        yt = y.T  # (B, S)
        s_y = np.cumsum(np.concatenate([self.s_y[None, :], yt]), axis=0)
        s_yy = np.cumsum(np.concatenate([self.s_yy[None, :], yt * yt]), axis=0)
        s_yf = np.cumsum(np.concatenate([self.s_yf[None], yt[:, :, None] * f[:, None, :]]), axis=0)  # (B+1, S, K)
        s_f = np.cumsum(np.concatenate([self.s_f[None], f]), axis=0)  # (B + 1, K)
        s_ff = np.cumsum(np.concatenate([self.s_ff[None], f[:, :, None] * f[:, None, :]]), axis=0)
        y_, yy_, yf_ = s_y[:-1], s_yy[:-1], s_yf[:-1]
        f_, ff_ = s_f[:-1], s_ff[:-1]
        b = _slopes(t, y_, yf_, f_, ff_)  # (B, S, K)
        rest = (N - t).astype(float)
        f_rest_mean = (order.f_total - f_) / rest[:, None]  # (B, K)
        # Four weighted sums b . x a label, one matrix product for all (B, S, 4): what the null mean c, the smallest
        # z, the residuals' sum and z itself read of the signals.
        x = np.stack(
            [f_rest_mean - order.f_mean, order.f_max_rest[t0 : t0 + B] - order.f_mean, f_, f - order.f_mean], axis=2
        )
        bx = b @ x
        c = (N * m - y_) / rest[:, None] - bx[:, :, 0]
        z_min = -bx[:, :, 1]
        s_r = y_ - bx[:, :, 2]
        s_rr = yy_ - 2 * np.einsum("bsk,bsk->bs", b, yf_) + np.einsum("bsk,bsk->bs", b @ ff_, b)
        tt = t[:, None].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(tt > 0, s_r**2 / tt, 0.0)
        w = PRIOR_WEIGHT
        var_r = (w * 0.25 + np.maximum(s_rr - spread, 0.0)) / (tt + w)
        gain = ((N / rest)[:, None] * EDGES)[:, :, None]  # (B, E, 1)
        beta = gain / (var_r[:, None, :] + gain**2)  # (B, E, S)
        room = c - z_min
        with np.errstate(divide="ignore"):
            cap = np.where(room > 1e-12, BET_SHARE / np.maximum(room, 1e-12), 1e6)
        beta = np.minimum(beta, cap[:, None, :])
        z = yt - bx[:, :, 3]
        log_k = np.log1p(np.maximum(beta * (z - c)[:, None, :], -1 + 1e-15))  # the steps, (B, E, S)
        # Each label's step added to the capital before it, in order: the loop's additions (numpy's cumsum along
        # the first axis of a 3-d array is several times slower than these B row additions).
        log_k[0] += self.log_k
        for i in range(1, B):
            log_k[i] += log_k[i - 1]
        top = log_k.max(axis=1)
        out = top + np.log(np.exp(log_k - top[:, None, :]).sum(axis=1))
        self.s_y, self.s_yy, self.s_yf = s_y[-1].copy(), s_yy[-1].copy(), s_yf[-1].copy()
        self.s_f, self.s_ff = s_f[-1].copy(), s_ff[-1].copy()
        self.log_k = log_k[-1].copy()
        self.t = t0 + B
        return (out - math.log(EDGES.size)).T  # type: ignore[no-any-return]


def _slopes(t: Ints, y_: Floats, yf_: Floats, f_: Floats, ff_: Floats) -> Floats:
    """audit_predictor.slopes before each label t (B,) of S sequences (B, S, K), 0 before the third label: the
    system is the order's, one per label, solved once for every sequence's right-hand side."""
    B, S, K = yf_.shape
    tt = np.maximum(t, 1).astype(float)
    mean_f = f_ / tt[:, None]  # (B, K)
    cov_ff = ff_ / tt[:, None, None] - mean_f[:, :, None] * mean_f[:, None, :]
    cov_yf = yf_ / tt[:, None, None] - (y_ / tt[:, None])[:, :, None] * mean_f[:, None, :]
    var = np.diagonal(cov_ff, axis1=-2, axis2=-1)  # (B, K)
    varies = var > CONSTANT
    if K == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(varies[:, None, :], cov_yf / var[:, None, :], 0.0)
    else:
        system = slope_system(cov_ff=cov_ff, shrink=SLOPE_PRIOR / tt)
        rhs = np.where(varies[:, None, :], cov_yf, 0.0)  # (B, S, K)
        # One inverse a label for all S right-hand sides: several times faster than a solve with S columns, and as
        # accurate here (the ridge keeps the system well conditioned: test_jury_replay.py holds it to the solve).
        b = rhs @ np.linalg.inv(system).transpose(0, 2, 1)
    b = np.clip(b, 0.0, 1.0)
    return np.where((t >= 2)[:, None, None], b, 0.0)


def jury_decisions_forward(
    *, drawn: Ints, f: Floats, shared: int, minimum: float, confidence: float, min_gold: int
) -> tuple[np.ndarray, Ints]:
    """The first decision along each simulated order (drawn (S, N): every output's gold, no pending) and its label
    (1-based) with the jury's test on the signals f (N, K): jury_decide_each_label's, run forwards (the first
    `shared` labels, every simulation's and deciding nothing, once)."""
    f = np.asarray(f, dtype=float)
    K = f.shape[1]
    orders = (JuryOrder.of(f), JuryOrder.of(1.0 - f))
    return decisions_forward(
        drawn, orders, lambda S: JuryBetting.fresh_for(K, S), shared=shared, rule=(minimum, confidence, min_gold)
    )
