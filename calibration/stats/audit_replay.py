"""The uniform audit's decision rule replayed forwards on many simulated orders, a block of labels at a time: what
the forecast reads (audit_forecast.py), without replaying each order from its first label at every horizon.

audit_stats.betting_log_capital runs a test label by label from the first one, a Python step per label; a forecast
near the minimum replays each simulation for tens of thousands of labels, and replaying to a longer horizon
started over. Here each test's state after the labels so far (the running sums its bets read and each edge's log
capital) is carried: the labels every simulation shares are run once, and each later block of labels is one
numpy expression per quantity, every bet of the block at once (a bet reads only sums of the labels before it,
which are running sums). The arithmetic is betting_log_capital's, operation for operation (running sums are the
same additions in the same order, np.cumsum adding one term at a time), so the capitals, and the decisions, are
the same to the bit (tests/calibration/stats/test_audit_replay.py checks it against betting_log_capital and
decide_each_label).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, Self

import numpy as np

from calibration.stats.audit_stats import BET_SHARE, EDGES, FAIL, NOT_APPLICABLE, PASS, PRIOR_WEIGHT, Floats, Ints

# Cells (simulations x labels x edges) per block: big enough that numpy's per-call cost is small beside the
# arithmetic, small enough that a block's temporaries stay a few tens of megabytes.
BLOCK_CELLS = 1 << 20
MIN_BLOCK = 64


@dataclass
class Betting:
    """One test of "theta <= m" (betting_log_capital's) for S sequences after t labels: the sums of the labels'
    gold y, y^2 and y f (S,), the sums of f, f^2 (the order is shared, so one number each) and each edge's log
    capital (S, E)."""

    s_y: Floats
    s_yy: Floats
    s_yf: Floats
    s_f: float
    s_ff: float
    log_k: Floats
    t: int

    @classmethod
    def fresh(cls, S: int) -> Betting:
        return cls(np.zeros(S), np.zeros(S), np.zeros(S), 0.0, 0.0, np.zeros((S, EDGES.size)), 0)

    def repeated(self, S: int) -> Betting:
        """One sequence's state as S alike ones."""
        return Betting(
            np.repeat(self.s_y, S),
            np.repeat(self.s_yy, S),
            np.repeat(self.s_yf, S),
            self.s_f,
            self.s_ff,
            np.repeat(self.log_k, S, axis=0),
            self.t,
        )

    def rows(self, rows: Ints) -> Betting:
        return Betting(self.s_y[rows], self.s_yy[rows], self.s_yf[rows], self.s_f, self.s_ff, self.log_k[rows], self.t)

    def advance(self, y: Floats, order: Order, m: float) -> Floats:
        """The next labels' gold y (S, B): log K after each of them (S, B), as betting_log_capital's `out`."""
        S, B = y.shape
        t0 = self.t
        t = np.arange(t0, t0 + B)
        f = order.f[t0 : t0 + B]
        N = order.N
        # The sums before each label and after the last, (B + 1, ...): the same additions, in order, as the loop's.
        s_y = np.cumsum(np.concatenate([self.s_y[None, :], y.T]), axis=0)
        s_yy = np.cumsum(np.concatenate([self.s_yy[None, :], (y * y).T]), axis=0)
        s_yf = np.cumsum(np.concatenate([self.s_yf[None, :], (y * f[None, :]).T]), axis=0)
        s_f = np.cumsum(np.r_[self.s_f, f])
        s_ff = np.cumsum(np.r_[self.s_ff, f * f])
        y_, yy_, yf_ = s_y[:-1], s_yy[:-1], s_yf[:-1]  # (B, S)
        f_, ff_ = s_f[:-1, None], s_ff[:-1, None]  # (B, 1)
        tt = t[:, None].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            var_f = ff_ / tt - (f_ / tt) ** 2
            cov = yf_ / tt - (y_ / tt) * (f_ / tt)
            lam = np.where(var_f > 1e-12, np.clip(cov / var_f, 0.0, 1.0), 0.0)
        lam = np.where(t[:, None] >= 2, lam, 0.0)  # (B, S)
        rest = (N - t)[:, None]
        f_rest_mean = (order.f_total - f_) / rest
        c = (N * m - y_) / rest - lam * (f_rest_mean - order.f_mean)
        z_min = -lam * (order.f_max_rest[t0 : t0 + B, None] - order.f_mean)
        s_r = y_ - lam * f_
        s_rr = yy_ - 2 * lam * yf_ + lam**2 * ff_
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(t[:, None] > 0, s_r**2 / tt, 0.0)
        w = PRIOR_WEIGHT
        var_r = (w * 0.25 + np.maximum(s_rr - spread, 0.0)) / (tt + w)
        gain = (N / (N - t))[:, None] * EDGES  # (B, E)
        beta = gain[:, None, :] / (var_r[:, :, None] + gain[:, None, :] ** 2)  # (B, S, E)
        room = c - z_min
        with np.errstate(divide="ignore"):
            cap = np.where(room > 1e-12, BET_SHARE / np.maximum(room, 1e-12), 1e6)
        beta = np.minimum(beta, cap[:, :, None])
        z = y.T - lam * (f[:, None] - order.f_mean)
        steps = np.log1p(np.maximum(beta * (z - c)[:, :, None], -1 + 1e-15))  # (B, S, E)
        log_k = np.cumsum(np.concatenate([self.log_k[None], steps]), axis=0)[1:]  # (B, S, E)
        top = log_k.max(axis=2)
        out = top + np.log(np.exp(log_k - top[:, :, None]).sum(axis=2))
        self.s_y, self.s_yy, self.s_yf = s_y[-1].copy(), s_yy[-1].copy(), s_yf[-1].copy()
        self.s_f, self.s_ff = float(s_f[-1]), float(s_ff[-1])
        self.log_k = log_k[-1].copy()
        self.t = t0 + B
        return (out - math.log(EDGES.size)).T  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Order:
    """The judge's scores of every output in the plan's order (N,), with what each bet reads of them."""

    f: Floats
    N: int
    f_mean: float
    f_total: float
    f_max_rest: Floats  # the largest f among the outputs not yet drawn before each label: a suffix maximum

    @classmethod
    def of(cls, f: Floats) -> Order:
        f = np.asarray(f, dtype=float)
        return cls(f, f.size, float(f.mean()), float(f.sum()), np.maximum.accumulate(f[::-1])[::-1])


class Test(Protocol):
    """A test's state carried forwards (Betting here, the jury's in jury_replay.py), read on an order of its kind."""

    def rows(self, rows: Ints) -> Self: ...

    def repeated(self, S: int) -> Self: ...

    def advance(self, y: Floats, order: Any, m: float) -> Floats: ...


@dataclass
class Replay:
    """The uniform audit's two tests and the exact rule's tallies, for S simulated orders after t labels."""

    tests: tuple[Test, Test]  # "theta <= minimum" (PASS) and, on the complements, "theta >= minimum" (FAIL)
    passes: Floats
    fails: Floats
    na: Floats

    def rows(self, rows: Ints) -> Replay:
        return Replay(
            (self.tests[0].rows(rows), self.tests[1].rows(rows)), self.passes[rows], self.fails[rows], self.na[rows]
        )


def first_decisions_forward(
    *, drawn: Ints, f: Floats, shared: int, minimum: float, confidence: float, min_gold: int
) -> tuple[np.ndarray, Ints]:
    """The first decision along each simulated order (drawn (S, N): every output's gold, 1, 0, -1 N/A, no pending)
    and its label (1-based): audit_stats.decide_each_label's, run forwards. The first `shared` labels are the same
    in every simulation and decide nothing (the plan's settled labels before its first pending one: the plan is
    undecided), so they run once. Every simulation decides by label N at the latest (the exact rule)."""
    orders = (Order.of(f), Order.of(1.0 - f))
    rule = (minimum, confidence, min_gold)
    return decisions_forward(drawn, orders, Betting.fresh, shared=shared, rule=rule)


def decisions_forward(
    drawn: Ints,
    orders: tuple[Any, Any],
    fresh: Callable[[int], Test],
    *,
    shared: int,
    rule: tuple[float, float, int],
) -> tuple[np.ndarray, Ints]:
    """first_decisions_forward with any pair of tests: `fresh(S)` starts one for S sequences, `orders` are what
    the PASS test and the FAIL test (on the complements) read of the plan's order; `rule`: (minimum, confidence,
    min_gold)."""
    minimum, confidence, min_gold = rule
    S, N = drawn.shape
    threshold = math.log(2 / (1 - confidence))
    nulls = (minimum, 1.0 - minimum)
    decided = np.full(S, "", dtype=object)
    at = np.full(S, -1)
    head = _tested(drawn[:1, :shared], minimum)
    tests = []
    for side in (0, 1):
        test = fresh(1)
        if shared:
            test.advance(head[side], orders[side], nulls[side])
        tests.append(test.repeated(S))
    seen = drawn[:1, :shared]
    count = (np.sum(seen == 1), np.sum(seen == 0), np.sum(seen == NOT_APPLICABLE))
    state = Replay((tests[0], tests[1]), *(np.full(S, float(c)) for c in count))
    rows = np.arange(S)
    position = shared
    while rows.size and position < N:
        B = min(N - position, max(MIN_BLOCK, BLOCK_CELLS // (rows.size * EDGES.size)))
        gold = drawn[rows, position : position + B]
        ys = _tested(gold, minimum)
        k_pass = state.tests[0].advance(ys[0], orders[0], nulls[0])
        k_fail = state.tests[1].advance(ys[1], orders[1], nulls[1])
        passes = state.passes[:, None] + np.cumsum(gold == 1, axis=1)
        fails = state.fails[:, None] + np.cumsum(gold == 0, axis=1)
        na = state.na[:, None] + np.cumsum(gold == NOT_APPLICABLE, axis=1)
        settled = position + np.arange(1, B + 1)
        allowed = (settled >= min(min_gold, N))[None, :]
        applicable = N - na
        exact_pass = passes >= minimum * applicable - 1e-9
        exact_fail = applicable - fails < minimum * applicable - 1e-9
        any_pass = exact_pass | (allowed & (k_pass >= threshold))
        any_fail = exact_fail | (allowed & (k_fail >= threshold))
        first_pass = np.where(any_pass.any(axis=1), any_pass.argmax(axis=1), B)
        first_fail = np.where(any_fail.any(axis=1), any_fail.argmax(axis=1), B)
        here = np.arange(rows.size)
        is_pass = (first_pass < B) & (first_pass <= first_fail)
        # As first_decisions: both at once only on an error of the tests, and the exact rule breaks the tie.
        is_pass &= ~(is_pass & (first_pass == first_fail) & exact_fail[here, np.minimum(first_fail, B - 1)])
        is_fail = (first_fail < B) & ~is_pass
        decided[rows[is_pass]] = PASS
        decided[rows[is_fail]] = FAIL
        at[rows[is_pass]] = position + first_pass[is_pass] + 1
        at[rows[is_fail]] = position + first_fail[is_fail] + 1
        state.passes, state.fails, state.na = passes[:, -1], fails[:, -1], na[:, -1]
        keep = np.flatnonzero(~(is_pass | is_fail))
        rows, state = rows[keep], state.rows(keep)
        position += B
    return decided, at


def _tested(gold: Ints, minimum: float) -> tuple[Floats, Floats]:
    """What each test reads of settled gold (audit_stats.tested_gold; decide_each_label's FAIL test on the
    complements): N/A counts as the minimum."""
    g = gold.astype(float)
    y = np.where(g == NOT_APPLICABLE, minimum, g)
    return y, 1.0 - y
