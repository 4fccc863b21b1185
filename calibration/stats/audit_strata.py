"""Stratified audits: the judge's verdict splits the candidate in two, and each half gets its own test.

Pure functions over arrays (numpy), no Django; the statistics of a stratified audit plan, beside audit_stats.py's
uniform one.

The design:
- **Strata.** Stratum 0 holds the outputs the judge passed, stratum 1 the rest (judged FAIL, or no usable
  verdict: any fixed split is valid, and these few are closest to the FAILs in what they tell). Each stratum is
  labeled in its own uniformly random order: the plan's order restricted to the stratum (a uniform permutation
  restricted to a subset is a uniform permutation of it, and the strata's orders are independent).
- **Which labels, in what sequence.** A plan releases the next outputs of its order, whatever their strata, and
  counts their labels in that sequence (the `path`: the stratum of each label, in the order). Annotators are
  blind to the judge so that gold does not anchor on it; a release chosen from the labels would be one stratum's
  and tell them the judge's verdict on all of it (issue 41). The order's sequence of strata is drawn with it,
  before any label, so the path is a fixed allocation and the product of the strata's tests a test
  supermartingale. `next_batch` is the adaptive allocation plans used before (each batch from the stratum the
  labels so far point to): `replay` still runs it without a path, for the bench's comparison of what blindness
  costs (bench/audit.py --design adaptive; docs/calibration.md, "Stratified plans").
- **The tests.** "pass rate <= m" holds when the strata's totals s_0 + s_1 = m N for some split (with N/A gold
  counted as m, as audit_stats does, so the totals are real numbers). Each stratum has audit_stats' mixture of
  Kelly bets without replacement (without the control variate: inside a stratum the judge is constant); the
  null is rejected once the product of the two capitals clears 2 / (1 - confidence) at every split, as in
  stratified risk-limiting audits. A stratum's capital falls as its null total rises (`stratum_log_capital`), so
  the splits need not be enumerated one by one: on a grid g_0 < g_1 < ... of s_0, the pair (g_(i+1),
  m N - g_i) is below every split with s_0 in [g_i, g_(i+1)] (`_pairs`), and a grid of integers (or, on large
  strata, of SPLIT_POINTS points) covers them all. "pass rate >= m" is the same test on the complements.
- **The exact rule and the minimum of gold** as in audit_stats.

What is assumed: only the seeded uniform orders and that each label's stratum is fixed before its gold is seen.
Nothing about the judge: a poor one costs labels, never validity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from calibration.stats.audit_stats import (
    BET_SHARE,
    EDGES,
    FAIL,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    PRIOR_WEIGHT,
    Bools,
    Floats,
    Ints,
    Objects,
)
from calibration.stats.strata_kernel import running_products, through_block

# The strata: the judge passed it (0), or not (1: FAIL or no usable verdict).
JUDGE_PASS, JUDGE_REST = 0, 1
# The adaptive allocation (next_batch) keeps at least this share of the labels in each stratum (while it lasts): the
# other stratum's estimate must not starve, since the choice reads it (bench/audit_strata.py measured 0.10).
FLOOR = 0.10
# At most this many grid points over a stratum's null totals (integers below it); more only narrows the slack
# the pairs leave, a grid step of s_0 at most.
SPLIT_POINTS = 400


def strata_of(verdicts: Sequence[float | None] | Floats) -> Ints:
    """The stratum of each output from the judge's verdict (1 PASS, 0 FAIL, None/NaN none): 0 for PASS, else 1."""
    raw = np.array([np.nan if v is None else v for v in verdicts], dtype=float).ravel()
    return np.where(raw == 1.0, JUDGE_PASS, JUDGE_REST).astype(np.int8)


# The log capital of a test whose null the draws so far refute (more passes drawn than the null's total): the
# null is false whatever the rest, so rejecting it risks nothing. Finite, so sums and differences stay numbers.
REFUTED = 1e9


def stratum_log_capital(*, y: Floats, nulls: Floats, size: int, shared: int = 0) -> Floats:
    """log K of the test "the stratum's total <= s", for each null total s in `nulls` (G,) or one row per sequence
    (S, G), before and after each draw of S sequences y (S, T) of values in [0, 1] from one stratum of `size`
    outputs: (S, G, T + 1). `shared`: the first draws are the same in every sequence (a forecast's settled
    labels), so with one row of nulls they are run once.

    Without replacement, under total s the next draw's conditional mean is c = (s - drawn so far) / (outputs
    left); K = prod (1 + beta (y - c)), the average over EDGES of Kelly bets for a mean EDGES above the null's,
    each capped at BET_SHARE / c (so a draw of 0 keeps the capital positive); the residual variance is shrunk
    towards 1/4 with PRIOR_WEIGHT pseudo-labels. beta does not depend on s except through the cap, and each
    factor falls as c rises, so the capital falls as s rises: what `_pairs` rests on. Once the draws exceed s, the
    null is refuted and the capital is REFUTED (which keeps it falling in s). The draws are run in blocks
    (`Running`): the cost is the draws times the null totals, whatever the stratum's size.
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    S, T = y.shape
    if T > size:
        raise ValueError("more draws than outputs in the stratum")
    one_row = np.ndim(nulls) == 1
    nulls = np.broadcast_to(np.asarray(nulls, dtype=float), (S, np.shape(nulls)[-1]))
    out = np.zeros((S, nulls.shape[1], T + 1))
    shared = min(shared, T) if one_row and S > 1 else 0
    state = Running.fresh(1 if shared else S, nulls.shape[1])
    if shared:
        for at, block in state.blocks(y[:1, :shared], nulls[:1], size):
            out[:, :, at + 1 : at + 1 + block.shape[0]] = block.transpose(1, 2, 0)
        state = state.repeated(S)
    for at, block in state.blocks(y[:, shared:], nulls, size):
        out[:, :, shared + at + 1 : shared + at + 1 + block.shape[0]] = block.transpose(1, 2, 0)
    return out


# A block of draws holds about this many cells (draws x sequences x EDGES x null totals) in each of its arrays:
# large enough that numpy's per-call cost is small beside the arithmetic, small enough to stay in the caches.
BLOCK_CELLS = 1 << 18


# A block's capitals are products of at most this many factors before they are rescaled. For draws y in [0, 1] a
# factor 1 + beta (y - c) is at least 1 - BET_SHARE where the cap holds (beta <= BET_SHARE / c), at least 1 - 1e-6
# where c <= 1e-12 (beta <= 1e6), and at most 1 + beta (1 + |c|) with beta <= sqrt(draws + PRIOR_WEIGHT) / 2 (the
# variance prior): at a million outputs 32 of them stay far inside a float's range.
RESCALE = 32


@dataclass
class Running:
    """One stratum's tests at G null totals for S sequences after `t` draws: each edge's capital as
    capital[s, e, g] * exp(scale[s, g]) (products, rescaled before they could overflow or underflow), and the sums
    of the draws and of their squares (S,). `advance` takes the next draws as a block, every bet of the block in one
    numpy expression: a bet reads only sums of the draws before it (running sums, carried), so only the capitals'
    products run draw by draw, a slab of (S, E, G) at a time."""

    capital: Floats
    scale: Floats
    s_y: Floats
    s_yy: Floats
    t: int

    @classmethod
    def fresh(cls, S: int, G: int) -> Running:
        return cls(np.ones((S, EDGES.size, G)), np.zeros((S, G)), np.zeros(S), np.zeros(S), 0)

    def repeated(self, S: int) -> Running:
        return Running(
            np.repeat(self.capital, S, axis=0),
            np.repeat(self.scale, S, axis=0),
            np.repeat(self.s_y, S),
            np.repeat(self.s_yy, S),
            self.t,
        )

    def rows(self, rows: Ints) -> Running:
        """The state of sequences `rows` only."""
        return Running(self.capital[rows], self.scale[rows], self.s_y[rows], self.s_yy[rows], self.t)

    def step(self) -> int:
        """Draws per block: about BLOCK_CELLS cells, at most RESCALE draws."""
        return max(1, min(RESCALE, BLOCK_CELLS // max(1, self.capital.size)))

    def blocks(self, y: Floats, nulls: Floats, size: int) -> Iterator[tuple[int, Floats]]:
        """Advance by the draws y (S, T), a block at a time: (the block's first draw in y, log K after each of its
        draws (B, S, G))."""
        step = self.step()
        for at in range(0, y.shape[1], step):
            yield at, self.advance(y[:, at : at + step], nulls, size)

    def advance(self, y: Floats, nulls: Floats, size: int, *, every: bool = True) -> Floats:
        """The draws y (S, B) in sequence at null totals `nulls` (S, G) (or (1, G)): log K after each draw
        (B, S, G), or with every=False after the last only (S, G). The arithmetic is that of one draw at a time
        (the sums of draws are the same additions in the same order; only the rescaling falls elsewhere)."""
        S, B = y.shape
        if B > self.step():
            parts = [
                self.advance(y[:, at : at + self.step()], nulls, size, every=every) for at in range(0, B, self.step())
            ]
            return np.concatenate(parts) if every else parts[-1]
        if B == 0:
            return np.zeros((0, S, nulls.shape[-1])) if every else self.last(nulls)
        t = self.t + np.arange(B)
        # The sums before each draw, and after the last: (B + 1, S).
        s_y = np.cumsum(np.concatenate([self.s_y[None, :], y.T]), axis=0)
        s_yy = np.cumsum(np.concatenate([self.s_yy[None, :], (y**2).T]), axis=0)
        before, before_yy = s_y[:-1], s_yy[:-1]
        spread = np.divide(before**2, t[:, None], out=np.zeros_like(before), where=t[:, None] > 0)
        var = (PRIOR_WEIGHT * 0.25 + np.maximum(before_yy - spread, 0.0)) / (t + PRIOR_WEIGHT)[:, None]  # (B, S)
        gain = (size / (size - t))[:, None] * EDGES  # (B, E)
        beta = gain[:, None, :] / (var[:, :, None] + gain[:, None, :] ** 2)  # (B, S, E)
        c = (nulls[None, :, :] - before[:, :, None]) / (size - t)[:, None, None]  # (B, S, G)
        cap = np.where(c > 1e-12, BET_SHARE / np.maximum(c, 1e-12), 1e6)  # the null moves only the cap
        # Each factor min(beta, cap) (y - c) + 1 (B, S, E, G) is at least 1 - BET_SHARE for draws in [0, 1]
        # (RESCALE), so no floor is needed; strata_kernel multiplies them through without storing them.
        yc = y.T[:, :, None] - c
        self.s_y, self.s_yy, self.t = s_y[-1].copy(), s_yy[-1].copy(), self.t + B
        if not every:
            self.capital = through_block(beta, cap, yc, self.capital)
            total = self.capital.sum(axis=1)
            self._rescale(total)
            return self.last(nulls)
        total, self.capital = running_products(beta, cap, yc, self.capital)  # (B, S, G), (S, E, G)
        out = self.scale + np.log(total) - math.log(EDGES.size)
        self._rescale(total[-1])
        # Draws already above a null total refute it outright: no order could make it true.
        return np.where(s_y[1:, :, None] > nulls[None, :, :] + 1e-9, REFUTED, out)

    def _rescale(self, total: Floats) -> None:
        self.capital /= total[:, None, :]
        self.scale = self.scale + np.log(total)

    def last(self, nulls: Floats) -> Floats:
        """log K now (S, G)."""
        out = self.scale + np.log(self.capital.sum(axis=1)) - math.log(EDGES.size)
        return np.where(self.s_y[:, None] > nulls + 1e-9, REFUTED, out) if self.t else out


def split_grid(total: float, sizes: tuple[int, int], points: int = SPLIT_POINTS) -> Floats:
    """A grid of stratum 0's null total s_0 over its range under s_0 + s_1 = total, 0 <= s_h <= N_h: every integer
    inside it and both ends (at most `points` + 1 evenly spaced points on large strata)."""
    n0, n1 = sizes
    lo, hi = max(0.0, total - n1), min(float(n0), total)
    if hi - lo <= 1e-12:
        return np.array([hi, hi])
    if hi - lo <= points:
        return np.concatenate([[lo], np.arange(math.floor(lo) + 1, math.ceil(hi)), [hi]])
    return np.linspace(lo, hi, points + 1)


def refine(grid: Floats, around: Floats, *, width: float = 10.0, step: float = 0.1) -> Floats:
    """Per sequence, `grid` (G,) with points `step` apart added within `width` of around[s] (S,): (S, G') sorted,
    padded with the grid's end. The pairs' slack is a grid step, and the hardest split is where it counts."""
    lo, hi = grid[0], grid[-1]
    fine = np.arange(-width, width + step / 2, step)
    rows = [np.unique(np.concatenate([grid, np.clip(a + fine, lo, hi)])) for a in np.atleast_1d(around)]
    rows = [r if r.size > 1 else np.repeat(r, 2) for r in rows]  # a range of one point: one pair, (hi, total - hi)
    longest = max(r.size for r in rows)
    return np.stack([np.concatenate([r, np.full(longest - r.size, hi)]) for r in rows])


def _pairs(total: float, grid: Floats, n1: int) -> tuple[Floats, Floats]:
    """The null totals (stratum 0's, stratum 1's), one pair per grid step, whose products lie below the product at
    every split s_0 + s_1 = total: for s_0 in [g_i, g_(i+1)], (g_(i+1), total - g_i) (each capital falls as its
    null total rises). grid (G,) or one row per sequence (S, G); pairs (..., G - 1)."""
    return grid[..., 1:], np.minimum(total - grid[..., :-1], float(n1))


@dataclass(frozen=True)
class _Side:
    """One side's test: each stratum's log capital at each pair and count (S, P, T_h + 1), and the pairs (S, P)."""

    tables: tuple[Floats, Floats]
    pairs: tuple[Floats, Floats]

    def products(self, rows: Ints, counts: Ints) -> Floats:
        """log of each pair's product for sequences `rows` at their counts (len(rows), 2): (len(rows), P)."""
        return self.tables[0][rows, :, counts[:, 0]] + self.tables[1][rows, :, counts[:, 1]]

    def at(self, rows: Ints, counts: Ints) -> Floats:
        """The smallest product over the pairs: the test's log capital (len(rows),)."""
        return cast(Floats, self.products(rows, counts).min(axis=1))

    def hardest(self, rows: Ints, counts: Ints) -> Floats:
        """Stratum 0's null total at the pair with the smallest product (len(rows),)."""
        return cast(Floats, self.pairs[0][rows, self.products(rows, counts).argmin(axis=1)])


def _side(
    ys: tuple[Floats, Floats],
    sizes: tuple[int, int],
    total: float,
    grid: Floats,
    shared: tuple[int, int] = (0, 0),
) -> _Side:
    S = ys[0].shape[0]
    pairs = _pairs(total, grid, sizes[1])
    tables = tuple(stratum_log_capital(y=ys[h], nulls=pairs[h], size=sizes[h], shared=shared[h]) for h in (0, 1))
    pairs = (np.broadcast_to(pairs[0], (S, pairs[0].shape[-1])), np.broadcast_to(pairs[1], (S, pairs[1].shape[-1])))
    return _Side(tables, pairs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Tests:
    """Both sides' tests for S sequences: the PASS test ("pass rate <= m" rejected) and the FAIL test ("pass rate
    >= m" rejected, the same test on the complements)."""

    pass_side: _Side
    fail_side: _Side
    # Per stratum, the prefix sums of the values each test reads (S, T_h + 1): for the allocation.
    sums_pass: tuple[Floats, Floats]
    sums_fail: tuple[Floats, Floats]


def build_tests(
    gold: tuple[Floats, Floats],
    sizes: tuple[int, int],
    minimum: float,
    grids: tuple[Floats, Floats] | None = None,
    shared: tuple[int, int] = (0, 0),
) -> Tests:
    """The tests on per-stratum gold sequences ((S, T_0), (S, T_1): 1, 0, -1 N/A, NaN pending), each in its stratum's
    order. A pending item counts as FAIL for the PASS test and as PASS for the FAIL test; N/A as the minimum.
    grids: stratum 0's null totals for each side ((G,) or (S, G)), split_grid's by default. shared: per stratum,
    how many first labels are the same in every sequence (stratum_log_capital)."""
    N = sizes[0] + sizes[1]
    totals = (minimum * N, (1.0 - minimum) * N)
    if grids is None:
        grids = (split_grid(totals[0], sizes), split_grid(totals[1], sizes))
    y_pass = tuple(np.where(np.isnan(g), 0.0, np.where(g == NOT_APPLICABLE, minimum, g)) for g in gold)
    y_fail = tuple(1.0 - np.where(np.isnan(g), 1.0, np.where(g == NOT_APPLICABLE, minimum, g)) for g in gold)
    return Tests(
        _side(y_pass, sizes, totals[0], grids[0], shared),  # type: ignore[arg-type]
        _side(y_fail, sizes, totals[1], grids[1], shared),  # type: ignore[arg-type]
        (_prefix_sums(y_pass[0]), _prefix_sums(y_pass[1])),
        (_prefix_sums(y_fail[0]), _prefix_sums(y_fail[1])),
    )


def next_batch(tests: Tests, rows: Ints, counts: Ints, sizes: tuple[int, int], minimum: float, k: int) -> Ints:
    """The stratum of each of the next k labels (len(rows), k) of sequences `rows` at their counts (len(rows), 2).

    The side served is the one the labels point to (the stratified estimate against the minimum). At that side's
    hardest pair, a stratum's next label would grow the test by about (its estimated rate - the null's mean for its
    next draw)^2 / its variance: the batch goes to the stratum where that is larger, except that each keeps at
    least FLOOR of all labels (while it lasts), and a full stratum gets none. It reads only the labels before the
    batch: a predictable choice.
    """
    pass_products = tests.pass_side.products(rows, counts)
    fail_products = tests.fail_side.products(rows, counts)
    here = np.arange(rows.size)
    worst = (pass_products.argmin(axis=1), fail_products.argmin(axis=1))
    # The values the tests read, summed over each stratum's labels so far (the FAIL test's on the complements).
    sum_pass = [tests.sums_pass[h][rows, counts[:, h]] for h in (0, 1)]
    sum_fail = [tests.sums_fail[h][rows, counts[:, h]] for h in (0, 1)]
    # The side the labels point to: the stratified estimate of the pass rate (each stratum's mean, N/A as the
    # minimum, weighted by its size) against the minimum.
    means = [(sum_pass[h] + 0.5) / (counts[:, h] + 1) for h in (0, 1)]
    serve_pass = sizes[0] * means[0] + sizes[1] * means[1] >= minimum * (sizes[0] + sizes[1])
    scores = []
    for h in (0, 1):
        n, rest = counts[:, h], np.maximum(sizes[h] - counts[:, h], 1)
        side = []
        for sums, test, hardest in (
            (sum_pass[h], tests.pass_side, worst[0]),
            (sum_fail[h], tests.fail_side, worst[1]),
        ):
            null_mean = (test.pairs[h][rows, hardest] - sums) / rest
            rate = (sums + 1) / (n + 2)
            side.append(np.maximum(rate - null_mean, 0) ** 2 / (rate * (1 - rate) + 0.01))
        scores.append(np.where(serve_pass, side[0], side[1]))
    best = np.where(scores[0] >= scores[1], 0, 1)
    out = np.empty((rows.size, k), dtype=np.int8)
    taken = counts.copy()
    for i in range(k):
        t = taken.sum(axis=1) + 1
        stratum = np.where(taken[:, 0] < FLOOR * t, 0, np.where(taken[:, 1] < FLOOR * t, 1, best))
        stratum = np.where(taken[:, 0] >= sizes[0], 1, np.where(taken[:, 1] >= sizes[1], 0, stratum))
        out[:, i] = stratum
        taken[here, stratum] += taken.sum(axis=1) < sizes[0] + sizes[1]
    return out


def _prefix_sums(values: Floats | Bools) -> Floats:
    """(S, T) -> (S, T + 1): the sum of the first n values for n = 0..T."""
    return np.concatenate([np.zeros((values.shape[0], 1)), np.cumsum(values, axis=1)], axis=1)


@dataclass(frozen=True)
class _Counters:
    """Per stratum, the prefix sums a decision reads at any counts: passes, fails, N/A and settled gold."""

    passes: tuple[Floats, Floats]
    fails: tuple[Floats, Floats]
    na: tuple[Floats, Floats]
    settled: tuple[Floats, Floats]

    @classmethod
    def of(cls, gold: tuple[Floats, Floats]) -> _Counters:
        def sums(test: Callable[[Floats], Bools]) -> tuple[Floats, Floats]:
            return (_prefix_sums(test(gold[0])), _prefix_sums(test(gold[1])))

        return cls(
            sums(lambda g: g == 1),
            sums(lambda g: g == 0),
            sums(lambda g: g == NOT_APPLICABLE),
            sums(lambda g: ~np.isnan(g)),
        )

    @staticmethod
    def total(which: tuple[Floats, Floats], rows: Ints, counts: Ints) -> Floats:
        return which[0][rows, counts[:, 0]] + which[1][rows, counts[:, 1]]


def _decide_at(
    tests: Tests,
    counters: _Counters,
    rows: Ints,
    counts: Ints,
    N: int,
    minimum: float,
    threshold: float,
    min_gold: int,
) -> tuple[Objects, Objects]:
    """The decision of sequences `rows` at their counts (len(rows), 2): "PASS", "FAIL" or "", and how ("exact",
    "test" or ""). The exact rule first (it cannot err), then the tests once min_gold items are settled."""
    passes = counters.total(counters.passes, rows, counts)
    fails = counters.total(counters.fails, rows, counts)
    applicable = N - counters.total(counters.na, rows, counts)
    allowed = counters.total(counters.settled, rows, counts) >= min(min_gold, N)
    exact_pass = passes >= minimum * applicable - 1e-9
    exact_fail = applicable - fails < minimum * applicable - 1e-9
    test_pass = allowed & (tests.pass_side.at(rows, counts) >= threshold)
    test_fail = allowed & (tests.fail_side.at(rows, counts) >= threshold)
    decided = np.select([exact_pass, exact_fail, test_pass, test_fail], [PASS, FAIL, PASS, FAIL], "")
    by = np.select([exact_pass | exact_fail, test_pass | test_fail], ["exact", "test"], "")
    return decided.astype(object), by.astype(object)


def _allocate(
    *,
    tests: Tests,
    counters: _Counters,
    sizes: tuple[int, int],
    start: Ints,
    minimum: float,
    threshold: float,
    k: int,
    first_k: int | None,
    min_gold: int,
    limits: tuple[int, int],
    path: Ints | None = None,
) -> tuple[Ints, Ints, Objects, Ints, Bools]:
    """S audits from counts `start`, along `path` or in batches from `next_batch`, until each decides on `tests`
    (whose tables reach `limits` labels per stratum): the labels' strata (S, N; -1 after the decision), the counts
    then (S, 2), the decisions (S,), the labels in all then (S,), and which audits stopped at a limit undecided
    (S,)."""
    N = sizes[0] + sizes[1]
    counts = start.astype(int).copy()
    everyone = np.arange(counts.shape[0])
    decided, _ = _decide_at(tests, counters, everyone, counts, N, minimum, threshold, min_gold)
    at = np.where(decided != "", counts.sum(axis=1), -1)
    over = np.zeros(counts.shape[0], dtype=bool)
    todo = np.flatnonzero(decided == "")
    steps = np.full((counts.shape[0], N), -1, dtype=np.int8)
    limit = np.array(limits)
    size = k if first_k is None else first_k
    while todo.size:
        if path is None:
            batch = next_batch(tests, todo, counts[todo], sizes, minimum, size)
        else:
            ahead = np.minimum(counts[todo].sum(axis=1)[:, None] + np.arange(size), N - 1)
            batch = np.take_along_axis(path[todo], ahead, axis=1)
        for i in range(size):
            stratum = batch[:, i]
            beyond = (counts[todo, stratum] >= limit[stratum]) & (limit[stratum] < np.array(sizes)[stratum])
            over[todo[beyond]] = True
            todo, batch, stratum = todo[~beyond], batch[~beyond], stratum[~beyond]
            steps[todo, counts[todo].sum(axis=1)] = stratum
            counts[todo, stratum] += 1
            now, _ = _decide_at(tests, counters, todo, counts[todo], N, minimum, threshold, min_gold)
            hit = now != ""
            decided[todo[hit]] = now[hit]
            at[todo[hit]] = counts[todo[hit]].sum(axis=1)
            todo, batch = todo[~hit], batch[~hit]
            if not todo.size:
                break
        size = k
    return steps, counts, decided, at, over


# Tables are built this many labels per stratum past the furthest start, then fourfold for the audits still
# undecided there: most decide long before a stratum runs out, and a table costs its length.
FIRST_HORIZON = 64


def run_allocation(
    *,
    gold: tuple[Floats, Floats],
    start: Ints,
    minimum: float,
    threshold: float,
    k: int,
    first_k: int | None,
    min_gold: int,
    grids: tuple[Floats, Floats] | None = None,
    shared: tuple[int, int] = (0, 0),
    path: Ints | None = None,
) -> tuple[Ints, Ints, Objects, Ints, Floats]:
    """_allocate on tables that grow as far as the audits need: the same results as tables of whole strata (each
    audit's labels depend only on the gold before them, so one stopped at a limit is replayed from its start with
    longer tables). Also each side's hardest split (stratum 0's null total) at each audit's end (S,), (S,)."""
    sizes = (gold[0].shape[1], gold[1].shape[1])
    S = start.shape[0]
    steps = np.full((S, sizes[0] + sizes[1]), -1, dtype=np.int8)
    counts = np.zeros((S, 2), dtype=int)
    decided = np.full(S, "", dtype=object)
    at = np.full(S, -1)
    hardest = (np.zeros(S), np.zeros(S))
    rows = np.arange(S)
    step = FIRST_HORIZON
    while rows.size:
        limits = tuple(min(sizes[h], int(start[rows, h].max()) + step) for h in (0, 1))
        part = (gold[0][rows, : limits[0]], gold[1][rows, : limits[1]])
        tests = build_tests(part, sizes, minimum, grids, shared)
        out = _allocate(
            tests=tests,
            counters=_Counters.of(part),
            sizes=sizes,
            start=start[rows],
            minimum=minimum,
            threshold=threshold,
            k=k,
            first_k=first_k,
            min_gold=min_gold,
            limits=limits,
            path=None if path is None else path[rows],
        )
        done = ~out[4]
        here = np.flatnonzero(done)
        steps[rows[done]], counts[rows[done]], decided[rows[done]], at[rows[done]] = (x[done] for x in out[:4])
        hardest[0][rows[done]] = tests.pass_side.hardest(here, out[1][done])
        hardest[1][rows[done]] = tests.fail_side.hardest(here, out[1][done])
        rows = rows[~done]
        step *= 4
    return steps, counts, decided, at, np.stack(hardest)


def replay(
    *,
    gold: tuple[Floats, Floats],
    start: Ints,
    minimum: float,
    confidence: float = 0.95,
    k: int = 25,
    first_k: int | None = None,
    min_gold: int = MIN_GOLD,
    path: Ints | None = None,
) -> tuple[Objects, Ints]:
    """The first decision, and the labels in all when it came, of S simulated audits going on from per-sequence
    counts `start` (S, 2). gold ((S, N_0), (S, N_1)): every output's gold in its stratum's order (1, 0, -1 N/A,
    NaN pending). The labels are counted along `path` (S, N), the stratum of every label from the first, as a plan
    counts them (its order's own sequence); without one they come in batches from the adaptive `next_batch`, of
    first_k (default k) and then k each. An audit that labels everything decides by the exact rule at the latest.

    As a plan does it: the labels are counted (or batches chosen) on split_grid's grid, the decision is read on a
    grid refined around each side's hardest split (`refine`), which only raises the tests' lower bounds on the
    product at every split (so it decides sooner, never wrongly more often)."""
    sizes = (gold[0].shape[1], gold[1].shape[1])
    N = sizes[0] + sizes[1]
    threshold = math.log(2 / (1 - confidence))
    steps, counts, _, _, hardest = run_allocation(
        gold=gold, start=start, minimum=minimum, threshold=threshold, k=k, first_k=first_k, min_gold=min_gold, path=path
    )
    grids = (
        refine(split_grid(minimum * N, sizes), hardest[0]),
        refine(split_grid((1 - minimum) * N, sizes), hardest[1]),
    )
    # The refined tables need only reach the labels each audit took.
    part = (gold[0][:, : counts[:, 0].max()], gold[1][:, : counts[:, 1].max()])
    fine = build_tests(part, sizes, minimum, grids)
    counters = _Counters.of(part)
    rows = np.arange(start.shape[0])
    counts = start.astype(int).copy()
    decided, _ = _decide_at(fine, counters, rows, counts, N, minimum, threshold, min_gold)
    at = np.where(decided != "", counts.sum(axis=1), -1)
    for position in range(int(start.sum(axis=1).min()), N):  # the same labels, read on the refined grid
        step = steps[:, position]
        todo = np.flatnonzero((decided == "") & (step >= 0))
        if not todo.size:
            if not np.any(steps[:, position:] >= 0):
                break
            continue
        counts[todo, step[todo]] += 1
        now, _ = _decide_at(fine, counters, todo, counts[todo], N, minimum, threshold, min_gold)
        hit = now != ""
        decided[todo[hit]] = now[hit]
        at[todo[hit]] = counts[todo[hit]].sum(axis=1)
    return decided, at


# --- A plan's figures: one audit, read along its path (the strata of its labels, in the order) ---------------------
