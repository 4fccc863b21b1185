"""The audit's statistics (calibration/stats/audit_stats.py): pure, no database.

Hand-worked examples, ppi_py for the PPI++ estimate, exact enumeration of every label order on tiny
populations for the betting tests, validity by simulation with known truth, and a negative control that
shows the simulation can see an invalid rule.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from calibration.stats.audit_forecast import audit_forecast, labels_per_decision
from calibration.stats.audit_replay import first_decisions_forward
from calibration.stats.audit_stats import (
    FAIL,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    _confidence_sequence,
    audit_decision,
    betting_log_capital,
    decide_each_label,
    judge_scores,
    power_tuned_lambda,
    ppi_estimate,
)

Z95 = 1.959963984540054


def population(*, N: int, theta: float, phi: float, judge_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """A finite population with exactly round(N theta) gold passes and a judge with correlation phi."""
    p11 = theta * judge_rate + phi * math.sqrt(theta * (1 - theta) * judge_rate * (1 - judge_rate))
    n11, n1, nf = round(N * p11), round(N * theta), round(N * judge_rate)
    n10, n01 = n1 - n11, nf - n11
    n00 = N - n11 - n10 - n01
    y = np.r_[np.ones(n11), np.ones(n10), np.zeros(n01), np.zeros(n00)]
    f = np.r_[np.ones(n11), np.zeros(n10), np.ones(n01), np.zeros(n00)]
    return y, f


def orders(*, y: np.ndarray, f: np.ndarray, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.argsort(np.random.default_rng(seed).random((count, y.size)), axis=1)
    return y[perm], f[perm]


def all_orders(y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    perm = np.array(list(itertools.permutations(range(y.size))))
    return y[perm], f[perm]


def distinct_orders(y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct sequence of (gold, score) pairs: outputs with the same pair are interchangeable, so
    each distinct sequence stands for the same number of the N! orders and all are equally likely."""
    kinds, counts = np.unique(np.c_[y, f], axis=0, return_counts=True)
    sequences: list[list[int]] = []

    def extend(prefix: list[int], left: list[int]) -> None:
        if not any(left):
            sequences.append(prefix)
            return
        for kind, count in enumerate(left):
            if count:
                extend([*prefix, kind], [c - (i == kind) for i, c in enumerate(left)])

    extend([], list(counts))
    index = np.array(sequences)
    return kinds[index, 0], kinds[index, 1]


# --- The judge's scores ---------------------------------------------------------------------------


def test_an_error_is_not_a_verdict_it_gets_the_judges_pass_rate_on_the_rest():
    # Judged: 1, 0, 1 -> pass rate 2/3 for the one without a verdict.
    assert judge_scores(verdicts=[1, 0, None, 1]) == pytest.approx([1, 0, 2 / 3, 1])
    assert judge_scores(verdicts=[1, np.nan, np.nan, 0]) == pytest.approx([1, 0.5, 0.5, 0])


def test_a_judge_that_judged_nothing_is_a_constant_and_gets_no_weight():
    assert list(judge_scores(verdicts=[None, None, None])) == [0, 0, 0]
    estimate = ppi_estimate(gold=[1, 0, 1], verdicts=[None, None, None, None])
    assert estimate.lam == 0
    assert estimate.estimate == pytest.approx(2 / 3)


def test_bad_values_are_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="gold must be 1"):
        ppi_estimate(gold=[1, 2], verdicts=[1, 0, 1])
    with pytest.raises(ValueError, match="verdicts must be 1"):
        judge_scores(verdicts=[1, 0.5])
    with pytest.raises(ValueError, match="only 2 outputs"):
        audit_decision(gold=[1, 0, 1], verdicts=[1, 0], minimum=0.5)
    with pytest.raises(ValueError, match="minimum"):
        audit_decision(gold=[1], verdicts=[1, 0], minimum=1.5)
    with pytest.raises(ValueError, match="confidence"):
        audit_decision(gold=[1], verdicts=[1, 0], minimum=0.5, confidence=1.0)


# --- The PPI++ estimate ---------------------------------------------------------------------------

# N = 10 outputs, the judge passes 6 (mean_N f = 0.6); the first 4 of the order are labeled.
TEN_VERDICTS = [1, 1, 1, 0, 0, 1, 1, 0, 0, 1]
FOUR_GOLD = [1, 0, 1, 0]


def test_ppi_estimate_hand_worked_with_the_finite_population_correction():
    # On the labeled four: y = 1 0 1 0, f = 1 1 1 0. Means 0.5 and 0.75. Cov (1/n) =
    # (0.5*0.25 - 0.5*0.25 + 0.5*0.25 + 0.5*0.75)/4 = 0.125; Var f = 0.75*0.25 = 0.1875; lambda = 2/3.
    # theta_hat = 2/3 * 0.6 + mean(1/3, -2/3, 1/3, 0) = 0.4 + 0 = 0.4.
    # Var(y - lambda f), ddof 1 = (1/9 + 4/9 + 1/9 + 0)/3 = 2/9; FPC 1 - 4/10 = 0.6;
    # se^2 = 0.6 * (2/9) / 4 = 1/30, se = 0.182574; half-width 1.959964 * 0.182574 = 0.357839.
    estimate = ppi_estimate(gold=FOUR_GOLD, verdicts=TEN_VERDICTS)
    assert estimate.lam == pytest.approx(2 / 3)
    assert estimate.estimate == pytest.approx(0.4)
    assert estimate.std_error == pytest.approx(math.sqrt(1 / 30))
    assert estimate.lower == pytest.approx(0.4 - 0.357839, abs=1e-6)
    assert estimate.upper == pytest.approx(0.4 + 0.357839, abs=1e-6)
    assert (estimate.n, estimate.N) == (4, 10)


def test_ppi_estimate_without_the_correction_is_wider_and_clipped_to_zero():
    # se^2 = (2/9)/4 = 1/18, se = 0.235702, half-width 0.461968: [-0.062, 0.862] clipped to [0, 0.862].
    estimate = ppi_estimate(gold=FOUR_GOLD, verdicts=TEN_VERDICTS, fpc=False)
    assert estimate.std_error == pytest.approx(math.sqrt(1 / 18))
    assert estimate.lower == 0.0
    assert estimate.upper == pytest.approx(0.861968, abs=1e-6)


def test_labeling_every_output_leaves_no_uncertainty_in_the_estimate():
    estimate = ppi_estimate(gold=[1, 0, 1, 1], verdicts=[1, 1, 0, 1])
    assert estimate.estimate == pytest.approx(0.75)
    assert estimate.std_error == 0.0


def test_pending_gold_is_left_out_of_the_estimate():
    with_pending = ppi_estimate(gold=[1, None, 0, 1, 0], verdicts=[1, 1, 1, 0, 0, 1, 1, 0, 0, 1])
    without = ppi_estimate(gold=FOUR_GOLD, verdicts=[1, 1, 0, 0, 1, 1, 0, 0, 1, 1])
    # Same four settled (y, f) pairs, same mean_N f = 0.6: the same estimate.
    assert with_pending.n == 4
    assert with_pending.estimate == pytest.approx(without.estimate)


def test_lambda_is_clipped_to_zero_and_one():
    # A judge that disagrees with gold everywhere: Cov < 0 -> 0.
    assert power_tuned_lambda(y=np.array([1.0, 0, 1, 0]), f=np.array([0.0, 1, 0, 1])) == 0
    # y = 2f in spirit (Cov/Var = 1.5 on y = f everywhere but one more pass): clipped to 1.
    y = np.array([1.0, 1, 0, 0, 1])
    f = np.array([1.0, 0.5, 0, 0, 0.5])
    assert power_tuned_lambda(y=y, f=f) == 1


@pytest.fixture
def ppi_sample():
    rng = np.random.default_rng(7)
    N, n = 3000, 200
    f = (rng.random(N) < 0.7).astype(float)
    y = np.where(rng.random(N) < 0.8, f, 1 - f)
    return y[:n], f


def test_the_point_estimate_matches_ppi_py(ppi_sample):
    y, f = ppi_sample
    n = y.size
    ours = ppi_estimate(gold=y, verdicts=f)
    # ppi_py's estimate with the same lambda, the judge's scores on all N as its "unlabeled" set.
    theirs = ppi_mean_pointestimate(y, f[:n], f, lam=ours.lam)
    assert ours.estimate == pytest.approx(float(np.ravel(theirs)[0]), abs=1e-12)
    for lam in (0.0, 0.3, 1.0):  # lambda 0 is the plain sample mean, 1 is plain PPI
        mine = ppi_estimate(gold=y, verdicts=f, lam=lam).estimate
        assert mine == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, f[:n], f, lam=lam))[0]), abs=1e-12)


def test_the_interval_without_the_correction_matches_ppi_py_as_n_over_N_goes_to_zero(ppi_sample):
    y, f = ppi_sample
    n = y.size
    ours = ppi_estimate(gold=y, verdicts=f, fpc=False)
    # ppi_py adds lam^2 Var(f)/N_unlabeled for an unlabeled set of its own and uses the ddof-0 variance.
    # Repeating f 2,000 times keeps mean_N f and makes that term vanish (6e6 items); ddof: x sqrt((n-1)/n).
    lower, upper = ppi_mean_ci(y, f[:n], np.tile(f, 2000), alpha=0.05, lam=ours.lam)
    half_theirs = (float(np.ravel(upper)[0]) - float(np.ravel(lower)[0])) / 2
    half_ours = (ours.upper - ours.lower) / 2
    assert half_ours * math.sqrt((n - 1) / n) == pytest.approx(half_theirs, rel=1e-4)
    assert (ours.lower + ours.upper) / 2 == pytest.approx((float(np.ravel(lower)[0]) + float(np.ravel(upper)[0])) / 2)
    # And the finite-population correction narrows it by sqrt(1 - n/N) exactly.
    with_fpc = ppi_estimate(gold=y, verdicts=f)
    assert with_fpc.std_error == pytest.approx(ours.std_error * math.sqrt(1 - n / f.size))


# --- The betting tests, by exact enumeration of every label order ---------------------------------

# N = 8: 4 gold passes (theta = 0.5); the judge passes 3 of them and 1 fail, and has no verdict on two.
EIGHT_GOLD = np.array([1.0, 1, 1, 1, 0, 0, 0, 0])
EIGHT_VERDICTS = [1, 1, 1, None, 1, 0, 0, None]


def test_the_capital_is_exactly_a_martingale_at_the_boundary_over_every_order():
    f = judge_scores(verdicts=EIGHT_VERDICTS)
    ys, fs = all_orders(EIGHT_GOLD, f)  # 40,320 equally likely orders
    capital = np.exp(betting_log_capital(y=ys, f=fs, m=0.5))
    # E[K_t] = 1 at every t when theta = m: the null means are exact, the bets predictable.
    assert capital.mean(axis=0) == pytest.approx(np.ones(8), abs=1e-9)
    assert capital.min() >= 0
    # And below the null's boundary (theta = 0.5 <= m = 5/8) it is a supermartingale: E[K_t] <= 1.
    below = np.exp(betting_log_capital(y=ys, f=fs, m=5 / 8)).mean(axis=0)
    assert np.all(below <= 1 + 1e-9)
    assert below[-1] < 1  # strictly: the test can tell


def test_a_bet_that_peeks_at_the_current_label_breaks_the_martingale():
    # Negative control for the enumeration: a bet made after seeing the label is not predictable.
    ys, _ = all_orders(EIGHT_GOLD, judge_scores(verdicts=EIGHT_VERDICTS))
    rest = 8 - np.arange(8)
    seen = np.cumsum(ys, axis=1) - ys
    c = (8 * 0.5 - seen) / rest
    beta = np.where(ys == 1, 0.5 / np.maximum(c, 1e-9), 0)
    assert np.prod(1 + beta * (ys - c), axis=1).mean() > 1.5


@pytest.mark.parametrize("alpha", [0.5, 0.25, 0.1])
def test_the_chance_of_ever_crossing_1_over_alpha_is_at_most_alpha_exactly(alpha):
    f = judge_scores(verdicts=EIGHT_VERDICTS)
    ys, fs = all_orders(EIGHT_GOLD, f)
    crossed = (betting_log_capital(y=ys, f=fs, m=0.5) >= math.log(1 / alpha)).any(axis=1)
    assert crossed.mean() <= alpha
    assert crossed.mean() > 0 or alpha < 0.5  # not vacuous: at alpha 1/2 some orders do cross


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.95])
def test_a_wrong_decision_has_probability_at_most_alpha_over_2_per_side_exactly(confidence):
    """N = 10 by exact enumeration of its 25,200 distinct orders (10!/(4! 3!)): wrong PASS when theta is
    just below the minimum, wrong FAIL when theta is at the minimum (the boundary)."""
    alpha_half = (1 - confidence) / 2
    gold = np.array([1.0] * 5 + [0.0] * 5)  # theta = 0.5
    verdicts = [1, 1, 1, 1, 0, 1, 0, 0, 0, None]
    f = judge_scores(verdicts=verdicts)
    ys, fs = distinct_orders(gold, f)
    assert ys.shape == (25200, 10)
    # theta = 0.5 < minimum = 0.6: PASS is wrong. theta = 0.5 = minimum: FAIL is wrong (and the boundary).
    wrong_pass = decide_each_label(gold=ys, f=fs, minimum=0.6, confidence=confidence, min_gold=1).decided == PASS
    wrong_fail = decide_each_label(gold=ys, f=fs, minimum=0.5, confidence=confidence, min_gold=1).decided == FAIL
    assert wrong_pass.mean() <= alpha_half
    assert wrong_fail.mean() <= alpha_half


def test_wrong_decisions_by_exact_enumeration_of_all_orders_of_eight():
    f = judge_scores(verdicts=EIGHT_VERDICTS)
    ys, fs = all_orders(EIGHT_GOLD, f)
    for confidence in (0.5, 0.8):
        alpha_half = (1 - confidence) / 2
        # theta = 4/8: at minimum 5/8 PASS is wrong; at minimum 4/8 (boundary) FAIL is wrong.
        wrong_pass = (
            decide_each_label(gold=ys, f=fs, minimum=5 / 8, confidence=confidence, min_gold=1).decided == PASS
        ).mean()
        wrong_fail = (
            decide_each_label(gold=ys, f=fs, minimum=4 / 8, confidence=confidence, min_gold=1).decided == FAIL
        ).mean()
        assert wrong_pass <= alpha_half
        assert wrong_fail <= alpha_half
        # At the boundary the PASS side's betting test alone (the exact rule is right there) is also bounded.
        crossed = (betting_log_capital(y=ys, f=fs, m=4 / 8) >= math.log(1 / alpha_half)).any(axis=1).mean()
        assert crossed <= alpha_half


# --- The decision rule ----------------------------------------------------------------------------


def test_the_exact_rule_passes_when_the_labeled_passes_alone_reach_the_minimum():
    # N = 10, minimum 0.5: 5 labeled passes reach 0.5 * 10, before the minimum of gold items.
    decision = audit_decision(gold=[1, 1, 1, 1, 1], verdicts=[0] * 10, minimum=0.5)
    assert (decision.decided, decision.decided_at, decision.decided_by) == (PASS, 5, "exact")
    four = audit_decision(gold=[1, 1, 1, 1], verdicts=[0] * 10, minimum=0.5)
    assert four.decided is None
    assert (four.lower, four.upper) == (0.4, 1.0)


def test_the_exact_rule_fails_when_the_labeled_fails_alone_make_the_minimum_unreachable():
    # N = 10, minimum 0.5: 6 fails leave at most 4 passes < 5.
    decision = audit_decision(gold=[0, 0, 1, 0, 0, 0, 0], verdicts=[1] * 10, minimum=0.5)
    assert (decision.decided, decision.decided_at, decision.decided_by) == (FAIL, 7, "exact")
    five_fails = audit_decision(gold=[0, 0, 0, 0, 0], verdicts=[1] * 10, minimum=0.5)
    assert five_fails.decided is None  # 5 passes are still possible: exactly 0.5 would pass


def test_before_the_first_label_nothing_is_decided_and_the_forecast_still_runs():
    # A plan just started: n = 0. The bounds are the exact ones (nothing known: 0 and 1).
    d = audit_decision(gold=[], verdicts=[1, 0, 1, 1], minimum=0.5)
    assert (d.decided, d.n_labeled, d.lower, d.upper, d.estimate.estimate) == (None, 0, 0.0, 1.0, None)
    forecast = audit_forecast(gold=[], verdicts=[1, 0, 1, 1], minimum=0.5, k=4, n_sims=50)
    assert forecast.p_decided == 1.0  # labeling all four always decides (the exact rule)


def test_no_decision_by_the_test_before_the_minimum_of_gold_items():
    # 1,000 outputs, every label a pass, minimum 0.5: the capital clears 2/alpha = 80 early,
    # but the decision waits for MIN_GOLD settled items.
    verdicts = [1] * 1000
    early = audit_decision(gold=[1] * 19, verdicts=verdicts, minimum=0.5)
    assert early.decided is None
    assert early.evidence_pass >= 80
    at_twenty = audit_decision(gold=[1] * 20, verdicts=verdicts, minimum=0.5)
    assert (at_twenty.decided, at_twenty.decided_at, at_twenty.decided_by) == (PASS, MIN_GOLD, "test")
    sooner = audit_decision(gold=[1] * 20, verdicts=verdicts, minimum=0.5, min_gold=5)
    assert sooner.decided_at < 20


def test_a_pending_item_counts_against_the_decision_it_would_help():
    verdicts = [1] * 1000
    settled = audit_decision(gold=[1] * 24, verdicts=verdicts, minimum=0.5)
    assert settled.decided == PASS
    # The same labels with five pending items among them: for the PASS test they are fails.
    pending = [1] * 24
    for i in (3, 7, 11, 15, 19):
        pending[i] = None
    held = audit_decision(gold=pending, verdicts=verdicts, minimum=0.5)
    assert held.n_pending == 5 and held.n_gold == 19
    assert held.decided is None
    assert held.evidence_pass < settled.evidence_pass
    # For the FAIL test a pending item is a pass: all-fail labels with pending items fail later.
    fails = audit_decision(gold=[0] * 24, verdicts=[0] * 1000, minimum=0.5)
    fails_pending = audit_decision(gold=[0 if i % 4 else None for i in range(24)], verdicts=[0] * 1000, minimum=0.5)
    assert fails.decided == FAIL
    assert fails_pending.evidence_fail < fails.evidence_fail


def test_the_anytime_valid_bounds_hold_the_estimate_and_close_on_full_labeling():
    y, f = population(N=200, theta=0.7, phi=0.6, judge_rate=0.75)
    ys, fs = orders(y=y, f=f, count=1, seed=3)
    part = audit_decision(gold=ys[0, :60], verdicts=fs[0], minimum=0.9)
    assert part.lower <= part.estimate.estimate <= part.upper
    assert part.lower <= 0.7 <= part.upper
    assert part.upper - part.lower < 0.6
    whole = audit_decision(gold=ys[0], verdicts=fs[0], minimum=0.9)
    assert whole.lower == whole.upper == pytest.approx(0.7)
    assert whole.decided == FAIL


def _bounds_by_definition(*, f: np.ndarray, gold: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Every grid point run to the last label: the m rejected by neither test at any time so far and inside
    the exact bounds, their hull (widened to the neighbours on the 2,001-point grid)."""
    N, T = f.size, gold.size
    na, pending = gold == NOT_APPLICABLE, np.isnan(gold)
    applicable = N - int(na.sum())
    low, high = int((gold == 1).sum()) / applicable, (applicable - int((gold == 0).sum())) / applicable
    exact = N <= 2000 and not na.any()
    grid = np.arange(N + 1) / N if exact else np.linspace(0, 1, 2001)
    y_pass = np.where(na, grid[:, None], np.where(pending, 0.0, gold))
    y_fail = np.where(na, grid[:, None], np.where(pending, 1.0, gold))
    threshold = math.log(2 / (1 - confidence))
    k_pass = betting_log_capital(y=np.broadcast_to(y_pass, (grid.size, T)), f=f, m=grid)
    k_fail = betting_log_capital(y=np.broadcast_to(1 - y_fail, (grid.size, T)), f=1 - f, m=1 - grid)
    kept = ~((k_pass >= threshold).any(axis=1) | (k_fail >= threshold).any(axis=1))
    kept &= (grid >= low - 1e-12) & (grid <= high + 1e-12)
    first, last = np.flatnonzero(kept)[[0, -1]]
    if not exact:
        first, last = max(first - 1, 0), min(last + 1, grid.size - 1)
    return max(float(grid[first]), low), min(float(grid[last]), high)


@pytest.mark.parametrize(
    ("N", "labeled", "na_share"), [(600, 500, 0.0), (1500, 1100, 0.05), (2500, 1500, 0.0), (1200, 1200, 0.0)]
)
def test_the_bounds_run_only_the_points_still_in_play_and_equal_running_every_point(N, labeled, na_share):
    # Each grid point runs to a growing horizon until rejected; the reference runs every point to the last label.
    y, f = population(N=N, theta=0.72, phi=0.7, judge_rate=0.7)
    ys, fs = orders(y=y, f=f, count=1, seed=N + labeled)
    gold = ys[0, :labeled].copy()
    rng = np.random.default_rng(4)
    gold[rng.random(labeled) < na_share] = NOT_APPLICABLE
    gold[rng.random(labeled) < 0.02] = np.nan  # pending
    bounds = _confidence_sequence(f=fs[0], gold=gold, confidence=0.95)
    assert bounds == _bounds_by_definition(f=fs[0], gold=gold)
    assert bounds[1] - bounds[0] < 0.3  # an interval that has narrowed, not the trivial [0, 1]


def test_the_worked_example_in_the_docs():
    """docs/calibration.md, "Audits on the candidate": 1,000 outputs, theta 0.70, a judge passing 750 with
    correlation 0.6, minimum 0.60, order seed 2026."""
    y, f = population(N=1000, theta=0.7, phi=0.6, judge_rate=0.75)
    assert (int((y * f).sum()), int(((1 - y) * f).sum())) == (644, 106)
    order = np.random.default_rng(2026).permutation(1000)
    y, f = y[order], f[order]
    at_20 = audit_decision(gold=y[:20], verdicts=f, minimum=0.6)
    assert (int(y[:20].sum()), int((y[:20] * f[:20]).sum()), int(((1 - y[:20]) * f[:20]).sum())) == (13, 13, 1)
    assert at_20.estimate.lam == pytest.approx(0.929, abs=5e-4)
    assert at_20.estimate.estimate == pytest.approx(0.696, abs=5e-4)
    assert (at_20.estimate.lower, at_20.estimate.upper) == pytest.approx((0.601, 0.792), abs=5e-4)
    assert (at_20.lower, at_20.upper) == pytest.approx((0.398, 0.993), abs=5e-4)
    assert at_20.evidence_pass == pytest.approx(1.67, abs=5e-3)
    assert at_20.decided is None
    at_40 = audit_decision(gold=y[:40], verdicts=f, minimum=0.6)
    assert at_40.estimate.estimate == pytest.approx(0.670, abs=5e-4)
    assert (at_40.lower, at_40.upper) == pytest.approx((0.484, 0.855), abs=5e-4)
    forecast = audit_forecast(gold=y[:40], verdicts=f, minimum=0.6, k=25)
    assert forecast.p_decided == pytest.approx(0.002, abs=5e-4)
    assert round(forecast.expected_labels) == 242
    assert forecast.p90_labels == 739
    at_80 = audit_decision(gold=y[:80], verdicts=f, minimum=0.6)
    assert (at_80.lower, at_80.upper) == pytest.approx((0.580, 0.788), abs=5e-4)
    assert at_80.evidence_pass == pytest.approx(8.63, abs=5e-3)
    assert at_80.decided is None
    at_100 = audit_decision(gold=y[:100], verdicts=f, minimum=0.6)
    assert (at_100.decided, at_100.decided_at, at_100.decided_by) == (PASS, 90, "test")
    assert (at_100.lower, at_100.upper) == pytest.approx((0.601, 0.788), abs=5e-4)
    assert (at_100.estimate.lower, at_100.estimate.upper) == pytest.approx((0.639, 0.761), abs=5e-4)


def test_the_cli_example_in_the_docs():
    """docs/calibration.md, "The gate decides on it": 200 outputs in id order, the judge failing every tenth,
    people agreeing but on the 6th (FAIL) and the 100th (PASS), minimum 0.8, the order of seed 2026 (as
    labeling.audit_order.seeded_order makes it), the forecast as the plan page runs it (1,000, seed 0)."""
    f = np.array([0.0 if i % 10 == 9 else 1.0 for i in range(200)])
    y = f.copy()
    y[5], y[99] = 0.0, 1.0
    assert y.sum() == 180
    order = np.random.default_rng(2026).permutation(200)
    y, f = y[order], f[order]

    def read(n):
        figures = audit_decision(gold=y[:n], verdicts=f, minimum=0.8)
        return figures, audit_forecast(gold=y[:n], verdicts=f, minimum=0.8, k=25, n_sims=1000, seed=0)

    _, before = read(0)
    assert round(before.expected_labels) == 56
    at_25, forecast = read(25)
    assert (round(at_25.estimate.estimate, 3), at_25.lower, at_25.upper) == (0.9, 0.63, 0.98)
    assert at_25.decided is None and forecast.p_decided == 0.0
    assert (round(forecast.expected_labels), forecast.p90_labels) == (66, 136)
    at_50, forecast = read(50)
    assert (at_50.lower, at_50.upper) == (0.77, 0.975) and at_50.decided is None
    assert round(forecast.p_decided, 2) == 0.93 and round(forecast.expected_labels) == 18
    at_75, _ = read(75)
    assert (at_75.decided, at_75.decided_at, at_75.decided_by) == (PASS, 64, "test")
    assert (round(at_75.estimate.estimate, 3), at_75.lower, at_75.upper) == (0.9, 0.82, 0.965)


# --- Validity by simulation with known truth ------------------------------------------------------

THETA = 0.7


@pytest.fixture(scope="module")
def simulated():
    # 400 outputs, theta = 0.7, a judge with correlation 0.6 that passes too much (0.75), 600 orders.
    y, f = population(N=400, theta=THETA, phi=0.6, judge_rate=0.75)
    f = f.copy()
    f[:8] = judge_scores(verdicts=[*f[8:], *[None] * 8])[-8:]  # eight outputs without a verdict
    return orders(y=y, f=f, count=600, seed=11)


@pytest.mark.parametrize("distance", [-0.10, -0.05, -0.02, 0.02, 0.05, 0.10])
@pytest.mark.slow
def test_wrong_decisions_stay_below_alpha_over_2_on_both_sides_of_the_truth(simulated, distance):
    ys, fs = simulated
    minimum = THETA + distance
    decisions = decide_each_label(gold=ys, f=fs, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD)
    right = PASS if THETA >= minimum else FAIL
    wrong = ((decisions.decided != "") & (decisions.decided != right)).mean()
    assert wrong <= 0.025
    assert (decisions.decided == right).mean() == 1.0 - wrong  # every order decides by label N at the latest


@pytest.mark.slow
def test_the_anytime_valid_bounds_hold_the_truth_at_every_moment_in_95_percent_of_orders():
    # The bounds after T labels are the intersection over every moment up to T, so a miss at any moment
    # shows at T. 200 orders of 200 outputs, read after 120 labels.
    y, f = population(N=200, theta=0.6, phi=0.5, judge_rate=0.55)
    ys, fs = orders(y=y, f=f, count=200, seed=4)
    missed = [
        not (d.lower <= 0.6 <= d.upper)
        for d in (audit_decision(gold=ys[i, :120], verdicts=fs[i], minimum=0.5) for i in range(200))
    ]
    assert np.mean(missed) <= 0.05


@pytest.mark.slow
def test_peeking_at_a_fixed_n_interval_every_10_labels_is_wrong_too_often(simulated):
    """Negative control: the same simulation sees an invalid rule. Stop at the first look (every 10 labels
    from 20 on) where the fixed-n 95% PPI++ interval with the FPC clears the minimum."""
    ys, fs = simulated
    S, N = ys.shape
    minimum = THETA + 0.02  # PASS is wrong
    wrong = np.zeros(S, dtype=bool)
    decided = np.zeros(S, dtype=bool)
    f_mean = fs.mean(axis=1)
    for n in range(20, N, 10):
        y, f = ys[:, :n], fs[:, :n]
        cov = ((y - y.mean(1, keepdims=True)) * (f - f.mean(1, keepdims=True))).mean(1)
        lam = np.clip(np.divide(cov, f.var(1), out=np.zeros(S), where=f.var(1) > 0), 0, 1)
        r = y - lam[:, None] * f
        estimate = lam * f_mean + r.mean(1)
        se = np.sqrt((1 - n / N) * r.var(1, ddof=1) / n)
        passes = ~decided & (estimate - Z95 * se > minimum)
        fails = ~decided & (estimate + Z95 * se < minimum)
        wrong |= passes
        decided |= passes | fails
    assert wrong.mean() > 0.025


# --- The forecast ---------------------------------------------------------------------------------


def test_the_forecast_is_seeded_and_deterministic():
    y, f = population(N=300, theta=0.8, phi=0.6, judge_rate=0.8)
    ys, fs = orders(y=y, f=f, count=1, seed=5)
    first = audit_forecast(gold=ys[0, :30], verdicts=fs[0], minimum=0.65, n_sims=300, seed=1)
    again = audit_forecast(gold=ys[0, :30], verdicts=fs[0], minimum=0.65, n_sims=300, seed=1)
    assert first == again
    assert first.p_pass + first.p_fail == pytest.approx(first.p_decided)
    assert 0 <= first.expected_labels <= first.p90_labels * 2 + 300


def test_the_forecast_leans_to_the_side_the_labels_point_to():
    verdicts = [1] * 150 + [0] * 150
    good = audit_forecast(gold=[1] * 14 + [0], verdicts=verdicts, minimum=0.3, k=25, n_sims=300)
    assert good.p_pass > 0.9 and good.p_fail == 0
    bad = audit_forecast(gold=[0] * 14 + [1], verdicts=verdicts, minimum=0.7, k=25, n_sims=300)
    assert bad.p_fail > 0.9 and bad.p_pass == 0


def test_labeling_the_rest_always_decides():
    # 40 outputs, 30 labeled, k = 10 more labels the whole population: the exact rule decides by then.
    rng = np.random.default_rng(2)
    gold = list((rng.random(30) < 0.6).astype(int))
    forecast = audit_forecast(gold=gold, verdicts=[1, 0] * 20, minimum=0.6, k=10, n_sims=200)
    assert forecast.p_decided == 1.0
    assert forecast.p90_labels <= 10


def test_the_forecast_replays_each_order_only_as_far_as_it_decides_and_finds_the_same_decisions():
    # The reference is the plain replay of every simulated order to N. 1,500 outputs so the replay takes many
    # blocks as orders decide; a threshold at the truth so some orders decide only at the end; N/A labels.
    rng = np.random.default_rng(11)
    N = 1500
    drawn = (rng.random((60, N)) < 0.62).astype(np.int8)
    drawn[:, 3] = NOT_APPLICABLE
    drawn[rng.random((60, N)) < 0.02] = NOT_APPLICABLE
    f = np.where(rng.random(N) < 0.8, drawn[0], 1 - drawn[0]).clip(0, 1).astype(float)
    for minimum in (0.62, 0.55, 0.7):
        reference = decide_each_label(
            gold=drawn.astype(float), f=f, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD
        )
        decisions, at = first_decisions_forward(
            drawn=drawn, f=f, shared=0, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD
        )
        assert list(decisions) == list(reference.decided)
        assert list(at) == list(reference.at)
        assert len(set(at)) > 5  # decided at many different labels, not all at once
    # Negative control: a replay cut at a horizon misses the orders that decide after it.
    cut = decide_each_label(gold=drawn[:, :200].astype(float), f=f, minimum=0.62, confidence=0.95, min_gold=MIN_GOLD)
    full = decide_each_label(gold=drawn.astype(float), f=f, minimum=0.62, confidence=0.95, min_gold=MIN_GOLD)
    assert list(cut.decided) != list(full.decided)


def test_a_decided_audit_forecasts_nothing_more():
    forecast = audit_forecast(gold=[1] * 5, verdicts=[0] * 10, minimum=0.5)
    assert (forecast.p_decided, forecast.p_pass, forecast.expected_labels) == (1.0, 1.0, 0.0)


# --- The price of gating ----------------------------------------------------------------------------


def test_labels_per_decision_hand_worked():
    # phi 0.6, pass rate 0.8, margin 0.10, N 1,000, 95%, no minimum (it stands at the pass rate): z^2 = 3.841459,
    # the gold variance s^2 = 0.46 * 0.16 + 0.54 * 0.16 = 0.16 (s = 0.4); the anytime sample
    # A = 1.38 * 3.841459 * 0.16 * 0.64 / 0.01 + 6.3 * 2 * 0.4 / 0.10 = 54.284 + 50.4 = 104.684; without replacement
    # 104.684 / 1.104684 = 94.76 -> 95. The fixed-n size beside it: n0 = 3.841459 * 0.16 * 0.64 / 0.01 = 39.3365,
    # / 1.0393365 = 37.848 -> 38.
    cost = labels_per_decision(phi=0.6, pass_rate=0.8, margin=0.10, N=1000)
    assert (cost.fixed_n, cost.labels) == (38, 95)
    assert cost.variance_share == pytest.approx(0.64)
    # margin 0.05: A = 54.284 * 4 + 100.8 = 317.938, / 1.317938 = 241.24 -> 242.
    assert labels_per_decision(phi=0.6, pass_rate=0.8, margin=0.05, N=1000).labels == 242
    # A judge with no correlation: A = 1.38 * 3.841459 * 0.16 / 0.0025 + 100.8 = 440.078, / 1.440078 = 305.6 -> 306;
    # the fixed-n size n0 = 245.85, / 1.24585 = 197.3 -> 198.
    no_help = labels_per_decision(phi=0.0, pass_rate=0.8, margin=0.05, N=1000)
    assert (no_help.labels, no_help.fixed_n) == (306, 198)
    # The minimum carries more of the variance than the truth: p 0.7 against the minimum 0.8 at 0.10, phi 0.6:
    # s^2 = 0.46 * 0.21 + 0.54 * 0.16 = 0.183, A = 1.38 * 3.841459 * 0.183 * 0.64 / 0.01 + 6.3 * 2 * 0.42779 / 0.10
    # = 62.088 + 53.901 = 115.989, / 1.115989 = 103.93 -> 104.
    assert labels_per_decision(phi=0.6, pass_rate=0.7, margin=0.10, N=1000, minimum=0.8).labels == 104
    # A perfect judge still pays the start-up cost: A = 50.4, / 1.0504 = 47.98 -> 48 (more than the minimum of
    # gold); a tiny candidate at most all of it (A = 656.1 at p 0.5, 0.05: 46.46 -> 47 of 50; 9.85 -> 10 of 10).
    assert labels_per_decision(phi=1.0, pass_rate=0.8, margin=0.10, N=1000).labels == 48 > MIN_GOLD
    assert labels_per_decision(phi=0.0, pass_rate=0.5, margin=0.05, N=50).labels == 47
    assert labels_per_decision(phi=0.0, pass_rate=0.5, margin=0.05, N=10).labels == 10
    with pytest.raises(ValueError):
        labels_per_decision(phi=0.5, pass_rate=0.8, margin=0, N=100)
    with pytest.raises(ValueError):
        labels_per_decision(phi=0.5, pass_rate=0.8, margin=0.05, N=100, minimum=1.2)


# --- Gold N/A: the pass rate among the outputs the criterion applies to -----------------------------

NA = NOT_APPLICABLE


def test_na_gold_leaves_the_pass_rate_in_the_exact_rule_hand_worked():
    # N = 10, minimum 0.8, labels P P N P P P N P P: after 9 labels 7 passes of at most 8 applicable outputs
    # (7 >= 0.8 * 8 = 6.4): PASS, by the exact rule, whatever the last output is. After 8: 6 < 6.4.
    gold = [1, 1, NA, 1, 1, 1, NA, 1, 1]
    d = audit_decision(gold=gold, verdicts=[1] * 10, minimum=0.8)
    assert (d.decided, d.decided_at, d.decided_by) == (PASS, 9, "exact")
    assert (d.n_gold, d.n_not_applicable, d.n_pending) == (7, 2, 0)
    assert d.lower >= 7 / 8 and d.upper == 1.0
    assert audit_decision(gold=gold[:8], verdicts=[1] * 10, minimum=0.8).decided is None
    # Negative control: the same labels with N/A read as pending never reach 0.8 * 10 passes.
    as_pending = audit_decision(gold=[None if v == NA else v for v in gold], verdicts=[1] * 10, minimum=0.8)
    assert as_pending.decided is None


def test_na_gold_makes_a_failure_certain_sooner_hand_worked():
    # N = 10, minimum 0.8, labels F F N: at most 9 applicable outputs, 2 of them fail, 7 < 0.8 * 9 = 7.2: FAIL.
    # After F F: 8 passes of 10 are still possible (8 < 8 is false).
    d = audit_decision(gold=[0, 0, NA], verdicts=[0] * 10, minimum=0.8)
    assert (d.decided, d.decided_at, d.decided_by) == (FAIL, 3, "exact")
    assert d.upper <= 7 / 9
    assert audit_decision(gold=[0, 0], verdicts=[0] * 10, minimum=0.8).decided is None
    # Counted as pending, 8 passes out of 10 stay possible.
    assert audit_decision(gold=[0, 0, None], verdicts=[0] * 10, minimum=0.8).decided is None


def test_the_estimate_with_na_gold_is_the_pass_rate_among_the_applicable_labels():
    # A judge passing everything is a constant: lambda 0, so the estimate is 2 passes / 3 applicable.
    e = ppi_estimate(gold=[1, 1, 0, NA], verdicts=[1] * 10)
    assert e.estimate == pytest.approx(2 / 3)
    assert audit_decision(gold=[1, 1, 0, NA], verdicts=[1] * 10, minimum=0.5).estimate.estimate == pytest.approx(2 / 3)


def test_gold_values_other_than_pass_fail_na_or_pending_are_refused():
    with pytest.raises(ValueError, match=r"-1 \(N/A\)"):
        audit_decision(gold=[1, 2], verdicts=[1] * 4, minimum=0.5)
    with pytest.raises(ValueError, match="verdicts must be"):  # a verdict is never N/A-coded: N/A is no verdict
        audit_decision(gold=[1], verdicts=[1, NA], minimum=0.5)


# N = 9: 4 passes, 3 fails, 2 N/A (theta = 4/7 among the applicable seven); the judge is right on all but
# two and has no verdict on the N/A ones.
NINE_GOLD = np.array([1.0, 1, 1, 1, 0, 0, 0, NA, NA])
NINE_VERDICTS = [1, 1, 1, 0, 1, 0, 0, None, None]


def test_with_na_mapped_to_the_minimum_the_capital_is_exactly_a_martingale_at_the_boundary():
    f = judge_scores(verdicts=NINE_VERDICTS)
    ys, fs = distinct_orders(NINE_GOLD, f)
    m = 4 / 7
    capital = np.exp(betting_log_capital(y=np.where(ys == NA, m, ys), f=fs, m=m))
    assert capital.mean(axis=0) == pytest.approx(np.ones(9), abs=1e-9)


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.95])
def test_wrong_decisions_with_na_gold_by_exact_enumeration(confidence):
    alpha_half = (1 - confidence) / 2
    f = judge_scores(verdicts=NINE_VERDICTS)
    ys, fs = distinct_orders(NINE_GOLD, f)
    # theta = 4/7 < 0.6: PASS is wrong; at the boundary 4/7 FAIL is wrong.
    wrong_pass = (
        decide_each_label(gold=ys, f=fs, minimum=0.6, confidence=confidence, min_gold=1).decided == PASS
    ).mean()
    wrong_fail = (
        decide_each_label(gold=ys, f=fs, minimum=4 / 7, confidence=confidence, min_gold=1).decided == FAIL
    ).mean()
    assert wrong_pass <= alpha_half
    assert wrong_fail <= alpha_half


def test_counting_na_as_a_pass_would_be_wrong_too_often_negative_control():
    # Negative control for the enumeration above: N/A read as PASS (6 of 9 > 0.6) passes a release whose
    # applicable outputs pass 4 in 7.
    f = judge_scores(verdicts=NINE_VERDICTS)
    ys, fs = distinct_orders(NINE_GOLD, f)
    wrong = (
        decide_each_label(gold=np.where(ys == NA, 1.0, ys), f=fs, minimum=0.6, confidence=0.5, min_gold=1).decided
        == PASS
    )
    assert wrong.mean() > 0.25


@pytest.fixture(scope="module")
def simulated_with_na():
    # 400 outputs: 60 N/A (15%), and of the 340 others 306 pass (theta 0.9); a judge with correlation 0.6
    # on the applicable ones and no verdict on the N/A ones. 400 orders.
    y, f = population(N=340, theta=0.9, phi=0.6, judge_rate=0.88)
    gold = np.r_[y, np.full(60, NA)]
    scores = judge_scores(verdicts=[*f, *[None] * 60])
    return orders(y=gold, f=scores, count=400, seed=21)


@pytest.mark.parametrize("minimum", [0.85, 0.88, 0.92, 0.95])
@pytest.mark.slow
def test_wrong_decisions_with_na_gold_stay_below_alpha_over_2_by_simulation(simulated_with_na, minimum):
    ys, fs = simulated_with_na
    decisions = decide_each_label(gold=ys, f=fs, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD)
    right = PASS if 0.9 >= minimum else FAIL
    wrong = ((decisions.decided != "") & (decisions.decided != right)).mean()
    assert wrong <= 0.025
    assert (decisions.decided == right).mean() == 1.0 - wrong  # the exact rule decides by label N at the latest


@pytest.mark.slow
def test_a_release_passing_its_applicable_outputs_passes_although_na_would_hold_it_back(simulated_with_na):
    # At minimum 0.85 (theta 0.9): with N/A left out, most orders pass well before labeling everything; with
    # N/A as pending, passes alone are 306 of 400 = 0.765 and no order can ever pass.
    ys, fs = simulated_with_na
    out = decide_each_label(gold=ys, f=fs, minimum=0.85, confidence=0.95, min_gold=MIN_GOLD)
    assert (out.decided == PASS).mean() >= 0.95
    assert np.median(out.at[out.decided == PASS]) < 400
    held = decide_each_label(
        gold=np.where(ys == NA, np.nan, ys), f=fs, minimum=0.85, confidence=0.95, min_gold=MIN_GOLD
    )
    assert not (held.decided == PASS).any()


@pytest.mark.slow
def test_the_bounds_with_na_gold_hold_the_true_pass_rate_in_95_percent_of_orders(simulated_with_na):
    ys, fs = simulated_with_na
    missed = [
        not (d.lower <= 0.9 <= d.upper)
        for d in (audit_decision(gold=ys[i, :120], verdicts=_verdicts(fs[i]), minimum=0.5) for i in range(100))
    ]
    assert np.mean(missed) <= 0.05


def _verdicts(scores: np.ndarray) -> list:
    """Scores back to verdicts: the filled-in rate of outputs without a verdict is neither 0 nor 1."""
    return [v if v in (0.0, 1.0) else None for v in scores]


def test_the_forecast_draws_na_once_na_gold_is_seen_and_labeling_the_rest_decides():
    gold = [1, NA, 1, 1, 0, NA, 1, 1]
    forecast = audit_forecast(gold=gold, verdicts=[1] * 12, minimum=0.6, k=4, n_sims=200)
    assert forecast.p_decided == 1.0
    again = audit_forecast(gold=gold, verdicts=[1] * 12, minimum=0.6, k=4, n_sims=200)
    assert forecast == again


# --- Stratifying by the judge's verdict (issue 22, item 2: measure it, keep it only if it pays) ------------


def test_post_stratifying_by_the_judges_verdict_is_the_ppi_estimate():
    """The post-stratified estimate p1 * mean(y | judge PASS) + p0 * mean(y | judge FAIL), worked out here
    from the strata directly, equals the PPI++ estimate whenever lambda is not clipped: stratifying pays
    nothing (docs/calibration.md, "Why not stratify by the judge's verdict")."""
    y, f = population(N=600, theta=0.7, phi=0.6, judge_rate=0.75)
    ys, fs = orders(y=y, f=f, count=30, seed=8)
    for n in (40, 90, 200):
        for gold, scores in zip(ys[:, :n], fs, strict=True):
            labeled = scores[:n]
            p1 = scores.mean()
            stratified = p1 * gold[labeled == 1].mean() + (1 - p1) * gold[labeled == 0].mean()
            estimate = ppi_estimate(gold=gold, verdicts=scores)
            assert 0 < estimate.lam < 1
            assert estimate.estimate == pytest.approx(stratified, abs=1e-12)


def test_where_lambda_is_clipped_the_two_differ_and_ppi_falls_back_to_plain_sampling():
    # A judge that passes exactly the fails: the strata would use the negative slope, PPI++ clips it to 0.
    gold = np.array([1.0, 1, 1, 0, 0, 1, 0, 1])
    verdicts = 1 - gold
    estimate = ppi_estimate(gold=gold[:6], verdicts=verdicts)
    assert estimate.lam == 0 and estimate.estimate == pytest.approx(gold[:6].mean())
    p1 = verdicts.mean()
    stratified = p1 * gold[:6][verdicts[:6] == 1].mean() + (1 - p1) * gold[:6][verdicts[:6] == 0].mean()
    assert stratified == pytest.approx(p1 * 0 + (1 - p1) * 1)  # exact here: the judge is always wrong
    assert stratified != pytest.approx(estimate.estimate)
