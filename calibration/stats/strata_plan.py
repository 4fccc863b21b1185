"""A stratified audit plan's figures: its decision and bounds along the order's path of strata, and the forecast
of labels to a decision. The tests themselves are audit_strata.py's; what they assume is said there."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from calibration.stats.audit_forecast import AuditForecast
from calibration.stats.audit_stats import (
    FAIL,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    AuditDecision,
    Floats,
    Ints,
    PPIEstimate,
    decision_of,
    first_decisions,
)
from calibration.stats.audit_strata import refine, split_grid
from calibration.stats.strata_walk import SideWalk, along, final, first_along, rejects, side_values


def per_stratum(gold: Floats, path: Ints) -> tuple[Floats, Floats]:
    """The gold of a plan's labels (in release order, `path` their strata) split into each stratum's own order."""
    return gold[path == 0][None, :], gold[path == 1][None, :]


def _plan_tests(
    gold: Floats, path: Ints, sizes: tuple[int, int], minimum: float, confidence: float, min_gold: int
) -> tuple[Floats, Floats]:
    """Each side's log capital along one plan's path, on a grid refined around the hardest split wherever the side
    came within a factor e^2 of deciding, and at the last label (the refinement only raises the lower bounds, and
    the same labels always get the same grid).

    What the decision reads of the refined tests is each label's up to the first decision, and the last label's
    (the evidence): the refined product is at least the coarse one at every label (each of its pairs lies within
    a coarse pair's bracket), so it decides no later than the coarse test, and the labels after the coarse test's
    first decision are run through without reading them (their entries keep the coarse values, which decide
    nothing earlier)."""
    N = sizes[0] + sizes[1]
    threshold = math.log(2 / (1 - confidence))
    stratum_gold = per_stratum(gold, path)
    values = (side_values(stratum_gold[0], minimum), side_values(stratum_gold[1], minimum))
    totals = (minimum * N, (1 - minimum) * N)
    coarse, grids = [], []
    for side, total in enumerate(totals):
        ys = (values[0][side], values[1][side])
        grid = split_grid(total, sizes)
        capital, hardest = along(SideWalk.fresh(1, sizes, total, grid), ys, path)
        near = np.unique(np.round(np.r_[hardest[capital >= threshold - 2], hardest[-1:]], 1))
        for centre in near:
            grid = refine(grid, np.array([centre]))[0]
        coarse.append(capital)
        grids.append(grid)
    first = first_decisions(
        gold=gold[None, :],
        N=N,
        log_k_pass=coarse[0][None, :],
        log_k_fail=coarse[1][None, :],
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
    )
    stop = int(first.at[0]) if first.at[0] > 0 else path.size
    seen = [int(np.sum(path[:stop] == h)) for h in (0, 1)]
    capitals = []
    for side, total in enumerate(totals):
        ys = (values[0][side], values[1][side])
        walk = SideWalk.fresh(1, sizes, total, grids[side])
        capital = coarse[side].copy()
        capital[:stop] = along(walk, ys, path[:stop])[0]
        capital[-1] = final(walk, (ys[0][:, seen[0] :], ys[1][:, seen[1] :]))[0]
        capitals.append(capital)
    return capitals[0], capitals[1]


def _estimate(stratum_gold: tuple[Floats, Floats], sizes: tuple[int, int]) -> float | None:
    """The stratified estimate of the pass rate: each stratum's share of passes and of applicable outputs among
    its settled gold, weighted by its size; passes / applicable. None until both are estimable."""
    passes = applicable = 0.0
    for h in (0, 1):
        g = stratum_gold[h][0]
        settled = g[~np.isnan(g)]
        if sizes[h] == 0:
            continue
        if settled.size == 0:
            return None
        passes += sizes[h] * float(np.mean(settled == 1))
        applicable += sizes[h] * float(np.mean(settled != NOT_APPLICABLE))
    return min(1.0, max(0.0, passes / applicable)) if applicable > 0 else None


def _check_plan(
    gold: Sequence[float | None] | Floats, path: Sequence[int] | Ints, sizes: tuple[int, int]
) -> tuple[Floats, Ints]:
    g = np.array([np.nan if v is None else v for v in gold], dtype=float).ravel()
    p = np.asarray(path, dtype=np.int8).ravel()
    if g.size != p.size:
        raise ValueError(f"{g.size} gold values for a path of {p.size} labels")
    if np.any((p != 0) & (p != 1)):
        raise ValueError("a path holds strata 0 (judge PASS) and 1 (the rest) only")
    usable = g[~np.isnan(g)]
    if not np.all(np.isin(usable, [0.0, 1.0, NOT_APPLICABLE])):
        raise ValueError("gold must be 1 (PASS), 0 (FAIL), -1 (N/A) or None/NaN")
    for h in (0, 1):
        if int(np.sum(p == h)) > sizes[h]:
            raise ValueError(f"the path takes more labels from stratum {h} than its {sizes[h]} outputs")
    return g, p


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
        k_pass, k_fail = _plan_tests(g, p, sizes, minimum, confidence, min_gold)
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


def _rejected(g: Floats, p: Ints, sizes: tuple[int, int], m: float, threshold: float, side: int) -> bool:
    """Whether "pass rate <= m" (side 0) or "pass rate >= m" (side 1) is rejected at the last label, on split_grid's
    grid (a lower bound at every split like any grid: the interval it gives is a little wider than a refined
    grid's, and valid)."""
    N = sizes[0] + sizes[1]
    total = m * N if side == 0 else (1 - m) * N
    stratum_gold = per_stratum(g, p)
    ys = (side_values(stratum_gold[0], m)[side], side_values(stratum_gold[1], m)[side])
    return rejects(ys, sizes, total, split_grid(total, sizes), threshold)


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
    if not _rejected(g, p, sizes, lo * step, threshold, 0):
        lower = 0.0
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _rejected(g, p, sizes, mid * step, threshold, 0) else (lo, mid)
        lower = lo * step
    lo, hi = int(math.ceil(exact_lower / step)), int(round(1 / step))
    if not _rejected(g, p, sizes, hi * step, threshold, 1):
        upper = 1.0
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _rejected(g, p, sizes, mid * step, threshold, 1) else (mid, hi)
        upper = hi * step
    return max(lower, exact_lower), min(upper, exact_upper)


# The forecast's grid: fewer points than a decision's (its slack makes it a little pessimistic), for speed.
FORECAST_POINTS = 60


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
    drawn = _draw(g, p, sizes, n_sims, seed)
    N = sizes[0] + sizes[1]
    grids = _forecast_grids(sizes, minimum)
    counts = (int(np.sum(p == 0)), int(np.sum(p == 1)))
    # Each stratum's labels up to its first pending one are the same in every simulation: run once.
    shared = [int(np.argmax(np.isnan(np.r_[g[p == h], np.nan]))) for h in (0, 1)]
    sides = []
    for side, total in enumerate((minimum * N, (1 - minimum) * N)):
        walk = SideWalk.fresh(1, sizes, total, grids[side])
        walk.skip(
            (_values(drawn[0][:1, : shared[0]], minimum, side), _values(drawn[1][:1, : shared[1]], minimum, side))
        )
        walk = walk.repeated(n_sims)
        walk.skip(
            (
                _values(drawn[0][:, shared[0] : counts[0]], minimum, side),
                _values(drawn[1][:, shared[1] : counts[1]], minimum, side),
            )
        )
        sides.append(walk)
    decided, at = first_along(
        sides=(sides[0], sides[1]),
        gold=drawn,
        minimum=minimum,
        path=full_path,
        start=p.size,
        threshold=math.log(2 / (1 - confidence)),
        min_gold=min_gold,
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


def _draw(g: Floats, p: Ints, sizes: tuple[int, int], n_sims: int, seed: int) -> tuple[Ints, Ints]:
    """Each simulation's gold of every output, per stratum in its order (n_sims, N_h): the labels' settled gold, and
    for the rest (pending ones included) a pass with the simulation's rate (Beta(1 + passes, 1 + fails)), or N/A with
    its N/A share once N/A gold is seen. int8 (1, 0, -1), a byte a cell, drawn a simulation at a time: the same
    numbers as one draw of the whole (n_sims, outputs) block, in a small part of its memory."""
    rng = np.random.default_rng(seed)
    with_na = bool(np.any(g == NOT_APPLICABLE))
    drawn = []
    for h in (0, 1):
        known = g[p == h]
        full = np.concatenate([known, np.full(sizes[h] - known.size, np.nan)])
        todo = np.isnan(full)
        settled = full[~todo]
        sims = np.tile(np.where(todo, 0, full).astype(np.int8), (n_sims, 1))
        rate = rng.beta(1 + np.sum(settled == 1), 1 + np.sum(settled == 0), size=n_sims)
        n_todo = int(todo.sum())
        for row in range(n_sims):
            sims[row, todo] = rng.random(n_todo) < rate[row]
        if with_na:
            na_rate = rng.beta(1 + np.sum(settled == NOT_APPLICABLE), 1 + np.sum(settled != NOT_APPLICABLE), n_sims)
            for row in range(n_sims):
                na = np.flatnonzero(todo)[rng.random(n_todo) < na_rate[row]]
                sims[row, na] = -1
        drawn.append(sims)
    return drawn[0], drawn[1]


def _values(gold: Ints, minimum: float, side: int) -> Floats:
    """The values side 0 (PASS) or 1 (FAIL) reads of drawn gold (int8, no pending)."""
    return side_values(gold.astype(float), minimum)[side]


def _forecast_grids(sizes: tuple[int, int], minimum: float) -> tuple[Floats, Floats]:
    N = sizes[0] + sizes[1]
    return (
        split_grid(minimum * N, sizes, FORECAST_POINTS),
        split_grid((1 - minimum) * N, sizes, FORECAST_POINTS),
    )
