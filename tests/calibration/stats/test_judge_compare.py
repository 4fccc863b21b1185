"""Two judge versions on the same gold items (calibration/stats/judge_compare.py), with hand-worked numbers,
scikit-learn's and statsmodels' as references, and a simulation with known truth. No database."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from calibration.stats.judge_compare import (
    A_ERROR,
    A_OTHER,
    B_ERROR,
    B_OTHER,
    BROKEN,
    FIXED,
    NO_GOLD,
    compare_judges,
    mcnemar_exact,
    paired_delta_kappa_ci,
)

P, F = "PASS", "FAIL"

# (output, gold, A, B): ten compared items, worked by hand below.
TEN = [
    (1, P, P, P),
    (2, P, P, P),
    (3, P, P, F),  # broken (a new false fail)
    (4, P, F, P),  # fixed (a false fail)
    (5, F, F, F),
    (6, F, F, F),
    (7, F, P, F),  # fixed false pass
    (8, F, P, F),  # fixed false pass
    (9, F, P, P),  # both wrong
    (10, F, F, P),  # broken: a new false pass
]
# Left out, one per reason.
LEFT_OUT = [
    (11, P, "ERROR", P),
    (12, F, F, "ERROR"),
    (13, None, P, P),
    (14, F, "ABSTAIN", F),
    (15, P, P, ""),
]


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["output", "gold", "a", "b"])


def test_kappa_tpr_tnr_of_each_version_are_the_hand_worked_ones():
    c = compare_judges(frame(TEN + LEFT_OUT))
    # A: tp 3, fn 1, fp 3, tn 3; po 0.6, pe 0.6*0.4 + 0.4*0.6 = 0.48, kappa 0.12/0.52 = 3/13.
    # B: tp 3, fn 1, fp 2, tn 4; po 0.7, pe 0.5*0.4 + 0.5*0.6 = 0.50, kappa 0.2/0.5 = 0.4.
    assert c.n == 10
    assert (c.a.true_pass, c.a.false_pass, c.a.false_fail, c.a.true_fail) == (3, 3, 1, 3)
    assert (c.b.true_pass, c.b.false_pass, c.b.false_fail, c.b.true_fail) == (3, 2, 1, 4)
    assert c.a.kappa == pytest.approx(3 / 13)
    assert c.b.kappa == pytest.approx(0.4)
    assert c.delta_kappa == pytest.approx(0.4 - 3 / 13)  # 11/65
    assert (c.a_rates.tpr, c.a_rates.tnr) == (pytest.approx(0.75), pytest.approx(0.5))
    assert (c.b_rates.tpr, c.b_rates.tnr) == (pytest.approx(0.75), pytest.approx(4 / 6))
    # Wilson 3 of 4 at 95%, by the formula: centre (p + z²/2n)/(1 + z²/n), half z·sqrt(p(1-p)/n + z²/4n²)/(1 + z²/n).
    assert c.a_rates.tpr_ci == pytest.approx((0.30064, 0.95441), abs=1e-4)


def test_kappas_agree_with_scikit_learn_on_the_raw_items():
    c = compare_judges(frame(TEN))
    gold = [r[1] for r in TEN]
    assert c.a.kappa == pytest.approx(cohen_kappa_score(gold, [r[2] for r in TEN], labels=[P, F]))
    assert c.b.kappa == pytest.approx(cohen_kappa_score(gold, [r[3] for r in TEN], labels=[P, F]))


def test_error_and_other_verdicts_are_left_out_pairwise_and_counted_never_as_fail():
    c = compare_judges(frame(TEN + LEFT_OUT))
    assert c.excluded == {A_ERROR: 1, B_ERROR: 1, NO_GOLD: 1, A_OTHER: 1, B_OTHER: 1}
    assert c.errors == (1, 1)
    # Negative control: read as FAIL, A's ERROR on a gold PASS item would be an eleventh item and a false fail.
    as_fail = compare_judges(frame(TEN + [(11, P, F, P)]))
    assert as_fail.n == 11 and as_fail.a.kappa != pytest.approx(3 / 13)
    assert compare_judges(frame(TEN + LEFT_OUT)).a.kappa == pytest.approx(3 / 13)


def test_flips_are_fixed_and_broken_with_false_passes_first():
    c = compare_judges(frame(TEN))
    assert [(f.output, f.kind) for f in c.flips] == [(7, FIXED), (8, FIXED), (10, BROKEN), (4, FIXED), (3, BROKEN)]
    assert [f.output for f in c.flips if f.false_pass] == [7, 8, 10]
    assert [f.output for f in c.fixed] == [7, 8, 4] and [f.output for f in c.broken] == [10, 3]
    # Items both got right or both got wrong (9) never flip.
    assert 9 not in {f.output for f in c.flips}


def test_mcnemar_counts_and_exact_p_value_are_the_hand_worked_ones():
    c = compare_judges(frame(TEN))
    m = c.mcnemar
    assert (m.both_right, m.broken, m.fixed, m.both_wrong) == (4, 2, 3, 1)
    # Exact: 2 * P(X <= 2), X ~ Bin(5, 1/2) = 2 * (1 + 5 + 10) / 32 = 1.0.
    assert m.p_value == pytest.approx(1.0)


def test_mcnemar_exact_on_a_small_table_worked_by_hand():
    # 1 broken, 6 fixed: 2 * P(X <= 1), X ~ Bin(7, 1/2) = 2 * (1 + 7) / 128 = 0.125.
    assert mcnemar_exact(both_right=5, broken=1, fixed=6, both_wrong=3).p_value == pytest.approx(0.125)
    # 0 broken, 8 fixed: 2 / 256.
    assert mcnemar_exact(both_right=0, broken=0, fixed=8, both_wrong=0).p_value == pytest.approx(2 / 256)
    # Negative control: the concordant cells do not move it.
    assert mcnemar_exact(both_right=500, broken=1, fixed=6, both_wrong=90).p_value == pytest.approx(0.125)
    # No discordant item: nothing to test.
    assert mcnemar_exact(both_right=5, broken=0, fixed=0, both_wrong=2).p_value == 1.0


def test_the_paired_bootstrap_interval_holds_the_hand_delta():
    c = compare_judges(frame(TEN * 10))  # the same ten items, 100 of them: the same kappas
    assert c.delta_kappa == pytest.approx(11 / 65)
    low, high = c.delta_kappa_ci
    assert low < 11 / 65 < high
    assert high - low > 0.05  # not degenerate: the versions differ on 50 of 100 items


def test_the_interval_is_degenerate_at_zero_when_the_versions_agree_on_every_item():
    same = [(o, g, a, a) for o, g, a, _ in TEN * 10]
    c = compare_judges(frame(same))
    assert c.delta_kappa == 0.0
    assert c.delta_kappa_ci == (0.0, 0.0)
    assert c.flips == () and c.mcnemar.p_value == 1.0


def test_the_interval_is_seeded_and_stable():
    gold, a, b = (np.array([r[i] for r in TEN * 5], dtype=object) for i in (1, 2, 3))
    assert paired_delta_kappa_ci(gold, a, b) == paired_delta_kappa_ci(gold, a, b)
    assert paired_delta_kappa_ci(gold, a, b, seed=1) != paired_delta_kappa_ci(gold, a, b, seed=2)


def test_no_compared_item_gives_no_figures():
    c = compare_judges(frame(LEFT_OUT))
    assert c.n == 0 and c.a.kappa is None and c.delta_kappa is None and c.delta_kappa_ci is None


def simulate(seed: int, runs: int, error_a: float, error_b: float, n: int = 150):
    """Comparisons of two judges that err independently on each item with these rates (gold 40% PASS)."""
    rng = np.random.default_rng(seed)
    other = {P: F, F: P}
    for _ in range(runs):
        gold = np.where(rng.random(n) < 0.4, P, F)
        a = np.array([other[g] if rng.random() < error_a else g for g in gold], dtype=object)
        b = np.array([other[g] if rng.random() < error_b else g for g in gold], dtype=object)
        yield compare_judges(frame(list(zip(range(n), gold, a, b, strict=True))), replicates=500)


@pytest.mark.slow
def test_by_simulation_the_interval_covers_the_true_delta_of_two_equally_good_judges():
    # Known truth: A and B err independently with the same rates, so their population kappas are equal
    # and the true delta is 0. About 95% of intervals should hold 0, and McNemar should reject at 5% at most
    # about 5% of the time (the exact test is conservative).
    results = list(simulate(7, 200, 0.15, 0.15))
    covered = sum(c.delta_kappa_ci[0] <= 0.0 <= c.delta_kappa_ci[1] for c in results)
    rejected = sum(c.mcnemar.p_value < 0.05 for c in results)
    assert 0.88 <= covered / len(results) <= 1.0
    assert rejected / len(results) <= 0.09


@pytest.mark.slow
def test_by_simulation_a_much_better_version_is_told_apart():
    # Negative control for the one above: B errs on 5% of items, A on 30%: intervals sit above 0 and
    # McNemar rejects nearly always.
    results = list(simulate(8, 50, 0.30, 0.05))
    assert sum(c.delta_kappa_ci[0] > 0 for c in results) / len(results) >= 0.95
    assert sum(c.mcnemar.p_value < 0.05 for c in results) / len(results) >= 0.95


def test_wilson_reference():
    # The hand value above, from statsmodels too.
    low, high = proportion_confint(3, 4, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx((0.30064, 0.95441), abs=1e-4)
