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
from calibration.stats.audit_strata import Tests, build_tests, refine, run_allocation, split_grid


def per_stratum(gold: Floats, path: Ints) -> tuple[Floats, Floats]:
    """The gold of a plan's labels (in release order, `path` their strata) split into each stratum's own order."""
    return gold[path == 0][None, :], gold[path == 1][None, :]


def _counts_along(path: Ints) -> Ints:
    """(T + 1, 2): the labels in each stratum before and after each label of the path."""
    steps = np.zeros((path.size + 1, 2), dtype=int)
    steps[1:, 0] = np.cumsum(path == 0)
    steps[1:, 1] = np.cumsum(path == 1)
    return steps


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


def _forecast_grids(sizes: tuple[int, int], minimum: float) -> tuple[Floats, Floats]:
    N = sizes[0] + sizes[1]
    return (
        split_grid(minimum * N, sizes, FORECAST_POINTS),
        split_grid((1 - minimum) * N, sizes, FORECAST_POINTS),
    )
