"""Labels where the judge is unsure (calibration/stats/audit_unsure.py): the draw and the weighted test by hand,
blindness to the judge's direction, validity by exact enumeration of every draw sequence of tiny populations
(weighted by its probability), known-truth simulation with a judge confidently wrong on a stratum, the floor at its
edge, and the design without the inverse-probability weights as the negative control."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from calibration.stats.audit_stats import EDGES, FAIL, MIN_GOLD, PASS, betting_log_capital, decide_each_label
from calibration.stats.audit_unsure import (
    FLOOR,
    draw_levels,
    draw_order,
    draw_probabilities,
    ipw_estimate,
    simulate_orders,
    uncertainty,
    unsure_decide_each_label,
    unsure_decision,
    unsure_log_capital,
)

# --- The draw -------------------------------------------------------------------------------------


def test_the_draw_probabilities_by_hand():
    # scores 0, 0.5, 0.5, 1: u = 0, 1/2, 1/2, 0 (W = 1); floor 0.1: q = 0.1/4 + 0.9 u / 1.
    values = np.array([0.0, 0.5, 1.0])
    q = draw_probabilities(counts=np.array([[1.0, 2.0, 1.0]]), weights=uncertainty(values), floor=0.1)
    assert q[0] == pytest.approx([0.025, 0.475, 0.025])
    assert (q[0] * [1, 2, 1]).sum() == pytest.approx(1.0)
    # Only confident outputs left (W = 0): uniform over them.
    q = draw_probabilities(counts=np.array([[1.0, 0.0, 2.0]]), weights=uncertainty(values), floor=0.1)
    assert q[0, [0, 2]] == pytest.approx([1 / 3, 1 / 3])


def test_every_output_keeps_at_least_the_floor_share_of_uniform():
    rng = np.random.default_rng(1)
    values = np.linspace(0, 1, 7)
    for _ in range(50):
        counts = rng.integers(0, 5, size=(1, 7)).astype(float)
        if counts.sum() == 0:
            continue
        q = draw_probabilities(counts=counts, weights=uncertainty(values), floor=0.2)
        assert (q[0] >= 0.2 / counts.sum() - 1e-12).all()
        assert (q[0] * counts[0]).sum() == pytest.approx(1.0)


def test_the_order_is_the_same_when_every_verdict_flips():
    # Issue 41: the release must not say which way the judge leaned. u(s) = u(1 - s), so the same seed draws the
    # same order for a judge and its mirror image.
    rng = np.random.default_rng(3)
    scores = rng.choice([0, 0.2, 0.4, 0.6, 0.8, 1.0], size=300)
    for seed in (0, 1, 2026):
        assert (draw_order(scores=scores, seed=seed) == draw_order(scores=1 - scores, seed=seed)).all()


def test_the_order_is_a_permutation_and_favours_the_unsure_outputs():
    scores = np.r_[np.zeros(400), np.full(100, 0.5), np.ones(500)]
    firsts = []
    for seed in range(20):
        order = draw_order(scores=scores, seed=seed, floor=0.1)
        assert sorted(order) == list(range(1000))
        firsts.append(np.mean(scores[order[:50]] == 0.5))
    # A draw is unsure with chance about 0.1 * 0.1 + 0.9 = 0.91 while unsure outputs last (10% of a uniform draw).
    assert np.mean(firsts) > 0.8


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="floor"):
        draw_order(scores=[0.5, 1.0], floor=0.0, seed=1)
    with pytest.raises(ValueError, match="score"):
        draw_order(scores=[0.5, None], seed=1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        draw_order(scores=[0.5, 1.5], seed=1)
    with pytest.raises(ValueError, match="gold has"):
        unsure_decision(gold=[1, 1, 1], scores=[0.5, 0.5], minimum=0.5)


# --- The worked example in the docs -----------------------------------------------------------------


def test_the_worked_example_in_the_docs():
    # docs/calibration.md, "Labels where the judge is unsure": four outputs scored 1, 1, 1/2, 0, floor 0.5.
    scores = np.array([1.0, 1.0, 0.5, 0.0])
    q = draw_probabilities(counts=np.array([[1.0, 1.0, 2.0]]), weights=uncertainty(np.array([0, 0.5, 1])), floor=0.5)
    # per output: the confident ones 0.5/4 = 0.125, the unsure one 0.125 + 0.5 * 0.5 / 0.5 = 0.625
    assert q[0] == pytest.approx([0.125, 0.625, 0.125])
    # The unsure output drawn first, gold PASS. yhat is the score itself before two labels.
    # Z_1 = mean(yhat) + (1 - 0.5) / (4 * 0.625) = 0.625 + 0.2 = 0.825; mu_1 = (4 * 0.5 - 0) / 4 = 0.5 at m = 0.5.
    # z_min = 0.625 - 1 / (4 * 0.125) = -1.375, so no bet above 0.5 / (0.5 + 1.375) = 4/15.
    order = np.array([2, 0, 1, 3])
    log_k = unsure_log_capital(y=np.array([[1.0]]), f=scores[order], m=0.5, floor=0.5)
    beta = np.minimum(EDGES / (0.25 + EDGES**2), 4 / 15)
    assert math.exp(log_k[0, 0]) == pytest.approx(float(np.mean(1 + beta * (0.825 - 0.5))), abs=1e-12)
    assert math.exp(log_k[0, 0]) == pytest.approx(1.0659, abs=1e-4)
    # The estimate after that one label: (0 + 4 * 0.825) / 4.
    assert ipw_estimate(gold=np.array([1.0]), f=scores[order], floor=0.5) == pytest.approx(0.825)
    # Then only confident outputs are left: every next draw is uniform (1/3, weight 1).
    q = draw_probabilities(counts=np.array([[1.0, 0.0, 2.0]]), weights=uncertainty(np.array([0, 0.5, 1])), floor=0.5)
    assert q[0, [0, 2]] == pytest.approx([1 / 3, 1 / 3])


# --- Exact enumeration -------------------------------------------------------------------------------


def _every_sequence(scores: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Every draw sequence of the outputs and its probability under q_t."""
    values, level = np.unique(scores, return_inverse=True)
    weights = uncertainty(values)
    perms = np.array(list(itertools.permutations(range(scores.size))))
    prob = np.ones(len(perms))
    for k, perm in enumerate(perms):
        left = np.bincount(level, minlength=values.size).astype(float)[None, :]
        for i in perm:
            prob[k] *= draw_probabilities(counts=left, weights=weights, floor=floor)[0, level[i]]
            left[0, level[i]] -= 1
    return perms, prob


# Seven outputs: two unsure, two fairly sure, three confident, one of them (score 0.95) wrong.
SCORES = np.array([0.1, 0.5, 0.5, 0.9, 0.95, 0.3, 0.7])
GOLD = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0])


@pytest.mark.parametrize("floor", [0.1, 0.5, 1.0])
def test_the_capital_is_a_martingale_at_the_null_over_every_draw_sequence(floor):
    perms, prob = _every_sequence(SCORES, floor)
    assert prob.sum() == pytest.approx(1.0)
    theta = GOLD.mean()
    for y, f, m in ((GOLD, SCORES, theta), (1 - GOLD, 1 - SCORES, 1 - theta)):  # the PASS test and the FAIL test
        k = np.exp(unsure_log_capital(y=y[perms], f=f[perms], m=m, floor=floor))
        assert (prob[:, None] * k).sum(axis=0) == pytest.approx(np.ones(SCORES.size), abs=1e-9)
        # A null above the truth: a supermartingale.
        k = np.exp(unsure_log_capital(y=y[perms], f=f[perms], m=m + 0.1, floor=floor))
        assert ((prob[:, None] * k).sum(axis=0) <= 1 + 1e-9).all()


@pytest.mark.parametrize("floor", [0.1, 0.5])
def test_ville_and_the_decisions_hold_over_every_draw_sequence(floor):
    perms, prob = _every_sequence(SCORES, floor)
    theta = GOLD.mean()
    for a in (0.5, 0.25):
        k = unsure_log_capital(y=GOLD[perms], f=SCORES[perms], m=theta, floor=floor)
        assert prob[(k >= math.log(1 / a)).any(axis=1)].sum() <= a + 1e-12
    # Every minimum a multiple of 1/14 around the truth, confidence 0.5 (0.25 per side), a decision from 1 label.
    for minimum in np.arange(1, 14) / 14:
        d = unsure_decide_each_label(
            gold=GOLD[perms], f=SCORES[perms], minimum=minimum, confidence=0.5, min_gold=1, floor=floor
        )
        right = PASS if theta >= minimum else FAIL
        wrong = prob[(d.decided != "") & (d.decided != right)].sum()
        assert wrong <= 0.25 + 1e-12, (minimum, wrong)


def test_without_the_weights_the_test_is_not_a_martingale():
    # The negative control: the uniform test read along the unsure design's draws. Its capital's mean leaves 1.
    perms, prob = _every_sequence(SCORES, 0.1)
    theta = GOLD.mean()
    means = [
        (prob[:, None] * np.exp(betting_log_capital(y=y[perms], f=f[perms], m=m))).sum(axis=0)
        for y, f, m in ((GOLD, SCORES, theta), (1 - GOLD, 1 - SCORES, 1 - theta))
    ]
    assert max(abs(mean - 1).max() for mean in means) > 0.05
    assert max(mean.max() for mean in means) > 1.02  # one of the two tests grows under its null


def test_with_no_floor_the_weighted_mean_misses_the_outputs_never_drawn():
    # The floor's edge: at 0 the confident outputs are never drawn while unsure ones remain, so the weighted
    # observation's mean leaves their gold out: a judge confidently wrong there is never corrected.
    scores = np.array([1.0, 1.0, 0.5, 0.5])
    gold = np.array([0.0, 0.0, 1.0, 0.0])  # the confident PASS outputs are both gold FAIL
    values, level = np.unique(scores, return_inverse=True)
    for floor, unbiased in ((0.0, False), (1e-3, True), (0.1, True)):
        q = draw_probabilities(
            counts=np.bincount(level)[None, :].astype(float), weights=uncertainty(values), floor=floor
        )
        q_i = q[0, level]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = scores.mean() + np.where(q_i > 0, (gold - scores) / (4 * q_i), 0.0)
        mean = float((q_i * z).sum())
        assert (abs(mean - gold.mean()) < 1e-12) == unbiased, (floor, mean)


# --- Known truth ---------------------------------------------------------------------------------


def _population(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """400 outputs: a jury's mean score of three judges (correlation about 0.3, 0.5 and 0.7 with gold) on 300, and
    a stratum of 100 where every judge says PASS (score 1, the most confident) and 60 of them are gold FAIL: the
    judge confidently wrong where the design samples least."""
    n = 300
    y = (rng.random(n) < 0.75).astype(float)
    judges = np.column_stack(
        [(rng.random(n) < np.where(y == 1, 0.7 + 0.3 * p, 0.7 * (1 - p))) for p in (0.3, 0.5, 0.7)]
    )
    scores = np.r_[judges.mean(axis=1), np.ones(100)]
    gold = np.r_[y, np.zeros(60), np.ones(40)]
    return gold, scores


def _orders(gold, scores, floor, rng, S=500):
    return simulate_orders(gold=gold, scores=scores, floor=floor, orders=S, rng=rng)


@pytest.mark.parametrize("floor", [0.1, 0.5, FLOOR])
def test_known_truth_wrong_decisions_stay_within_the_level(floor):
    rng = np.random.default_rng(38)
    gold, scores = _population(rng)
    theta = gold.mean()
    ys, fs = _orders(gold, scores, floor, rng)
    for distance in (0.02, 0.05, 0.10):
        for sign in (-1, 1):
            minimum = theta + sign * distance
            d = unsure_decide_each_label(
                gold=ys, f=fs, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD, floor=floor
            )
            right = PASS if theta >= minimum else FAIL
            wrong = float(((d.decided != "") & (d.decided != right)).mean())
            assert wrong <= 0.025, (floor, minimum, wrong)
            if distance == 0.10:
                assert (d.decided == right).mean() > 0.9  # it decides, and rightly


def test_known_truth_without_the_weights_errs_more_than_the_level():
    # The negative control: the uniform test read along the unsure draws, which under-sample the confidently wrong
    # stratum, passes a minimum above the truth far more often than 2.5%.
    rng = np.random.default_rng(38)
    gold, scores = _population(rng)
    theta = gold.mean()
    ys, fs = _orders(gold, scores, 0.1, rng)
    d = decide_each_label(gold=ys, f=fs, minimum=theta + 0.05, confidence=0.95, min_gold=MIN_GOLD)
    assert float((d.decided == PASS).mean()) > 0.10


def test_a_floor_near_zero_costs_labels():
    # The floor's other edge: a tiny floor keeps validity, but while unsure outputs remain a confident output's
    # weight 1 / floor caps every bet near zero: the unsure outputs, drawn first, are labeled for almost no evidence,
    # and the audit decides only after it has labeled nearly all of them.
    rng = np.random.default_rng(5)
    gold, scores = _population(rng)
    theta = gold.mean()
    unsure = int((uncertainty(scores) > 0).sum())
    ys, fs = _orders(gold, scores, 1e-3, rng, S=100)
    d = unsure_decide_each_label(gold=ys, f=fs, minimum=theta - 0.10, confidence=0.95, min_gold=MIN_GOLD, floor=1e-3)
    assert np.median(np.abs(d.log_k_pass[:, unsure // 2 - 1])) < 0.05  # half the unsure outputs labeled: no evidence
    assert np.median(np.where(d.at > 0, d.at, gold.size)) > 0.9 * unsure
    # The floor at its other edge, 1 (the uniform order), decides on the same population with fewer labels.
    ys, fs = _orders(gold, scores, 1.0, rng, S=100)
    u = unsure_decide_each_label(gold=ys, f=fs, minimum=theta - 0.10, confidence=0.95, min_gold=MIN_GOLD, floor=1.0)
    assert np.median(np.where(u.at > 0, u.at, gold.size)) < 0.8 * np.median(np.where(d.at > 0, d.at, gold.size))


def test_the_decision_on_one_plan_reads_its_bounds_and_estimate():
    rng = np.random.default_rng(7)
    gold, scores = _population(rng)
    order = draw_order(scores=scores, seed=11)
    labeled = gold[order][:250]
    d = unsure_decision(gold=labeled, scores=scores[order], minimum=gold.mean() - 0.15)
    assert d.decided == PASS and d.n_labeled == 250
    assert d.lower <= gold.mean() <= d.upper
    assert d.estimate.estimate == pytest.approx(gold.mean(), abs=0.1)
    # The labels draw by draw give the same first decision.
    each = unsure_decide_each_label(
        gold=labeled[None, :], f=scores[order], minimum=gold.mean() - 0.15, confidence=0.95, min_gold=MIN_GOLD
    )
    assert each.at[0] == d.decided_at


def test_draw_levels_samples_a_level_with_its_share_of_the_probability():
    # One draw from counts (3 unsure, 7 confident), floor 0.3: the unsure level with 3 * (0.03 + 0.7 / 1.5)
    # = 3 * 0.49667 = 0.49 of the time.
    values = np.array([0.5, 1.0])
    seq = draw_levels(counts=np.array([3, 7]), values=values, floor=0.3, rng=np.random.default_rng(0), S=20_000)
    share = float((seq[:, 0] == 0).mean())
    assert share == pytest.approx(3 * (0.3 / 10 + 0.7 * 0.5 / 1.5), abs=0.015)


def test_draw_order_draws_each_order_with_its_probability():
    # Three outputs scored 1/2, 1 and 0, floor 0.4: every order's chance by hand from q_t, against 6,000 seeds.
    scores = np.array([0.5, 1.0, 0.0])
    perms, prob = _every_sequence(scores, 0.4)
    # The unsure output first: 0.4/3 + 0.6 = 0.7333; then uniform over the two confident ones (W = 0).
    assert prob[[k for k, p in enumerate(perms) if p[0] == 0]].sum() == pytest.approx(0.4 / 3 + 0.6)
    seen = {tuple(p): 0 for p in perms}
    for seed in range(6000):
        seen[tuple(draw_order(scores=scores, floor=0.4, seed=seed))] += 1
    for k, p in enumerate(perms):
        assert seen[tuple(p)] / 6000 == pytest.approx(prob[k], abs=0.02)
