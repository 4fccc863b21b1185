"""What the candidate's own gold says (issue 40): the gold's bound and the transport test, by hand, against reference
implementations, and by simulation with known truth. Pure: no database."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, fisher_exact

from calibration.stats.candidate_evidence import (
    AUDIT_ORDER,
    CENSUS,
    NOT_KNOWN_RANDOM,
    drop_power,
    gold_bound,
    hypergeometric_interval,
    transport_test,
)

# -- the gold's bound ---------------------------------------------------------------------------------------


def test_the_exact_interval_by_hand_on_ten_outputs():
    # 1 PASS in a random sample of 5 of 10 outputs, 95%: P(X <= 1 | M) = [C(M,0)C(10-M,5) + C(M,1)C(10-M,4)] / 252.
    #   M = 6: 0 + 6 * C(4,4) = 6 -> 6 / 252 = 0.0238 <= 0.025, rejected;
    #   M = 5: C(5,5) + 5 * C(5,4) = 26 -> 0.103, kept.
    # The upper end is 5 / 10. P(X >= 1 | M = 1) = 1 - C(9,5) / 252 = 0.5 > 0.025: the lower end is 1 / 10.
    assert hypergeometric_interval(1, 4, 10, 0.95) == (0.1, 0.5)


def test_a_census_is_the_rate_itself():
    # The issue's FaithBench candidate: gold on all 350 outputs, 0.409 of them PASS; no sampling is left.
    assert hypergeometric_interval(143, 207, 350, 0.95) == (143 / 350, 143 / 350)
    bound = gold_bound(passes=143, fails=207, unknown=0, confidence=0.95)
    assert bound.sample == CENSUS and bound.worst_case_upper == 143 / 350
    assert bound.refutes(0.45) and not bound.refutes(0.40)


def test_on_a_large_population_the_interval_is_clopper_pearson():
    # Reference: without replacement from a population far larger than the sample, the exact interval tends to
    # Clopper-Pearson's beta quantiles.
    lower, upper = hypergeometric_interval(40, 60, 1_000_000, 0.95)
    assert lower == pytest.approx(beta.ppf(0.025, 40, 61), abs=2e-5)
    assert upper == pytest.approx(beta.ppf(0.975, 41, 60), abs=2e-5)


def test_garbage_counts_are_refused():
    with pytest.raises(ValueError, match="passes \\+ fails <= population"):
        hypergeometric_interval(8, 4, 10, 0.95)
    with pytest.raises(ValueError, match="confidence"):
        hypergeometric_interval(1, 1, 10, 1.0)


def test_the_worst_case_bound_assumes_nothing_and_the_exact_one_is_only_if_random():
    # 20 of 400 outputs labeled, all FAIL: if random, the pass rate is surely under 0.45; but the other 380 could all
    # pass (a labeler who went looking for failures), so the worst case is 380 / 400 = 0.95.
    bound = gold_bound(passes=0, fails=20, unknown=380, confidence=0.95)
    assert bound.sample == NOT_KNOWN_RANDOM and bound.worst_case_upper == 0.95
    assert not bound.refutes(0.45) and bound.would_refute_if_random(0.45)
    # 300 of 400 labeled, 100 PASS: even if the other 100 pass, at most 200 / 400 = 0.5 < 0.6.
    assert gold_bound(passes=100, fails=200, unknown=100, confidence=0.95).refutes(0.6)
    # An audit's order is random: its interval refutes by itself.
    audit = gold_bound(passes=0, fails=20, unknown=380, confidence=0.95, audit=(0.0, 0.3))
    assert audit.sample == AUDIT_ORDER and audit.refutes(0.45) and not audit.would_refute_if_random(0.45)


def test_no_gold_bounds_nothing():
    bound = gold_bound(passes=0, fails=0, unknown=50, confidence=0.95)
    assert bound.upper is None and not bound.refutes(0.99) and not bound.would_refute_if_random(0.99)


@pytest.mark.slow
def test_the_exact_upper_end_holds_the_truth_as_often_as_it_says_by_simulation():
    # Known truth: 200 outputs of which 90 pass; 2,000 random samples of 40 without replacement. The upper end of
    # the two-sided 95% interval may miss at most 2.5% of the time (it is exact, so at most, not about).
    rng = np.random.default_rng(40)
    population = np.array([1] * 90 + [0] * 110)
    misses = 0
    for _ in range(2000):
        sample = rng.choice(population, size=40, replace=False)
        passes = int(sample.sum())
        _, upper = hypergeometric_interval(passes, 40 - passes, 200, 0.95)
        misses += upper < 90 / 200
    assert misses / 2000 <= 0.025
    # Negative control: the same samples read as if drawn from an infinite population at 90% (a narrower, wrong
    # interval: Wald at z = 1.28) miss far more often than 2.5%.
    wald_misses = 0
    for _ in range(2000):
        p = rng.choice(population, size=40, replace=False).mean()
        wald_misses += p + 1.2816 * np.sqrt(p * (1 - p) / 40) < 90 / 200
    assert wald_misses / 2000 > 0.05


# -- the transport test -------------------------------------------------------------------------------------


def test_fishers_p_by_hand():
    # Calibration: 3 of 3 failures caught; candidate: 0 of 3. The hypergeometric probability of this table with its
    # margins is 1 / C(6, 3) = 1 / 20; the only table as extreme is its mirror: p = 2 / 20 = 0.1.
    check = transport_test(calibration=(0, 0, 0, 3), candidate=(0, 3, 0, 0), level=0.05)
    assert check.tnr.p_value == pytest.approx(0.1)
    assert check.tnr.p_value == pytest.approx(fisher_exact([[3, 0], [0, 3]])[1])
    assert not check.tnr.moved  # 0.1 is above the rate's level 0.025
    assert check.tpr.p_value is None and not check.tpr.moved  # no gold PASS on either side: nothing to compare


def test_the_issues_faithbench_numbers_warn_where_overlapping_intervals_did_not():
    # The issue: TNR [0.179, 0.287] on the calibration against [0.091, 0.183] on the candidate, overlapping by 0.004,
    # so the old check stayed silent. Counts with those intervals: 57 of 250 (0.228) and 27 of 207 (0.130).
    check = transport_test(calibration=(900, 193, 100, 57), candidate=(129, 180, 14, 27), level=0.05)
    assert check.tnr.calibration == pytest.approx(0.228) and check.tnr.candidate == pytest.approx(0.1304, abs=1e-4)
    assert check.tnr.p_value == pytest.approx(fisher_exact([[57, 193], [27, 180]])[1])
    assert check.tnr.p_value < 0.025 and check.tnr.moved and not check.tpr.moved
    assert check.warning.startswith("the judge's errors moved")
    assert "TNR 0.228 on the calibration, 0.130" in check.warning


def test_a_level_outside_zero_and_one_is_refused():
    with pytest.raises(ValueError, match="level"):
        transport_test(calibration=(1, 1, 1, 1), candidate=(1, 1, 1, 1), level=0)


def test_too_little_gold_says_no_warning_means_little():
    # 10 gold FAIL outputs: a TNR drop of 0.10 from 0.80 is caught rarely; the answer says so.
    check = transport_test(calibration=(90, 20, 10, 80), candidate=(20, 2, 2, 8), level=0.05)
    assert check.warning is None
    assert check.too_little_gold and "with 10 gold FAIL outputs a TNR drop of 0.10 would be caught about" in (
        check.too_little_gold
    )
    # Plenty of gold of both kinds: "no warning" is worth something and says how much.
    ample = transport_test(calibration=(900, 200, 100, 800), candidate=(900, 200, 100, 800), level=0.05)
    assert ample.warning is None and ample.too_little_gold is None and "at least 80%" in ample.in_words()


@pytest.mark.slow
def test_the_stated_power_is_close_to_fishers_simulated_power():
    # Known truth: the calibration's TNR 0.80 on 500 failures; the candidate's 0.70 on 200. Simulate both samples
    # and Fisher's test at 0.025; the stated power (statsmodels' z-test) is an approximation of this.
    rng = np.random.default_rng(7)
    caught = 0
    for _ in range(1000):
        a, b = rng.binomial(500, 0.80), rng.binomial(200, 0.70)
        caught += fisher_exact([[a, 500 - a], [b, 200 - b]])[1] < 0.025
    stated = drop_power(rate=0.80, calibration_n=500, candidate_n=200, move=0.10, level=0.025)
    assert stated is not None and abs(stated - caught / 1000) < 0.08


def test_with_few_items_the_power_is_fishers_own_summed_exactly():
    # 4 gold FAIL outputs against 60 of 62 caught on the calibration: the z-test's approximation says 0.27, but
    # Fisher's test at 0.025 rejects only when the candidate catches at most b of 4, so its power is the binomial
    # chance of those counts at the dropped rate. The reference: the sum written out with scipy.
    from scipy.stats import binom

    rejected = [b for b in range(5) if fisher_exact([[60, 2], [b, 4 - b]])[1] < 0.025]
    reference = sum(binom.pmf(b, 4, 60 / 62 - 0.10) for b in rejected)
    power = drop_power(rate=60 / 62, calibration_n=62, candidate_n=4, move=0.10, level=0.025, calibration_hits=60)
    assert power == pytest.approx(reference) and power < 0.1
    from statsmodels.stats.proportion import power_proportions_2indep

    approximate = power_proportions_2indep(-0.10, 60 / 62, 4, ratio=62 / 4, alpha=0.025, return_results=False)
    assert approximate > 0.25  # the negative control: what the approximation alone would have said


@pytest.mark.slow
def test_the_check_warns_falsely_at_most_at_its_level_by_simulation():
    # Known truth: nothing moved (TPR 0.90 on 1,000 and TNR 0.23 on 800 gold outputs of the calibration, the same
    # rates on the candidate's 100 and 400 gold outputs). Both rates are tested, each at 0.025: at most 5% false
    # warnings over 2,000 candidates. Negative control: a TNR that fell by 0.10 on 400 gold outputs is caught often.
    rng = np.random.default_rng(40)

    def cells(n: int, tpr: float, tnr: float, share_pass: float = 0.5) -> tuple[int, int, int, int]:
        good = rng.binomial(n, share_pass)
        tp, tn = rng.binomial(good, tpr), rng.binomial(n - good, tnr)
        return tp, (n - good) - tn, good - tp, tn

    calibration = (900, 616, 100, 184)  # TPR 0.90 of 1,000, TNR 0.23 of 800
    for n in (100, 400):
        warned = sum(
            transport_test(calibration=calibration, candidate=cells(n, 0.90, 0.23)).warning is not None
            for _ in range(2000)
        )
        assert warned / 2000 <= 0.05, n
    moved = sum(
        transport_test(calibration=calibration, candidate=cells(800, 0.90, 0.13)).warning is not None
        for _ in range(300)
    )
    assert moved / 300 > 0.5
