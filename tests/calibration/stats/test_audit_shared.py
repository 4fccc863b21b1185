"""One audit sample for every gating criterion (calibration/stats/audit_shared.py): pure, no database.

Hand-worked levels and conjunctions; the single criterion equal to today's decision (audit_stats, strata_plan);
exact enumeration of every order of a tiny candidate of two criteria; validity by simulation with known truth (two
and three criteria, correlated and independent, thresholds near the truth on both sides, uniform and stratified);
and negative controls: FAIL tests at alpha each fail the release too often, a batch choice that peeks at the
gold of unlabeled outputs is wrong too often, and a predictable allocation by one criterion's strata breaks another
criterion's test.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from calibration.stats.audit_shared import (
    STRATIFIED,
    UNIFORM,
    CriterionAudit,
    conjunction,
    criterion_first_decision,
    fail_confidence,
    next_release,
    release_decisions_each_order,
    shared_decision,
    side_levels,
)
from calibration.stats.audit_stats import FAIL, MIN_GOLD, NOT_APPLICABLE, PASS, audit_decision, judge_scores
from calibration.stats.audit_strata import strata_of
from calibration.stats.shared_population import SharedPopulation, shared_population
from calibration.stats.strata_plan import stratified_decision

# --- The levels and the conjunction, by hand ----------------------------------------------------------------------


def test_the_pass_side_keeps_alpha_and_the_fail_side_splits_it_over_the_criteria():
    assert side_levels(confidence=0.95, k=1) == pytest.approx((0.025, 0.025))
    assert side_levels(confidence=0.95, k=3) == pytest.approx((0.025, 0.025 / 3))
    # The FAIL test at alpha / 3 is a single-criterion test at confidence 1 - 0.05 / 3.
    assert fail_confidence(confidence=0.95, k=3) == pytest.approx(1 - 0.05 / 3)
    assert fail_confidence(confidence=0.95, k=1) == pytest.approx(0.95)
    with pytest.raises(ValueError, match="at least one criterion"):
        side_levels(confidence=0.95, k=0)
    with pytest.raises(ValueError, match="confidence"):
        side_levels(confidence=1.0, k=2)


def test_the_release_fails_at_the_first_fail_and_passes_at_the_last_pass():
    decided = np.array([[PASS, PASS, PASS, "", FAIL], [PASS, FAIL, "", "", PASS], [PASS, PASS, PASS, PASS, ""]])
    at = np.array([[40, 30, 20, -1, 90], [60, 50, -1, -1, 10], [25, 70, 30, 30, -1]])
    release, release_at = conjunction(decided.astype(object), at)
    # every PASS: at the last (60); a FAIL at 50 though another passed at 70; undecided while one is; FAIL at 90.
    assert list(release) == [PASS, FAIL, "", "", FAIL]
    assert list(release_at) == [60, 50, -1, -1, 90]


def test_the_next_batch_is_the_orders_next_positions_whatever_the_labels():
    assert list(next_release(released=0, N=10, k=4)) == [0, 1, 2, 3]
    assert list(next_release(released=8, N=10, k=4)) == [8, 9]
    assert list(next_release(released=10, N=10, k=4)) == []
    with pytest.raises(ValueError, match="cannot release"):
        next_release(released=11, N=10, k=1)


def test_bad_input_is_refused_with_a_clear_error():
    ok = CriterionAudit(key="a", verdicts=[1, 0, 1], gold=[1], minimum=0.5)
    with pytest.raises(ValueError, match="at least one criterion"):
        shared_decision(criteria=[])
    with pytest.raises(ValueError, match="each criterion once"):
        shared_decision(criteria=[ok, ok])
    with pytest.raises(ValueError, match="same order"):
        shared_decision(criteria=[ok, CriterionAudit(key="b", verdicts=[1, 0], gold=[], minimum=0.5)])
    with pytest.raises(ValueError, match="design"):
        shared_decision(criteria=[CriterionAudit(key="a", verdicts=[1, 0], gold=[], minimum=0.5, design="x")])
    with pytest.raises(ValueError, match="minimum"):
        shared_decision(criteria=[CriterionAudit(key="a", verdicts=[1, 0], gold=[], minimum=1.5)])
    with pytest.raises(ValueError, match="gold"):
        shared_decision(criteria=[CriterionAudit(key="a", verdicts=[1, 0], gold=[1, 1, 1], minimum=0.5)])


# --- One criterion: today's decision ------------------------------------------------------------------------------


def _random_candidate(rng: np.random.Generator, N: int) -> tuple[list, list]:
    verdicts = [None if rng.random() < 0.05 else float(rng.random() < 0.7) for _ in range(N)]
    n = int(rng.integers(0, N + 1))
    draws = rng.random(n)
    gold = np.where(draws < 0.68, 1.0, 0.0)
    gold[draws > 0.97] = np.nan  # pending
    gold[(draws > 0.94) & (draws <= 0.97)] = NOT_APPLICABLE
    return verdicts, [None if np.isnan(g) else float(g) for g in gold]


@pytest.mark.parametrize("seed", range(8))
def test_a_single_uniform_criterion_decides_as_today(seed):
    rng = np.random.default_rng(seed)
    verdicts, gold = _random_candidate(rng, int(rng.integers(30, 300)))
    minimum = float(rng.choice([0.5, 0.6, 0.65, 0.7, 0.8]))
    today = audit_decision(gold=gold, verdicts=verdicts, minimum=minimum, confidence=0.95)
    shared = shared_decision(criteria=[CriterionAudit("a", verdicts, gold, minimum)], confidence=0.95)
    got = shared.criteria[0].decision
    assert (got.decided, got.decided_at, got.decided_by) == (today.decided, today.decided_at, today.decided_by)
    assert got.lower == pytest.approx(today.lower, abs=1e-9) and got.upper == pytest.approx(today.upper, abs=1e-9)
    assert (shared.decided, shared.decided_at) == (today.decided, today.decided_at)
    assert got.evidence_pass == today.evidence_pass and got.evidence_fail == today.evidence_fail


@pytest.mark.parametrize("seed", range(6))
def test_a_single_stratified_criterion_decides_as_today(seed):
    rng = np.random.default_rng(100 + seed)
    verdicts, gold = _random_candidate(rng, int(rng.integers(30, 200)))
    minimum = float(rng.choice([0.5, 0.6, 0.65, 0.7]))
    strata = strata_of(verdicts)
    sizes = (int(np.sum(strata == 0)), int(np.sum(strata == 1)))
    today = stratified_decision(gold=gold, path=strata[: len(gold)], sizes=sizes, minimum=minimum)
    shared = shared_decision(criteria=[CriterionAudit("a", verdicts, gold, minimum, design=STRATIFIED)])
    got = shared.criteria[0].decision
    assert (got.decided, got.decided_at, got.decided_by) == (today.decided, today.decided_at, today.decided_by)
    assert got.lower == pytest.approx(today.lower, abs=1e-9) and got.upper == pytest.approx(today.upper, abs=1e-9)


@pytest.mark.parametrize(
    ("minimums", "expected"),
    [
        # theta 0.7, 0.8, 0.6 after 150 of 300 labels: the first two pass (labels 77 and 88), the third, 0.02 above
        # its truth, is still open, so the release is undecided and says which criterion holds it.
        ((0.6, 0.72, 0.62), ([PASS, PASS, None], None, None, (), ("2",))),
        # the third 0.08 above its truth fails at label 131, and that fails the release, naming it.
        ((0.6, 0.72, 0.68), ([PASS, PASS, FAIL], FAIL, 131, ("2",), ())),
    ],
)
def test_with_three_criteria_the_pass_side_is_todays_and_the_fail_side_reads_alpha_over_three(minimums, expected):
    pop = shared_population(N=300, thetas=[0.7, 0.8, 0.6], judge_rates=[0.75, 0.8, 0.6], rho=0.5, judge_shared=0.5)
    order = pop.orders(1, 5)[0]
    criteria = [
        CriterionAudit(str(j), pop.verdicts[j][order], pop.gold[j][order][:150], m) for j, m in enumerate(minimums)
    ]
    shared = shared_decision(criteria=criteria, confidence=0.95)
    high = fail_confidence(confidence=0.95, k=3)
    for c, result in zip(criteria, shared.criteria, strict=True):
        alone = audit_decision(gold=c.gold, verdicts=c.verdicts, minimum=c.minimum, confidence=0.95)
        strict = audit_decision(gold=c.gold, verdicts=c.verdicts, minimum=c.minimum, confidence=high)
        assert result.decision.lower == alone.lower and result.decision.upper == strict.upper
        assert result.decision.upper >= alone.upper  # the FAIL side's bound is wider
        assert (result.alpha_pass, result.alpha_fail) == pytest.approx((0.025, 0.025 / 3))
        if result.decision.decided == PASS:
            assert (alone.decided, alone.decided_at) == (PASS, result.decision.decided_at)
        if result.decision.decided == FAIL:
            assert (strict.decided, strict.decided_at) == (FAIL, result.decision.decided_at)
    decided, release, at, deciding, undecided = expected
    assert [r.decision.decided for r in shared.criteria] == decided
    assert (shared.decided, shared.decided_at, shared.deciding, shared.undecided) == (release, at, deciding, undecided)


def test_a_failing_criterion_decides_the_release_and_is_named():
    # 40 outputs; criterion "b" has 20 labeled fails of 40 against a minimum of 0.6: the exact rule fails it at the
    # 17th fail (40 - 17 < 24). Criterion "a" is all passes and the judge agrees.
    verdicts_a = [1.0] * 40
    gold_a = [1.0] * 20
    verdicts_b = [0.0] * 40
    gold_b = [0.0] * 20
    shared = shared_decision(
        criteria=[
            CriterionAudit("a", verdicts_a, gold_a, 0.5, design=UNIFORM),
            CriterionAudit("b", verdicts_b, gold_b, 0.6, design=STRATIFIED),
        ]
    )
    assert (shared.decided, shared.decided_at, shared.deciding) == (FAIL, 17, ("b",))
    assert shared.criteria[1].decision.decided_by == "exact"


# --- Exact enumeration: every order of a candidate of eight outputs, two criteria -------------------------------

EIGHT = {
    # criterion: gold, verdicts (in output order; one order shared by both)
    "a": (np.array([1, 1, 1, 1, 0, 0, 0, 0.0]), np.array([1, 1, 1, 0, 1, 0, 0, 0.0])),
    "b": (np.array([1, 0, 1, 0, 1, 0, 1, 0.0]), np.array([1, 0, 1, 0, 0, 1, 1, 0.0])),
}


@pytest.mark.parametrize("confidence", [0.5, 0.8])
def test_wrong_release_decisions_by_exact_enumeration_of_all_orders_of_eight(confidence):
    perm = np.array(list(itertools.permutations(range(8))))  # 40,320 orders, each equally likely
    golds = [EIGHT[c][0][perm] for c in "ab"]
    scores = [judge_scores(verdicts=EIGHT[c][1])[perm] for c in "ab"]
    alpha = (1 - confidence) / 2
    # theta_a = theta_b = 0.5. Wrong PASS: a's minimum 5/8 above its truth, b's 2/8 well below (b passes easily).
    wrong_pass = release_decisions_each_order(
        golds=golds, scores=scores, minimums=[5 / 8, 2 / 8], confidence=confidence, min_gold=1
    )
    assert (wrong_pass.decided == PASS).mean() <= alpha
    # Wrong FAIL: both at their boundary (theta = minimum: the release meets every minimum).
    wrong_fail = release_decisions_each_order(
        golds=golds, scores=scores, minimums=[4 / 8, 4 / 8], confidence=confidence, min_gold=1
    )
    assert (wrong_fail.decided == FAIL).mean() <= alpha
    # Not vacuous: where the release deserves to pass it passes in some orders, and criterion a's wrong PASSes are
    # the release's (b passes wherever a does).
    assert (wrong_fail.decided == PASS).mean() > 0
    assert (wrong_pass.criteria_decided[0] == PASS).mean() == pytest.approx((wrong_pass.decided == PASS).mean())


# --- Validity by simulation with known truth ----------------------------------------------------------------------

ORDERS = 500
THETAS = (0.7, 0.8, 0.6)
RATES = (0.75, 0.8, 0.6)


def _population(k: int, correlated: bool) -> SharedPopulation:
    # correlated: the criteria's gold correlated (rho 0.9) and the judges' errors shared (0.7); independent: neither.
    return shared_population(
        N=400,
        thetas=THETAS[:k],
        judge_rates=RATES[:k],
        rho=0.9 if correlated else 0.0,
        judge_shared=0.7 if correlated else 0.0,
        seed=7,
    )


@pytest.fixture(
    scope="module",
    params=[(2, False), (2, True), (3, False), (3, True)],
    ids=lambda p: f"k{p[0]}-{'corr' if p[1] else 'indep'}",
)
def simulated(request):
    k, correlated = request.param
    pop = _population(k, correlated)
    if correlated:
        assert pop.gold_correlation() > 0.4
    else:
        assert abs(pop.gold_correlation()) < 0.15
    perm = pop.orders(ORDERS, seed=17)
    golds = [g[perm] for g in pop.gold]
    scores = [judge_scores(verdicts=v)[perm] for v in pop.verdicts]
    return k, golds, scores


@pytest.mark.slow
@pytest.mark.parametrize("distance", [0.01, 0.03])
def test_a_wrong_pass_stays_below_alpha_with_one_criterion_just_below_its_minimum(simulated, distance):
    k, golds, scores = simulated
    # Criterion 0's minimum just above its truth; the others 0.05 below theirs (they pass: the release's PASS then
    # rests on criterion 0's test alone, the hardest case for the PASS side).
    minimums = [THETAS[0] + distance, *(t - 0.05 for t in THETAS[1:k])]
    r = release_decisions_each_order(golds=golds, scores=scores, minimums=minimums, confidence=0.95)
    assert (r.decided == PASS).mean() <= 0.025
    assert (r.criteria_decided[1] == PASS).mean() > 0.9  # not vacuous: the others do pass


@pytest.mark.slow
def test_a_wrong_pass_stays_below_alpha_with_every_criterion_just_below_its_minimum(simulated):
    k, golds, scores = simulated
    r = release_decisions_each_order(
        golds=golds, scores=scores, minimums=[t + 0.01 for t in THETAS[:k]], confidence=0.95
    )
    assert (r.decided == PASS).mean() <= 0.025


@pytest.mark.slow
@pytest.mark.parametrize("distance", [0.0, 0.02])
def test_a_wrong_fail_stays_below_alpha_with_every_criterion_at_or_above_its_minimum(simulated, distance):
    k, golds, scores = simulated
    r = release_decisions_each_order(
        golds=golds, scores=scores, minimums=[t - distance for t in THETAS[:k]], confidence=0.95
    )
    assert (r.decided == FAIL).mean() <= 0.025
    assert (r.decided == PASS).mean() >= 0.9  # and the release does pass


@pytest.mark.slow
def test_fail_tests_at_alpha_each_fail_a_good_release_too_often_negative_control():
    # Three independent criteria, each at its boundary (the release meets every minimum): each FAIL test at alpha
    # (what k separate plans do today) fails the release more often than alpha; at alpha / 3 it does not.
    pop = _population(3, correlated=False)
    perm = pop.orders(1000, seed=23)
    golds = [g[perm] for g in pop.gold]
    scores = [judge_scores(verdicts=v)[perm] for v in pop.verdicts]
    for confidence in (0.8, 0.95):
        alpha = (1 - confidence) / 2
        common = {"golds": golds, "scores": scores, "minimums": list(THETAS), "confidence": confidence}
        each = release_decisions_each_order(**common, union_bound=False)
        split = release_decisions_each_order(**common)
        assert (each.decided == FAIL).mean() > alpha
        assert (split.decided == FAIL).mean() <= alpha


@pytest.mark.slow
def test_a_batch_choice_that_peeks_at_unlabeled_gold_is_wrong_too_often_negative_control():
    # The "choice": the next batch skips, with chance 0.3, an output whose gold on criterion 0 (not given yet) is FAIL,
    # leaving it for the end, as a batch of "the outputs most likely to pass" would. Criterion 0's minimum 0.03 above
    # its truth: the release now passes far more often than alpha; the same orders without the peek stay within it.
    pop = _population(2, correlated=False)
    perm = pop.orders(ORDERS, seed=31)
    held_back = (pop.gold[0][perm] == 0) & (np.random.default_rng(5).random(perm.shape) < 0.3)
    peeked = np.take_along_axis(perm, np.argsort(held_back, axis=1, kind="stable"), axis=1)
    minimums = [THETAS[0] + 0.03, THETAS[1] - 0.05]
    rates = []
    for order in (perm, peeked):
        golds = [g[order] for g in pop.gold]
        scores = [judge_scores(verdicts=v)[order] for v in pop.verdicts]
        rates.append(
            (
                release_decisions_each_order(golds=golds, scores=scores, minimums=minimums, confidence=0.95).decided
                == PASS
            ).mean()
        )
    assert rates[0] <= 0.025 < rates[1]


@pytest.mark.slow
def test_a_predictable_allocation_by_one_criterions_strata_breaks_the_others_test_negative_control():
    # The allocation a lead might want: criterion 0's judge-PASS outputs first (in the order), then the rest. It
    # reads no label (predictable), yet criterion 1, whose gold goes with criterion 0's verdicts, is no longer
    # labeled in a uniform order: its uniform test passes a minimum 0.03 above its truth far more often than alpha.
    pop = _population(2, correlated=True)
    perm = pop.orders(ORDERS, seed=37)
    first = pop.verdicts[0][perm] == 1
    allocated = np.take_along_axis(perm, np.argsort(~first, axis=1, kind="stable"), axis=1)
    minimums = [THETAS[0] - 0.05, THETAS[1] + 0.03]
    rates = []
    for order in (perm, allocated):
        golds = [g[order] for g in pop.gold]
        scores = [judge_scores(verdicts=v)[order] for v in pop.verdicts]
        r = release_decisions_each_order(golds=golds, scores=scores, minimums=minimums, confidence=0.95)
        rates.append((r.criteria_decided[1] == PASS).mean())
    assert rates[0] <= 0.025 < rates[1]


@pytest.mark.slow
@pytest.mark.parametrize("side", ["PASS", "FAIL"])
def test_a_stratified_and_a_uniform_criterion_on_one_shared_order_stay_valid(side):
    # Criterion 0 stratified on its own judge's verdicts, criterion 1 uniform; correlated gold and judges; 500 orders
    # of 200 outputs. PASS side: criterion 0's minimum 0.02 above its truth, criterion 1's below. FAIL side: both at
    # their boundary.
    pop = shared_population(N=200, thetas=[0.7, 0.8], judge_rates=[0.75, 0.8], rho=0.9, judge_shared=0.7, seed=3)
    perm = pop.orders(ORDERS, seed=41)
    minimums = [0.72, 0.75] if side == PASS else [0.7, 0.8]
    decided = []
    for j, design in enumerate((STRATIFIED, UNIFORM)):
        if design == UNIFORM:
            d = release_decisions_each_order(
                golds=[pop.gold[j][perm]],
                scores=[judge_scores(verdicts=pop.verdicts[j])[perm]],
                minimums=[minimums[j]],
                confidence=0.95,
                gate_size=2,
            )
            decided.append((d.criteria_decided[0], d.criteria_at[0]))
            continue
        rows = [
            criterion_first_decision(
                CriterionAudit("s", pop.verdicts[j][p], pop.gold[j][p], minimums[j], design=STRATIFIED),
                confidence=0.95,
                k=2,
                min_gold=MIN_GOLD,
            )
            for p in perm
        ]
        decided.append((np.array([x.decided[0] for x in rows], dtype=object), np.array([x.at[0] for x in rows])))
    release, _ = conjunction(np.stack([d for d, _ in decided]), np.stack([a for _, a in decided]))
    wrong = PASS if side == PASS else FAIL
    assert (release == wrong).mean() <= 0.025
    if side == FAIL:
        assert (release == PASS).mean() >= 0.9
