"""Stratified audits (calibration/stats/audit_strata.py): hand-worked grids, the capital's monotonicity the split pairs
rest on, validity by exact enumeration of every order (with a peeking allocation as the negative control) and by
simulation with known truth, both for a plan's design (the labels counted in the order's own sequence, issue 41)
and for the adaptive allocation the bench compares it with. Pure numpy: no database."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from calibration.stats import audit_strata as st
from calibration.stats import strata_plan
from calibration.stats.audit_stats import FAIL, NOT_APPLICABLE, PASS


def distinct(values: list[float]) -> np.ndarray:
    """Every distinct order of a stratum's gold (equally likely under a uniform permutation)."""
    return np.array(sorted(set(itertools.permutations(values))), dtype=float)


def every_pair_of_orders(first: list[float], second: list[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = distinct(first), distinct(second)
    return np.repeat(a, len(b), axis=0), np.tile(b, (len(a), 1))


def test_the_strata_follow_the_judges_pass_and_everything_else_goes_with_the_fails():
    assert st.strata_of([1, 0, None, float("nan"), 1]).tolist() == [0, 1, 1, 1, 0]


def test_the_split_grid_and_its_pairs_hand_worked():
    # 5.5 null passes over strata of 4 and 3: s_0 runs from 2.5 (s_1 = 3 full) to 4 (stratum 0 full).
    grid = st.split_grid(5.5, (4, 3))
    assert grid.tolist() == [2.5, 3.0, 4.0]
    # s_0 in [2.5, 3]: each capital is at least its value at (3, 3); s_0 in [3, 4]: at (4, 2.5).
    first, second = st._pairs(5.5, grid, 3)
    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [(3.0, 3.0), (4.0, 2.5)]
    # A large stratum gets evenly spaced points instead of every integer.
    assert st.split_grid(900.0, (1000, 1000), points=10).tolist() == pytest.approx(np.linspace(0, 900, 11).tolist())
    # Refining adds points a step apart near the hardest split, inside the range, and keeps the grid sorted.
    fine = st.refine(grid, np.array([3.0]), width=0.3, step=0.1)
    assert fine[0].tolist() == pytest.approx([2.5, 2.7, 2.8, 2.9, 3.0, 3.1, 3.2, 3.3, 4.0])


def test_a_stratums_capital_falls_as_its_null_total_rises():
    rng = np.random.default_rng(3)
    y = (rng.random((40, 30)) < 0.6).astype(float)
    nulls = np.arange(0, 40.25, 0.25)
    log_k = st.stratum_log_capital(y=y, nulls=nulls, size=40)
    assert np.all(np.diff(log_k, axis=1) <= 1e-9)
    assert np.diff(log_k, axis=1).min() < -0.1  # and it does move


def test_the_pairs_lie_below_the_product_at_every_real_split():
    rng = np.random.default_rng(5)
    sizes = (30, 20)
    ys = ((rng.random((20, 30)) < 0.7).astype(float), (rng.random((20, 20)) < 0.3).astype(float))
    total = 0.55 * sum(sizes)
    side = st._side(ys, sizes, total, st.split_grid(total, sizes))
    splits = rng.uniform(max(0, total - sizes[1]), min(sizes[0], total), 300)
    exact = [st.stratum_log_capital(y=ys[0], nulls=splits, size=30), None]
    exact[1] = st.stratum_log_capital(y=ys[1], nulls=total - splits, size=20)
    rows = np.arange(20)
    for n0, n1 in [(5, 5), (20, 10), (30, 20), (12, 3)]:
        counts = np.tile([n0, n1], (20, 1))
        bound = side.at(rows, counts)
        product = exact[0][:, :, n0] + exact[1][:, :, n1]
        assert np.all(bound[:, None] <= product + 1e-9)
    # Negative control: the grid points themselves (no bracketing) are not a bound at every split.
    grid = st.split_grid(total, sizes)
    at_points = (
        st.stratum_log_capital(y=ys[0], nulls=grid, size=30)[:, :, 20]
        + st.stratum_log_capital(y=ys[1], nulls=total - grid, size=20)[:, :, 10]
    )
    assert np.any(at_points.min(axis=1) > (exact[0][:, :, 20] + exact[1][:, :, 10]).min(axis=1) + 1e-6)


def wrong_rates(first, second, *, minimum, confidence, k, right):
    gold = every_pair_of_orders(first, second)
    decided, at = st.replay(
        gold=gold, start=np.zeros((len(gold[0]), 2), int), minimum=minimum, confidence=confidence, k=k, min_gold=1
    )
    assert np.all(decided != "")  # labeling everything decides
    return float(np.mean(decided != right))


# 8 + 8 outputs, 8 gold passes (theta = 1/2): the judge's PASS stratum 6 of 8, the rest 2 of 8. 784 order pairs.
JUDGE_PASS = [1.0] * 6 + [0.0] * 2
JUDGE_REST = [1.0] * 2 + [0.0] * 6


@pytest.mark.parametrize("confidence", [0.5, 0.8])
@pytest.mark.parametrize("k", [1, 3])
def test_wrong_decisions_are_at_most_alpha_over_2_per_side_by_exact_enumeration(confidence, k):
    alpha_half = (1 - confidence) / 2
    # theta = 0.5 < 9/16: PASS is wrong. theta = 0.5 = the minimum (the boundary): FAIL is wrong.
    assert wrong_rates(JUDGE_PASS, JUDGE_REST, minimum=9 / 16, confidence=confidence, k=k, right=FAIL) <= alpha_half
    assert wrong_rates(JUDGE_PASS, JUDGE_REST, minimum=0.5, confidence=confidence, k=k, right=PASS) <= alpha_half


def test_with_na_gold_wrong_decisions_stay_at_most_alpha_over_2_by_exact_enumeration():
    # 5 passes among 10 applicable outputs (theta = 1/2), two N/A; 1,800 order pairs. At the boundary FAIL is
    # wrong, above it PASS.
    first = [1.0] * 4 + [NOT_APPLICABLE] + [0.0]
    second = [1.0] + [NOT_APPLICABLE] + [0.0] * 4
    for confidence in (0.5, 0.8):
        alpha_half = (1 - confidence) / 2
        assert wrong_rates(first, second, minimum=0.5, confidence=confidence, k=2, right=PASS) <= alpha_half
        assert wrong_rates(first, second, minimum=0.56, confidence=confidence, k=2, right=FAIL) <= alpha_half


def test_the_product_at_one_split_instead_of_the_smallest_is_wrong_too_often_negative_control(monkeypatch):
    # The null "pass rate <= 9/16" holds at many splits of its 9 passes; testing only the proportional one (4.5 in
    # each stratum) rejects it whenever the judge's PASS stratum passes more than that, which it does (6 of 8).
    # The same enumeration that finds the real test never wrong here finds this one wrong more often than allowed.
    assert wrong_rates(JUDGE_PASS, JUDGE_REST, minimum=9 / 16, confidence=0.8, k=1, right=FAIL) == 0
    monkeypatch.setattr(st, "split_grid", lambda total, sizes, points=st.SPLIT_POINTS: np.array([4.5, 4.5]))
    assert wrong_rates(JUDGE_PASS, JUDGE_REST, minimum=9 / 16, confidence=0.8, k=1, right=FAIL) > 0.1


def synthetic(N: int, theta: float, phi: float, judge_rate: float) -> tuple[np.ndarray, np.ndarray]:
    p11 = theta * judge_rate + phi * math.sqrt(theta * (1 - theta) * judge_rate * (1 - judge_rate))
    n11, n1, nf = round(N * p11), round(N * theta), round(N * judge_rate)
    n10, n01 = n1 - n11, nf - n11
    judge_pass = np.r_[np.ones(n11), np.zeros(n01)]
    judge_rest = np.r_[np.ones(n10), np.zeros(N - n11 - n10 - n01)]
    return judge_pass, judge_rest


@pytest.mark.parametrize("design", ["order", "adaptive"])
@pytest.mark.parametrize("distance", [-0.05, 0.0, 0.05])
@pytest.mark.slow
def test_wrong_decisions_stay_below_alpha_over_2_by_simulation_with_known_truth(distance, design):
    # 300 outputs, theta = 0.7, a judge with correlation 0.6 that passes 75%; 500 orders of each stratum, counted in
    # a uniformly random sequence of the strata (a plan: the order's own) or as the adaptive allocation chooses.
    judge_pass, judge_rest = synthetic(300, 0.7, 0.6, 0.75)
    rng = np.random.default_rng(17)
    gold = tuple(np.stack([s[rng.permutation(s.size)] for _ in range(500)]) for s in (judge_pass, judge_rest))
    strata = np.r_[np.zeros(judge_pass.size, np.int8), np.ones(judge_rest.size, np.int8)]
    path = np.stack([rng.permutation(strata) for _ in range(500)]) if design == "order" else None
    minimum = 0.7 + distance
    decided, at = st.replay(gold=gold, start=np.zeros((500, 2), int), minimum=minimum, path=path)
    right = PASS if 0.7 >= minimum else FAIL
    assert np.mean(decided != right) <= 0.025
    if distance:
        assert np.median(at) < 300  # away from the boundary it decides before labeling everything


@pytest.mark.slow
def test_tables_that_grow_as_needed_give_what_whole_tables_give(monkeypatch):
    judge_pass, judge_rest = synthetic(400, 0.7, 0.6, 0.75)
    rng = np.random.default_rng(23)
    gold = tuple(np.stack([s[rng.permutation(s.size)] for _ in range(60)]) for s in (judge_pass, judge_rest))
    start = np.zeros((60, 2), int)
    grown = st.replay(gold=gold, start=start, minimum=0.64)
    monkeypatch.setattr(st, "FIRST_HORIZON", 10_000)  # every table to the end of its stratum at once
    whole = st.replay(gold=gold, start=start, minimum=0.64)
    assert grown[0].tolist() == whole[0].tolist() and grown[1].tolist() == whole[1].tolist()


def test_the_adaptive_batch_keeps_a_tenth_for_each_side_and_none_for_a_full_one():
    def first_batch(gold, path, sizes, k):
        g, p = np.array(gold, dtype=float), np.array(path)
        tests = st.build_tests(strata_plan.per_stratum(g, p), sizes, 0.5)
        counts = np.array([[int(np.sum(p == 0)), int(np.sum(p == 1))]])
        return st.next_batch(tests, np.zeros(1, dtype=int), counts, sizes, 0.5, k)[0].tolist()

    # No labels yet: the first goes to the judge's PASS side (it has none of its tenth), the second to the rest.
    assert first_batch([], [], (30, 30), 2) == [0, 1]
    # The rest has 3 outputs, all labeled: the whole batch goes to the PASS side.
    assert first_batch([1, 0, 0, 1], [0, 1, 1, 1], (30, 3), 5) == [0] * 5


def every_interleaving(first: list[float], second: list[float]):
    """Every distinct full order of two strata (the strata's sequence, then each stratum's own order), each as likely
    as the others under a uniform permutation of the whole candidate: per-stratum gold and the path."""
    sizes = (len(first), len(second))
    paths = [
        np.array([0 if i in chosen else 1 for i in range(sum(sizes))], dtype=np.int8)
        for chosen in itertools.combinations(range(sum(sizes)), sizes[0])
    ]
    a, b = every_pair_of_orders(first, second)
    gold = (np.repeat(a, len(paths), axis=0), np.repeat(b, len(paths), axis=0))
    return gold, np.tile(np.stack(paths), (len(a), 1))


def wrong_along(gold, path, *, minimum, confidence, right):
    decided, _ = st.replay(
        gold=gold, start=np.zeros((len(path), 2), int), minimum=minimum, confidence=confidence, min_gold=1, path=path
    )
    assert np.all(decided != "")
    return float(np.mean(decided != right))


# 4 + 4 outputs, 4 gold passes (theta = 1/2): the judge's PASS stratum 3 of 4, the rest 1 of 4. 70 sequences of the
# strata times 16 pairs of stratum orders: 1,120 equally likely full orders.
SMALL_PASS = [1.0] * 3 + [0.0]
SMALL_REST = [1.0] + [0.0] * 3


@pytest.mark.parametrize("confidence", [0.5, 0.8])
def test_a_plan_counting_in_the_orders_own_sequence_errs_at_most_alpha_over_2_by_exact_enumeration(confidence):
    # A plan's labels are counted in the order's sequence, which no label chose: every full order enumerated.
    alpha_half = (1 - confidence) / 2
    gold, path = every_interleaving(SMALL_PASS, SMALL_REST)
    assert len(path) == 1120
    assert wrong_along(gold, path, minimum=5 / 8, confidence=confidence, right=FAIL) <= alpha_half
    assert wrong_along(gold, path, minimum=0.5, confidence=confidence, right=PASS) <= alpha_half


def test_the_same_enumeration_finds_the_one_split_test_wrong_too_often_negative_control(monkeypatch):
    # The enumeration above would see an invalid test: the product at the proportional split alone (2.5 passes in
    # each stratum) instead of the smallest over the splits rejects "pass rate <= 5/8" whenever the judge's PASS
    # stratum shows its third pass, which it always does.
    gold, path = every_interleaving(SMALL_PASS, SMALL_REST)
    assert wrong_along(gold, path, minimum=5 / 8, confidence=0.5, right=FAIL) <= 0.25
    real = st.split_grid

    def one_split(total, sizes, points=st.SPLIT_POINTS):
        return np.array([2.5, 2.5]) if total == 5 else real(total, sizes, points)  # the PASS side's only

    monkeypatch.setattr(st, "split_grid", one_split)
    assert wrong_along(gold, path, minimum=5 / 8, confidence=0.5, right=FAIL) > 0.25


def test_a_plans_decision_by_the_exact_rule_hand_worked():
    # 10 + 10 outputs at minimum 0.4: 8 gold passes (0.4 x 20) settle PASS whatever the other 12 are.
    gold = [1, 1, 1, 1, 1, 1, 1, 0, 1]
    path = [0, 0, 0, 0, 1, 0, 0, 1, 0]
    d = strata_plan.stratified_decision(gold=gold, path=path, sizes=(10, 10), minimum=0.4, min_gold=100)
    assert (d.decided, d.decided_at, d.decided_by) == (PASS, 9, "exact")
    assert (d.n_labeled, d.n_gold, d.n_pending) == (9, 9, 0)
    # The exact bounds: 8 passes of 20 at least, 1 fail of 20 at most.
    assert d.lower >= 0.4 and d.upper <= 0.95
    # The stratified estimate: the PASS side 7 of 7 passes, the rest 1 of 2, each weighted by its 10 outputs.
    assert d.estimate.estimate == pytest.approx((10 * 1.0 + 10 * 0.5) / 20)
    # A pending label counts against both: no exact PASS with one of the eight passes unsettled.
    pending = strata_plan.stratified_decision(
        gold=[*gold[:-1], None], path=path, sizes=(10, 10), minimum=0.4, min_gold=100
    )
    assert pending.decided is None and pending.n_pending == 1


@pytest.mark.slow
def test_the_bounds_hold_the_true_pass_rate_in_95_percent_of_audits_and_narrow():
    # 160 outputs, theta = 0.6; 100 audits read after 80 labels counted as a plan counts them.
    judge_pass, judge_rest = synthetic(160, 0.6, 0.7, 0.6)
    rng = np.random.default_rng(31)
    held, widths = 0, []
    for _ in range(100):
        orders = [s[rng.permutation(s.size)] for s in (judge_pass, judge_rest)]
        # The first 80 of a uniformly random order: its strata's sequence, each stratum in its own order.
        path = rng.permutation(np.r_[np.zeros(judge_pass.size, int), np.ones(judge_rest.size, int)])[:80].tolist()
        gold = [float(orders[h][path[:i].count(h)]) for i, h in enumerate(path)]
        d = strata_plan.stratified_decision(
            gold=gold, path=path, sizes=(judge_pass.size, judge_rest.size), minimum=0.55
        )
        held += d.lower <= 0.6 <= d.upper
        widths.append(d.upper - d.lower)
    assert held >= 95
    assert np.median(widths) < 0.35  # and they say something


def test_the_forecast_is_seeded_leans_to_the_labels_and_labeling_the_rest_decides():
    gold = [1.0] * 18 + [0.0] * 2
    path = [0] * 12 + [1] * 8
    args = dict(gold=gold, path=path, ahead=[0] * 28 + [1] * 32, sizes=(40, 40), minimum=0.5, k=25, n_sims=100)
    first, again = strata_plan.stratified_forecast(**args, seed=3), strata_plan.stratified_forecast(**args, seed=3)
    assert first == again
    assert first.p_pass > first.p_fail
    everything = strata_plan.stratified_forecast(**(args | {"k": 60}), seed=3)
    assert everything.p_decided == 1.0 and everything.p90_labels <= 60


def test_labels_shared_by_every_sequence_are_run_once_and_give_what_running_each_gives():
    rng = np.random.default_rng(41)
    y = (rng.random((30, 50)) < 0.6).astype(float)
    y[:, :20] = y[0, :20]  # the first 20 draws alike in every sequence
    nulls = np.arange(0, 60.5, 0.5)
    shared = st.stratum_log_capital(y=y, nulls=nulls, size=60, shared=20)
    each = st.stratum_log_capital(y=y, nulls=nulls, size=60)
    assert np.allclose(shared, each, rtol=0, atol=1e-9)
