"""The stratified audit's plan figures as they were computed before issue 37 (item 2): each stratum's capital at
every count in tables, step by step in a loop (`main` at e84ec66, calibration/stats/audit_strata.py and
strata_plan.py, only the parts that change). Kept here, and only here, as the reference the faster implementation
is checked against (tests/calibration/stats/test_strata_size.py); the helpers that did not change are imported."""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.stats.audit_forecast import AuditForecast
from calibration.stats.audit_stats import (
    BET_SHARE,
    EDGES,
    FAIL,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    PRIOR_WEIGHT,
    AuditDecision,
    Floats,
    Ints,
    Objects,
    PPIEstimate,
    decision_of,
    first_decisions,
)
from calibration.stats.audit_strata import (
    FIRST_HORIZON,
    REFUTED,
    Tests,
    _Counters,
    _decide_at,
    _pairs,
    _prefix_sums,
    _Side,
    next_batch,
    refine,
    split_grid,
)
from calibration.stats.strata_plan import _check_plan, _estimate, _forecast_grids, per_stratum


def _counts_along(path: Ints) -> Ints:
    """(T + 1, 2): the labels in each stratum before and after each label of the path."""
    steps = np.zeros((path.size + 1, 2), dtype=int)
    steps[1:, 0] = np.cumsum(path == 0)
    steps[1:, 1] = np.cumsum(path == 1)
    return steps


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
    null is refuted and the capital is REFUTED (which keeps it falling in s).
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    S, T = y.shape
    if T > size:
        raise ValueError("more draws than outputs in the stratum")
    one_row = np.ndim(nulls) == 1
    nulls = np.broadcast_to(np.asarray(nulls, dtype=float), (S, np.shape(nulls)[-1]))
    out = np.zeros((S, nulls.shape[1], T + 1))
    shared = min(shared, T) if one_row and S > 1 else 0
    if shared:
        first = _Capital.fresh(1, nulls.shape[1])
        first.run(y[:1], nulls[:1], size, 0, shared, out[:1])
        out[:, :, : shared + 1] = out[:1, :, : shared + 1]
        state = first.repeated(S)
    else:
        state = _Capital.fresh(S, nulls.shape[1])
    state.run(y, nulls, size, shared, T, out)
    return out


@dataclass
class _Capital:
    """stratum_log_capital's running state: each edge's capital as capital[s, g, e] * exp(scale[s, g]) (products,
    not sums of logs: a log and an exp per cell and step fewer; rescaled before they could overflow or
    underflow), and the sums of the draws and of their squares so far."""

    capital: Floats
    scale: Floats
    s_y: Floats
    s_yy: Floats

    @classmethod
    def fresh(cls, S: int, G: int) -> _Capital:
        return cls(np.ones((S, G, EDGES.size)), np.zeros((S, G)), np.zeros(S), np.zeros(S))

    def repeated(self, S: int) -> _Capital:
        return _Capital(
            np.repeat(self.capital, S, axis=0),
            np.repeat(self.scale, S, axis=0),
            np.repeat(self.s_y, S),
            np.repeat(self.s_yy, S),
        )

    def run(self, y: Floats, nulls: Floats, size: int, start: int, end: int, out: Floats) -> None:
        """Draws start..end - 1 of y, writing log K after each into out[:, :, t + 1]."""
        for t in range(start, end):
            c = (nulls - self.s_y[:, None]) / (size - t)
            var = (PRIOR_WEIGHT * 0.25 + np.maximum(self.s_yy - (self.s_y**2 / t if t else 0.0), 0.0)) / (
                t + PRIOR_WEIGHT
            )
            gain = (size / (size - t)) * EDGES
            beta = gain[None, :] / (var[:, None] + gain[None, :] ** 2)  # (S, E): the null moves only the cap
            cap = np.where(c > 1e-12, BET_SHARE / np.maximum(c, 1e-12), 1e6)
            beta = np.minimum(beta[:, None, :], cap[:, :, None])
            self.capital *= np.maximum(1 + beta * (y[:, t, None] - c)[:, :, None], 1e-15)
            total = self.capital.sum(axis=2)
            out[:, :, t + 1] = self.scale + np.log(total) - math.log(EDGES.size)
            wild = (total > 1e100) | (total < 1e-100)
            if wild.any():
                self.capital[wild] /= total[wild][:, None]
                self.scale[wild] += np.log(total[wild])
            self.s_y += y[:, t]
            self.s_yy += y[:, t] ** 2
            # Draws already above a null total refute it outright: no order could make it true.
            out[:, :, t + 1] = np.where(self.s_y[:, None] > nulls + 1e-9, REFUTED, out[:, :, t + 1])


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


def _along(tests: Tests, path: Ints) -> tuple[Floats, Floats, Floats, Floats]:
    """Each side's log capital after each label of one plan's path (T,), and stratum 0's null total at its hardest
    pair then (T,)."""
    counts = _counts_along(path)[1:]
    rows = np.zeros(path.size, dtype=int)
    pass_products = tests.pass_side.products(rows, counts)
    fail_products = tests.fail_side.products(rows, counts)
    return (
        pass_products.min(axis=1),
        fail_products.min(axis=1),
        tests.pass_side.pairs[0][0, pass_products.argmin(axis=1)],
        tests.fail_side.pairs[0][0, fail_products.argmin(axis=1)],
    )


def _plan_tests(
    gold: Floats, path: Ints, sizes: tuple[int, int], minimum: float, threshold: float
) -> tuple[Tests, Floats, Floats]:
    """The tests of one plan on a grid refined around the hardest split wherever a side came within a factor e^2
    of deciding, and at the last label (the refinement only raises the lower bounds, and the same labels always
    get the same grid). Each side's log capital along the path."""
    N = sizes[0] + sizes[1]
    stratum_gold = per_stratum(gold, path)
    coarse = build_tests(stratum_gold, sizes, minimum)
    k_pass, k_fail, hard_pass, hard_fail = _along(coarse, path)
    grids = []
    for total, capital, hardest in ((minimum * N, k_pass, hard_pass), ((1 - minimum) * N, k_fail, hard_fail)):
        near = np.unique(np.round(np.r_[hardest[capital >= threshold - 2], hardest[-1:]], 1))
        grid = split_grid(total, sizes)
        for centre in near:
            grid = refine(grid, np.array([centre]))[0]
        grids.append(grid)
    fine = build_tests(stratum_gold, sizes, minimum, (grids[0], grids[1]))
    k_pass, k_fail, _, _ = _along(fine, path)
    return fine, k_pass, k_fail


def stratified_decision(
    *,
    gold: Sequence[float | None] | Floats,
    path: Sequence[int] | Ints,
    sizes: tuple[int, int],
    minimum: float,
    confidence: float = 0.95,
    min_gold: int = MIN_GOLD,
) -> AuditDecision:
    """A stratified plan's decision, bounds and estimate from its labels so far: `gold` in release order (1, 0, -1
    N/A, None/NaN pending), `path` the stratum of each, `sizes` the strata's outputs (judge PASS, the rest).

    The first decision along the path (audit_stats.first_decisions: the exact rule, the tests after min_gold
    settled items); the bounds are the m whose tests do not reject now (an anytime-valid set at every moment, so
    a valid interval whenever it is read), found by bisection (the product at every split falls as m moves
    away from the labels, so the rejected m form two intervals), clipped to the exact bounds.
    """
    if not 0 <= minimum <= 1:
        raise ValueError(f"minimum must be between 0 and 1, got {minimum}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    g, p = _check_plan(gold, path, sizes)
    N = sizes[0] + sizes[1]
    threshold = math.log(2 / (1 - confidence))
    if g.size:
        _, k_pass, k_fail = _plan_tests(g, p, sizes, minimum, threshold)
    else:
        k_pass = k_fail = np.zeros(0)
    d = first_decisions(
        gold=g[None, :],
        N=N,
        log_k_pass=k_pass[None, :],
        log_k_fail=k_fail[None, :],
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
    )
    lower, upper = _bounds(g, p, sizes, threshold)
    estimate = PPIEstimate(
        _estimate(per_stratum(g, p), sizes), None, None, None, 0.0, int((~np.isnan(g)).sum()), N, True
    )
    return decision_of(d, gold=g, N=N, bounds=(lower, upper), estimate=estimate, rule=(minimum, confidence, min_gold))


def _rejected(g: Floats, p: Ints, sizes: tuple[int, int], m: float, threshold: float) -> tuple[bool, bool]:
    """Whether "pass rate <= m" and "pass rate >= m" are rejected at the last label, on split_grid's grid (a lower
    bound at every split like any grid: the interval it gives is a little wider than a refined grid's, and
    valid)."""
    tests = build_tests(per_stratum(g, p), sizes, m)
    rows, counts = np.zeros(1, dtype=int), _counts_along(p)[-1:]
    return bool(tests.pass_side.at(rows, counts)[0] >= threshold), bool(
        tests.fail_side.at(rows, counts)[0] >= threshold
    )


def _bounds(g: Floats, p: Ints, sizes: tuple[int, int], threshold: float) -> tuple[float, float]:
    """The anytime-valid interval now, to 1/N (or 1/1000 on larger candidates), within the exact bounds."""
    N = sizes[0] + sizes[1]
    applicable = N - int(np.sum(g == NOT_APPLICABLE))
    if applicable == 0:
        return 0.0, 1.0
    exact_lower = int(np.sum(g == 1)) / applicable
    exact_upper = (applicable - int(np.sum(g == 0))) / applicable
    if g.size == 0:
        return exact_lower, exact_upper
    step = 1 / min(N, 1000)
    # The largest m with "pass rate <= m" rejected is the lower bound (rejections below it follow: a lower m is
    # a smaller null); bisection on the grid of step.
    lo, hi = 0, int(math.floor(exact_upper / step))  # grid indices: lo rejected or the floor, hi not
    if not _rejected(g, p, sizes, lo * step, threshold)[0]:
        lower = 0.0
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _rejected(g, p, sizes, mid * step, threshold)[0] else (lo, mid)
        lower = lo * step
    lo, hi = int(math.ceil(exact_lower / step)), int(round(1 / step))
    if not _rejected(g, p, sizes, hi * step, threshold)[1]:
        upper = 1.0
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _rejected(g, p, sizes, mid * step, threshold)[1] else (mid, hi)
        upper = hi * step
    return max(lower, exact_lower), min(upper, exact_upper)


def stratified_forecast(
    *,
    gold: Sequence[float | None] | Floats,
    path: Sequence[int] | Ints,
    ahead: Sequence[int] | Ints,
    sizes: tuple[int, int],
    minimum: float,
    confidence: float = 0.95,
    k: int = 25,
    n_sims: int = 200,
    seed: int = 0,
    min_gold: int = MIN_GOLD,
) -> AuditForecast:
    """A Monte Carlo forecast of a stratified plan from the posterior predictive, seeded: each stratum's pass rate
    (and, once N/A gold is seen, its N/A share) gets a Beta(1, 1) prior updated with its settled gold; each
    simulation draws every unsettled output's gold and counts the labels still to come in the order the plan will
    (`ahead`: their strata, the rest of the path) to a decision, on a coarser grid than the plan's decision
    (FORECAST_POINTS). A forecast, not a promise."""
    if k < 0 or n_sims < 1:
        raise ValueError("k must be >= 0 and n_sims >= 1")
    g, p = _check_plan(gold, path, sizes)
    full_path = np.concatenate([p, np.asarray(ahead, dtype=np.int8).ravel()])
    if full_path.size != sizes[0] + sizes[1] or int(np.sum(full_path == 0)) != sizes[0]:
        raise ValueError("the path and the labels ahead must hold every output of each stratum once")
    rng = np.random.default_rng(seed)
    with_na = bool(np.any(g == NOT_APPLICABLE))
    drawn = []
    for h in (0, 1):
        known = g[p == h]
        full = np.concatenate([known, np.full(sizes[h] - known.size, np.nan)])
        todo = np.isnan(full)
        settled = full[~todo]
        rate = rng.beta(1 + np.sum(settled == 1), 1 + np.sum(settled == 0), size=n_sims)
        sims = np.tile(full, (n_sims, 1))
        sims[:, todo] = (rng.random((n_sims, int(todo.sum()))) < rate[:, None]).astype(float)
        if with_na:
            na_rate = rng.beta(1 + np.sum(settled == NOT_APPLICABLE), 1 + np.sum(settled != NOT_APPLICABLE), n_sims)
            na = rng.random((n_sims, int(todo.sum()))) < na_rate[:, None]
            sims[:, todo] = np.where(na, NOT_APPLICABLE, sims[:, todo])
        drawn.append(sims)
    start = np.tile(_counts_along(p)[-1], (n_sims, 1))
    # Each stratum's labels up to its first pending one are the same in every simulation.
    shared = tuple(int(np.argmax(np.isnan(np.r_[g[p == h], np.nan]))) for h in (0, 1))
    gold_drawn = (drawn[0], drawn[1])
    _, _, decided, at, _ = run_allocation(
        gold=gold_drawn,
        start=start,
        minimum=minimum,
        threshold=math.log(2 / (1 - confidence)),
        k=max(k, 1),
        first_k=max(k, 1),
        min_gold=min_gold,
        grids=_forecast_grids(sizes, minimum),
        shared=shared,  # type: ignore[arg-type]
        path=np.tile(full_path, (n_sims, 1)),
    )
    more = np.maximum(at - p.size, 0)
    within = more <= k
    if k == 0:
        within = more == 0
    return AuditForecast(
        k=k,
        p_decided=float(within.mean()),
        p_pass=float((within & (decided == PASS)).mean()),
        p_fail=float((within & (decided == FAIL)).mean()),
        expected_labels=float(more.mean()),
        p90_labels=int(np.ceil(np.quantile(more, 0.9))),
        n_sims=n_sims,
    )
