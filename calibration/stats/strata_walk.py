"""A stratified test read along a path of strata, a block of labels at a time: what a plan's decision, its bounds and
its forecast read, without tables of every stratum's capital at every count.

audit_strata.py's `Tests` hold each stratum's log capital at every pair of null totals and every count, (S, pairs,
labels): fine for a few hundred outputs, gigabytes for a forecast's simulations on a large candidate. Along one path
(the plan's order of strata, the same in every simulation), the test after label t reads each stratum at its count
then, so the strata's capitals are run forwards together (`audit_strata.Running`) and each block of labels is read
and dropped: the memory is a block's, and the time the labels' times the pairs, whatever N. The tests and what they
assume are audit_strata.py's; the arithmetic is the same, so they decide the same (tests/calibration/stats/
test_strata_size.py checks it against the implementation this replaced).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from calibration.stats.audit_stats import EDGES, FAIL, NOT_APPLICABLE, PASS, Floats, Ints
from calibration.stats.audit_strata import BLOCK_CELLS, Running, _pairs

# A walk reads at least this many labels a block, so numpy's per-call cost stays small beside the arithmetic.
MIN_BLOCK = 32


@dataclass
class SideWalk:
    """One side's test for S sequences along a path: each stratum's running test at its null totals (the pairs of
    a grid, (1, P) shared by every sequence), and each stratum's log capital at its count so far (S, P)."""

    states: tuple[Running, Running]
    pairs: tuple[Floats, Floats]
    sizes: tuple[int, int]
    now: tuple[Floats, Floats]

    @classmethod
    def fresh(cls, S: int, sizes: tuple[int, int], total: float, grid: Floats) -> SideWalk:
        pairs = _pairs(total, grid, sizes[1])
        P = pairs[0].size
        return cls(
            (Running.fresh(S, P), Running.fresh(S, P)),
            (pairs[0][None, :], pairs[1][None, :]),
            sizes,
            (np.zeros((S, P)), np.zeros((S, P))),
        )

    def skip(self, ys: tuple[Floats, Floats]) -> None:
        """Take each stratum's draws ys[h] (S, n_h) without reading the test between them."""
        self.now = tuple(  # type: ignore[assignment]
            self.states[h].advance(ys[h], self.pairs[h], self.sizes[h], every=False) for h in (0, 1)
        )

    def repeated(self, S: int) -> SideWalk:
        """The walk of one sequence as S alike ones (labels every sequence shares)."""
        return SideWalk(
            (self.states[0].repeated(S), self.states[1].repeated(S)),
            self.pairs,
            self.sizes,
            (np.repeat(self.now[0], S, axis=0), np.repeat(self.now[1], S, axis=0)),
        )

    def rows(self, rows: Ints) -> SideWalk:
        return SideWalk(
            (self.states[0].rows(rows), self.states[1].rows(rows)),
            self.pairs,
            self.sizes,
            (self.now[0][rows], self.now[1][rows]),
        )

    def walk(self, ys: tuple[Floats, Floats], path: Ints) -> Floats:
        """The next labels, `path` (L,) their strata and ys[h] (S, n_h) the draws of stratum h among them in its
        order: the log of each pair's product after each label (L, S, P)."""
        full = []
        for h in (0, 1):
            after = self.states[h].advance(ys[h], self.pairs[h], self.sizes[h])  # (n_h, S, P)
            full.append(np.concatenate([self.now[h][None], after]))
        self.now = (full[0][-1], full[1][-1])
        index = [np.cumsum(path == h) for h in (0, 1)]
        return full[0][index[0]] + full[1][index[1]]  # type: ignore[no-any-return]

    def block(self) -> int:
        """Labels per block of a walk."""
        return max(MIN_BLOCK, BLOCK_CELLS // max(1, self.now[0].size * EDGES.size))


def side_values(gold: Floats, minimum: float) -> tuple[Floats, Floats]:
    """The values each side's test reads of gold (1, 0, -1 N/A, NaN pending): the PASS test's (pending a FAIL, N/A
    the minimum) and the FAIL test's, on the complements (pending a PASS)."""
    y_pass = np.where(np.isnan(gold), 0.0, np.where(gold == NOT_APPLICABLE, minimum, gold))
    y_fail = 1.0 - np.where(np.isnan(gold), 1.0, np.where(gold == NOT_APPLICABLE, minimum, gold))
    return y_pass, y_fail


def along(walk: SideWalk, stratum_gold: tuple[Floats, Floats], path: Ints) -> tuple[Floats, Floats]:
    """One sequence's side test along its whole path from the first label: the smallest product over the pairs
    after each label (T,), and stratum 0's null total at that pair (T,) (the first such pair, as argmin). The
    stratum values are the side's (side_values)."""
    T = path.size
    smallest, hardest = np.empty(T), np.empty(T)
    counts = np.zeros(2, dtype=int)
    step = walk.block()
    for at in range(0, T, step):
        part = path[at : at + step]
        n = [int(np.sum(part == h)) for h in (0, 1)]
        ys = (stratum_gold[0][:, counts[0] : counts[0] + n[0]], stratum_gold[1][:, counts[1] : counts[1] + n[1]])
        products = walk.walk(ys, part)[:, 0, :]  # (L, P)
        worst = products.argmin(axis=1)
        smallest[at : at + part.size] = products[np.arange(part.size), worst]
        hardest[at : at + part.size] = walk.pairs[0][0, worst]
        counts += n
    return smallest, hardest


def final(walk: SideWalk, stratum_values: tuple[Floats, Floats]) -> Floats:
    """The side's test after every label (each stratum's whole sequence; the path's interleaving does not change
    the product after the last): the smallest product over the pairs (S,)."""
    walk.skip(stratum_values)
    return (walk.now[0] + walk.now[1]).min(axis=1)  # type: ignore[no-any-return]


# rejects() first runs every this-many-th pair: enough to find most splits the test does not reject at, and a
# bracket for the rest.
SAMPLE_EVERY = 8


def rejects(
    stratum_values: tuple[Floats, Floats], sizes: tuple[int, int], total: float, grid: Floats, threshold: float
) -> bool:
    """Whether the side's test (one sequence) rejects after every label: the smallest product over the grid's pairs
    at least `threshold`, as final() says, for a fraction of its cost. Each stratum's capital falls as its null
    total rises, and along the pairs stratum 0's null total rises and stratum 1's falls; so a sample of the pairs
    settles "not rejected" when one of them is below the threshold, and otherwise brackets every other pair from
    below (stratum 0 at the next sampled pair, stratum 1 at the previous one): only the pairs whose bracket is
    below the threshold are run."""
    pairs = _pairs(total, grid, sizes[1])
    P = pairs[0].size
    sample = np.unique(np.r_[np.arange(0, P, SAMPLE_EVERY), P - 1])
    at = [_capital_after(stratum_values[h], pairs[h][sample], sizes[h]) for h in (0, 1)]
    if (at[0] + at[1]).min() < threshold:
        return False
    everyone = np.arange(P)
    above = np.searchsorted(sample, everyone)  # the first sampled pair at or after each: stratum 0's null higher
    below = np.searchsorted(sample, everyone, side="right") - 1  # the last at or before: stratum 1's null higher
    todo = np.flatnonzero(at[0][above] + at[1][below] < threshold)
    if not todo.size:
        return True
    exact = [_capital_after(stratum_values[h], pairs[h][todo], sizes[h]) for h in (0, 1)]
    return bool((exact[0] + exact[1]).min() >= threshold)


def _capital_after(y: Floats, nulls: Floats, size: int) -> Floats:
    """One sequence's log capital in one stratum after all its draws y (1, T), at the null totals `nulls` (G,)."""
    after = Running.fresh(1, nulls.size).advance(y, nulls[None, :], size, every=False)
    return cast(Floats, after[0])


@dataclass
class Tally:
    """What the exact rule and the minimum of gold read, per sequence, after the labels so far: passes, fails, N/A
    and labels (every simulated label is settled)."""

    passes: Floats
    fails: Floats
    na: Floats
    settled: Floats

    def rows(self, rows: Ints) -> Tally:
        return Tally(self.passes[rows], self.fails[rows], self.na[rows], self.settled[rows])


def first_along(
    *,
    sides: tuple[SideWalk, SideWalk],
    gold: tuple[Ints, Ints],
    minimum: float,
    path: Ints,
    start: int,
    threshold: float,
    min_gold: int,
) -> tuple[Floats, Ints]:
    """The first decision of S simulated audits along one `path` of every output's stratum, from label `start` on,
    and the labels in all when it came: decided (S,) "PASS"/"FAIL", at (S,). `sides` hold the tests after the first
    `start` labels, gold[h] (S, N_h) every output's gold in stratum h's order (1, 0, -1 N/A; int8). As
    audit_strata's allocation reads it along a path: the exact rule first, then the PASS test, then the FAIL
    test (once min_gold labels are settled), after `start` labels and after each label from there; every audit
    decides by the last label at the latest (the exact rule)."""
    S = gold[0].shape[0]
    N = gold[0].shape[1] + gold[1].shape[1]
    counts = [int(np.sum(path[:start] == h)) for h in (0, 1)]
    seen = np.concatenate([gold[0][:, : counts[0]], gold[1][:, : counts[1]]], axis=1)
    tally = Tally(
        np.sum(seen == 1, axis=1, dtype=float),
        np.sum(seen == 0, axis=1, dtype=float),
        np.sum(seen == -1, axis=1, dtype=float),
        np.full(S, float(start)),
    )
    decided = np.full(S, "", dtype=object)
    at = np.full(S, -1)
    rows = np.arange(S)
    products = np.stack([(side.now[0] + side.now[1]).min(axis=1) for side in sides])[:, None, :]  # (2, 1, S)
    tallies = np.stack([tally.passes, tally.fails, tally.na, tally.settled])[:, None, :]
    hit, code = _decide(products, tallies, N, minimum, threshold, min_gold)
    decided[hit[0]] = code[0, hit[0]]
    at[hit[0]] = start
    keep = ~hit[0]
    rows, sides, tally = rows[keep], (sides[0].rows(keep), sides[1].rows(keep)), tally.rows(np.flatnonzero(keep))
    position = start
    while rows.size and position < N:
        part = path[position : position + sides[0].block()]
        n = [int(np.sum(part == h)) for h in (0, 1)]
        block = (gold[0][rows, counts[0] : counts[0] + n[0]], gold[1][rows, counts[1] : counts[1] + n[1]])
        y = [side_values(block[h].astype(float), minimum) for h in (0, 1)]
        smallest = np.stack(
            [
                sides[0].walk((y[0][0], y[1][0]), part).min(axis=2),
                sides[1].walk((y[0][1], y[1][1]), part).min(axis=2),
            ]
        )  # (2, L, S)
        labels = np.empty((part.size, rows.size), dtype=np.int8)
        labels[part == 0] = block[0].T
        labels[part == 1] = block[1].T
        tallies = np.stack(
            [
                tally.passes + np.cumsum(labels == 1, axis=0),
                tally.fails + np.cumsum(labels == 0, axis=0),
                tally.na + np.cumsum(labels == -1, axis=0),
                tally.settled + np.arange(1, part.size + 1)[:, None],
            ]
        )  # (4, L, S)
        hit, code = _decide(smallest, tallies, N, minimum, threshold, min_gold)
        first = np.where(hit.any(axis=0), hit.argmax(axis=0), -1)  # (S,)
        done = first >= 0
        decided[rows[done]] = code[first[done], np.flatnonzero(done)]
        at[rows[done]] = position + first[done] + 1
        last = tallies[:, -1, :]
        tally = Tally(last[0], last[1], last[2], last[3])
        keep = np.flatnonzero(~done)
        rows, sides, tally = rows[keep], (sides[0].rows(keep), sides[1].rows(keep)), tally.rows(keep)
        counts = [counts[0] + n[0], counts[1] + n[1]]
        position += part.size
    return decided, at


def _decide(
    smallest: Floats, tallies: Floats, N: int, minimum: float, threshold: float, min_gold: int
) -> tuple[np.ndarray, np.ndarray]:
    """At each label (L) of each sequence (S): decided or not (L, S), and the decision (L, S), from each side's
    smallest product (2, L, S) and the tallies (passes, fails, N/A, settled: (4, L, S)). The exact rule first."""
    passes, fails, na, settled = tallies
    applicable = N - na
    allowed = settled >= min(min_gold, N)
    exact_pass = passes >= minimum * applicable - 1e-9
    exact_fail = applicable - fails < minimum * applicable - 1e-9
    test_pass = allowed & (smallest[0] >= threshold)
    test_fail = allowed & (smallest[1] >= threshold)
    code = np.select([exact_pass, exact_fail, test_pass, test_fail], [PASS, FAIL, PASS, FAIL], "").astype(object)
    return code != "", code
