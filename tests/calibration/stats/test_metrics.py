"""The statistics, checked against numbers worked out by hand (../shared/background) and against
reference implementations (scikit-learn, statsmodels). No database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from calibration.stats import metrics
from calibration.stats.metrics import (
    GATE_MIN_KAPPA,
    MIN_N,
    TREND_MIN_KAPPA,
    WilsonBound,
    bootstrap_kappa_ci,
    cohen_agreement,
    kappa_from_cells,
    krippendorff_alpha_nominal,
    tier_for,
    wilson_interval,
)


def pairs(tp: int, fp: int, fn: int, tn: int) -> tuple[list[str], list[str]]:
    """(judge, gold) lists with the given cells: fp = judge PASS and gold FAIL."""
    judge = ["PASS"] * (tp + fp) + ["FAIL"] * (fn + tn)
    gold = ["PASS"] * tp + ["FAIL"] * fp + ["PASS"] * fn + ["FAIL"] * tn
    return judge, gold


def test_the_200_item_worked_example_gives_kappa_0_25_over_0_35():
    # Background 000: humans pass 150, the judge 160, they agree on 180 of 200.
    # tp + fn = 150, tp + fp = 160, tp + tn = 180, all four sum to 200  =>  tp 145, fp 15, fn 5, tn 35.
    judge, gold = pairs(145, 15, 5, 35)
    a = cohen_agreement(judge, gold)
    assert a.n == 200
    assert a.observed_agreement == pytest.approx(0.90)
    assert a.expected_agreement == pytest.approx(0.75 * 0.80 + 0.25 * 0.20)  # 0.65
    assert a.kappa == pytest.approx(0.25 / 0.35)  # about 0.714
    assert round(a.kappa, 2) == 0.71
    assert (a.true_pass, a.false_pass, a.false_fail, a.true_fail) == (145, 15, 5, 35)
    assert a.reference_pass_rate == pytest.approx(0.75)
    assert a.rater_pass_rate == pytest.approx(0.80)
    assert tier_for(a.kappa, a.n) == "gate"


def test_always_pass_judge_on_a_skewed_set_agrees_90_percent_with_kappa_exactly_zero():
    # Background 004: nine human passes, one fail, a judge that always says pass.
    judge, gold = pairs(9, 1, 0, 0)
    a = cohen_agreement(judge, gold)
    assert a.observed_agreement == pytest.approx(0.9)
    assert a.expected_agreement == pytest.approx(1.0 * 0.9 + 0.0 * 0.1)
    assert a.kappa == 0.0
    assert a.false_pass == 1
    assert a.rater_pass_rate == 1.0


def test_a_judge_that_reads_the_answer_gets_kappa_one_on_the_same_set():
    # The negative control of the always-pass example: same gold, a discriminating judge.
    a = cohen_agreement(*pairs(9, 0, 0, 1))
    assert a.kappa == pytest.approx(1.0)


def test_kappa_is_undefined_not_zero_or_one_when_both_sides_say_the_same_single_outcome():
    a = cohen_agreement(["PASS"] * 12, ["PASS"] * 12)
    assert a.kappa is None
    assert a.kappa_ci is None
    assert a.observed_agreement == 1.0
    assert a.expected_agreement == 1.0
    assert tier_for(a.kappa, 500) == "insufficient"


def test_no_items_gives_no_numbers_at_all():
    a = cohen_agreement([], [])
    assert a.n == 0
    assert (a.kappa, a.kappa_ci, a.observed_agreement, a.expected_agreement) == (None, None, None, None)
    assert (a.rater_pass_rate, a.reference_pass_rate) == (None, None)


def test_kappa_agrees_with_statsmodels_on_a_lopsided_table():
    judge, gold = pairs(40, 11, 7, 3)
    # statsmodels wants the table rows = rater 1, cols = rater 2, in a fixed category order.
    table = np.array([[40, 11], [7, 3]])  # rows judge PASS/FAIL, cols gold PASS/FAIL
    assert cohen_agreement(judge, gold).kappa == pytest.approx(cohens_kappa(table).kappa)


def test_kappa_from_cells_matches_the_textbook_formula():
    tp, fp, fn, tn = 145, 15, 5, 35
    n = 200
    po = (tp + tn) / n
    pe = ((tp + fp) / n) * ((tp + fn) / n) + ((fn + tn) / n) * ((fp + tn) / n)
    assert kappa_from_cells(tp, fp, fn, tn) == pytest.approx((po - pe) / (1 - pe))
    assert math.isnan(kappa_from_cells(0, 0, 0, 9))
    assert math.isnan(kappa_from_cells(0, 0, 0, 0))


def test_bootstrap_interval_is_reproducible_and_close_to_the_large_sample_interval():
    first = bootstrap_kappa_ci(145, 15, 5, 35)
    assert first == bootstrap_kappa_ci(145, 15, 5, 35)
    low, high = first
    assert low < 0.25 / 0.35 < high
    # Independent reference: statsmodels' asymptotic interval kappa +- 1.96 SE (Fleiss, Cohen & Everitt).
    ref = cohens_kappa(np.array([[145, 15], [5, 35]]))
    assert low == pytest.approx(ref.kappa_low, abs=0.03)
    assert high == pytest.approx(ref.kappa_upp, abs=0.03)


def test_bootstrap_over_cells_has_the_spread_of_resampling_items():
    # The cell-count shortcut must match the naive "resample items with replacement" bootstrap.
    judge, gold = pairs(60, 12, 9, 39)
    j, g = np.array(judge) == "PASS", np.array(gold) == "PASS"
    rng = np.random.default_rng(7)
    naive = []
    for _ in range(3000):
        idx = rng.integers(0, len(j), len(j))
        jj, gg = j[idx], g[idx]
        po = np.mean(jj == gg)
        pe = jj.mean() * gg.mean() + (1 - jj.mean()) * (1 - gg.mean())
        naive.append((po - pe) / (1 - pe))
    low, high = bootstrap_kappa_ci(60, 12, 9, 39)
    n_low, n_high = np.quantile(naive, [0.025, 0.975])
    assert low == pytest.approx(n_low, abs=0.02)
    assert high == pytest.approx(n_high, abs=0.02)


def test_wilson_35_of_35_clears_0_90_and_34_of_34_does_not():
    # For all-pass samples the lower bound is n / (n + z^2): 35 / 38.84 = 0.9011, 34 / 37.84 = 0.8985.
    z2 = 1.959963984540054**2
    w35, w34 = wilson_interval(35, 35, 0.95), wilson_interval(34, 34, 0.95)
    assert w35.lower == pytest.approx(35 / (35 + z2))
    assert w34.lower == pytest.approx(34 / (34 + z2))
    assert w35.lower >= 0.90 > w34.lower


@pytest.mark.parametrize("successes,n,confidence", [(0, 1, 0.95), (7, 10, 0.9), (88, 100, 0.99), (1, 3, 0.5)])
def test_wilson_equals_statsmodels(successes, n, confidence):
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    w = wilson_interval(successes, n, confidence)
    assert w.lower == pytest.approx(low, rel=1e-12, abs=1e-15)
    assert w.upper == pytest.approx(high, rel=1e-12, abs=1e-15)


def test_wilson_refuses_nonsense():
    assert wilson_interval(0, 0, 0.95).lower is None
    with pytest.raises(ValueError):
        wilson_interval(5, 4, 0.95)
    with pytest.raises(ValueError):
        wilson_interval(1, 4, 1.0)


def test_krippendorff_alpha_by_hand():
    # Units (P,P) (P,F) (F,F) (P,P) and one lone P (not pairable). Coincidences: o_PP = 4, o_FF = 2,
    # o_PF = o_FP = 1; n_P = 5, n_F = 3, n = 8. alpha = 1 - (n - 1) * (o_PF + o_FP) / (2 n_P n_F)
    # = 1 - 7 * 2 / 30 = 8 / 15.
    counts = np.array([[2, 0], [1, 1], [0, 2], [2, 0], [1, 0]])  # columns PASS, FAIL
    assert krippendorff_alpha_nominal(counts) == pytest.approx(8 / 15)


def test_krippendorff_alpha_is_undefined_without_variation_or_pairs():
    assert krippendorff_alpha_nominal(np.array([[2, 0], [3, 0]])) is None
    assert krippendorff_alpha_nominal(np.array([[1, 0], [0, 1]])) is None
    assert krippendorff_alpha_nominal(np.zeros((0, 2))) is None


def test_tier_boundaries():
    assert tier_for(GATE_MIN_KAPPA, MIN_N) == "gate"
    assert tier_for(np.nextafter(GATE_MIN_KAPPA, 0), MIN_N) == "trend"
    assert tier_for(TREND_MIN_KAPPA, MIN_N) == "trend"
    assert tier_for(np.nextafter(TREND_MIN_KAPPA, 0), MIN_N) == "unusable"
    assert tier_for(-0.3, MIN_N) == "unusable"
    assert tier_for(0.95, MIN_N - 1) == "insufficient"
    assert tier_for(None, 10_000) == "insufficient"


def test_thresholds_are_documented_as_provisional():
    source = open(metrics.__file__).read()
    assert source.count("PROVISIONAL") >= 2


# --- the order-free human ceiling -----------------------------------------------------------------


def test_alpha_formula_equals_the_krippendorff_package_with_two_to_five_coders():
    import krippendorff

    from calibration.stats.metrics import alpha_from_counts

    rng = np.random.default_rng(3)
    for _ in range(20):
        units = rng.integers(2, 6, size=40)
        passes = rng.binomial(units, rng.uniform(0.2, 0.9))
        reliability = np.full((5, len(units)), np.nan)  # coders x units, NaN = did not label
        for u, (m, p) in enumerate(zip(units, passes, strict=True)):
            reliability[:m, u] = [1] * p + [0] * (m - p)
        want = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
        got = alpha_from_counts(passes, units - passes, np.ones(len(units)))[0]
        assert got == pytest.approx(want, abs=1e-12)


def test_alpha_interval_has_the_spread_of_resampling_items():
    from calibration.stats.metrics import bootstrap_alpha_ci

    counts = np.array([[2, 0]] * 50 + [[1, 1]] * 12 + [[0, 2]] * 30 + [[2, 1]] * 8 + [[1, 2]] * 5)
    rng = np.random.default_rng(11)
    naive = []
    for _ in range(2000):
        sample = counts[rng.integers(0, len(counts), len(counts))]
        naive.append(krippendorff_alpha_nominal(sample))
    low, high = bootstrap_alpha_ci(counts)
    n_low, n_high = np.quantile(naive, [0.025, 0.975])
    assert low == pytest.approx(n_low, abs=0.03) and high == pytest.approx(n_high, abs=0.03)
    assert low < krippendorff_alpha_nominal(counts) < high


def pair_entries(labels: dict[str, list[str | None]]):
    """(items, pairs, cells) for mean_pairwise_kappa from per-annotator label lists (None = not labeled)."""
    names = sorted(labels)
    items, pairs, cells = [], [], []
    pair_codes: dict[tuple[str, str], int] = {}
    for i in range(len(next(iter(labels.values())))):
        for x in range(len(names)):
            for y in range(x + 1, len(names)):
                a, b = labels[names[x]][i], labels[names[y]][i]
                if a is None or b is None:
                    continue
                items.append(i)
                pairs.append(pair_codes.setdefault((names[x], names[y]), len(pair_codes)))
                cells.append({("PASS", "PASS"): 0, ("PASS", "FAIL"): 1, ("FAIL", "PASS"): 2, ("FAIL", "FAIL"): 3}[a, b])
    return np.array(items), np.array(pairs), np.array(cells)


def test_mean_pairwise_kappa_equals_the_mean_of_scikit_learn_pair_kappas():
    from sklearn.metrics import cohen_kappa_score

    from calibration.stats.metrics import mean_pairwise_kappa

    rng = np.random.default_rng(5)
    truth = rng.random(120) < 0.6
    labels = {}
    for name, (noise, missing) in {"amy": (0.1, 0.2), "bo": (0.25, 0.3), "cy": (0.15, 0.5), "di": (0.4, 0.1)}.items():
        flipped = truth ^ (rng.random(120) < noise)
        labels[name] = [None if rng.random() < missing else ("PASS" if v else "FAIL") for v in flipped]
    want = []
    names = sorted(labels)
    for x in range(4):
        for y in range(x + 1, 4):
            shared = [i for i in range(120) if labels[names[x]][i] and labels[names[y]][i]]
            a = [labels[names[x]][i] for i in shared]
            b = [labels[names[y]][i] for i in shared]
            want.append(cohen_kappa_score(a, b, labels=["PASS", "FAIL"]))
    got = mean_pairwise_kappa(*pair_entries(labels))
    assert got.kappa == pytest.approx(np.mean(want), abs=1e-12)
    assert (got.pairs, got.undefined_pairs) == (6, 0)
    assert got.kappa_ci[0] < got.kappa < got.kappa_ci[1]
    assert got.items == sum(1 for i in range(120) if sum(labels[n][i] is not None for n in names) >= 2)


def test_a_pair_whose_kappa_is_undefined_is_left_out_and_counted():
    from calibration.stats.metrics import mean_pairwise_kappa

    labels = {
        "amy": ["PASS", "FAIL", "PASS", None, None],
        "bo": ["PASS", "FAIL", "FAIL", "PASS", "PASS"],
        "cy": [None, None, None, "PASS", "PASS"],  # with bo: PASS, PASS on both items -> 0/0
    }
    got = mean_pairwise_kappa(*pair_entries(labels))
    # amy-bo: (P,P) (F,F) (P,F): po 2/3, amy passes 2/3, bo 1/3, pe = 2/9 + 2/9 = 4/9, kappa = (2/9)/(5/9) = 2/5.
    assert got.kappa == pytest.approx(0.4)
    assert (got.pairs, got.undefined_pairs) == (1, 1)


def test_pairwise_interval_has_the_spread_of_resampling_items():
    from calibration.stats.metrics import mean_pairwise_kappa

    rng = np.random.default_rng(8)
    truth = rng.random(150) < 0.55
    labels = {n: ["PASS" if v else "FAIL" for v in truth ^ (rng.random(150) < e)] for n, e in (("a", 0.1), ("b", 0.2))}
    labels["c"] = [None if i % 3 else v for i, v in enumerate(["PASS" if v else "FAIL" for v in truth])]
    items, pairs, cells = pair_entries(labels)
    got = mean_pairwise_kappa(items, pairs, cells)
    naive = []
    for _ in range(1500):
        chosen = rng.integers(0, 150, 150)
        idx = np.concatenate([np.flatnonzero(items == i) for i in chosen])
        tables = np.zeros((3, 4), dtype=int)
        np.add.at(tables, (pairs[idx], cells[idx]), 1)
        naive.append(np.nanmean(kappa_from_cells(tables[:, 0], tables[:, 1], tables[:, 2], tables[:, 3])))
    n_low, n_high = np.quantile(naive, [0.025, 0.975])
    assert got.kappa_ci[0] == pytest.approx(n_low, abs=0.03) and got.kappa_ci[1] == pytest.approx(n_high, abs=0.03)


# --- the confusion matrix named for people --------------------------------------------------------


def test_rates_of_the_worked_example_equal_scikit_learn():
    from sklearn.metrics import balanced_accuracy_score, f1_score, recall_score

    from calibration.stats.metrics import classification_rates

    # 145 true passes, 15 false passes, 5 false fails, 35 true fails (background 000).
    judge, gold = pairs(145, 15, 5, 35)
    r = classification_rates(145, 15, 5, 35)
    # By hand: gold PASS 150, of them the judge passed 145; gold FAIL 50, of them it failed 35.
    assert r.tpr == pytest.approx(145 / 150) and r.tnr == pytest.approx(35 / 50)
    assert r.balanced_accuracy == pytest.approx((145 / 150 + 35 / 50) / 2)
    assert r.f1 == pytest.approx(2 * 145 / (2 * 145 + 15 + 5))
    assert r.tpr == pytest.approx(recall_score(gold, judge, pos_label="PASS"))
    assert r.tnr == pytest.approx(recall_score(gold, judge, pos_label="FAIL"))
    assert r.balanced_accuracy == pytest.approx(balanced_accuracy_score(gold, judge))
    assert r.f1 == pytest.approx(f1_score(gold, judge, pos_label="PASS"))
    assert r.tpr_ci == pytest.approx(proportion_confint(145, 150, alpha=0.05, method="wilson"))
    assert r.tnr_ci == pytest.approx(proportion_confint(35, 50, alpha=0.05, method="wilson"))
    for value, ci in ((r.balanced_accuracy, r.balanced_accuracy_ci), (r.f1, r.f1_ci)):
        assert ci[0] < value < ci[1]


def test_a_judge_that_misses_every_failure_catches_none_and_still_passes_all_good_outputs():
    from sklearn.metrics import balanced_accuracy_score

    from calibration.stats.metrics import classification_rates

    judge, gold = pairs(9, 1, 0, 0)  # background 004: always PASS on nine good outputs and one failure
    r = classification_rates(9, 1, 0, 0)
    assert (r.tpr, r.tnr) == (1.0, 0.0)
    assert r.balanced_accuracy == pytest.approx(balanced_accuracy_score(gold, judge)) == 0.5
    assert r.tnr_ci[0] == 0.0 and r.tnr_ci[1] > 0.7  # one failure says little: Wilson (0, 0.79)


def test_rates_are_undefined_not_zero_when_a_class_is_missing():
    from calibration.stats.metrics import classification_rates

    only_pass = classification_rates(12, 0, 3, 0)  # no gold FAIL: how often it catches failures is unknown
    assert only_pass.tnr is None and only_pass.tnr_ci is None and only_pass.balanced_accuracy is None
    assert only_pass.tpr == pytest.approx(0.8)
    only_fail = classification_rates(0, 0, 0, 7)  # nothing passes on either side: F1 for PASS is 0/0
    assert only_fail.f1 is None and only_fail.tpr is None and only_fail.tnr == 1.0
    nothing = classification_rates(0, 0, 0, 0)
    assert nothing == type(nothing)(None, None, None, None, None, None, None, None)


def test_balanced_accuracy_interval_has_the_spread_of_resampling_items():
    from calibration.stats.metrics import classification_rates

    judge, gold = (np.array(x) == "PASS" for x in pairs(60, 12, 9, 39))
    rng = np.random.default_rng(4)
    naive = []
    for _ in range(3000):
        idx = rng.integers(0, len(judge), len(judge))
        j, g = judge[idx], gold[idx]
        naive.append((np.mean(j[g]) + np.mean(~j[~g])) / 2)
    low, high = classification_rates(60, 12, 9, 39).balanced_accuracy_ci
    n_low, n_high = np.quantile(naive, [0.025, 0.975])
    assert low == pytest.approx(n_low, abs=0.015) and high == pytest.approx(n_high, abs=0.015)


def _wilson_by_the_formula(successes, n, confidence):
    # Wilson (1927) written out, the way calibration/stats/metrics.py computed it before it called statsmodels.
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p, z2n = successes / n, z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)) ** 0.5
    return centre - half, centre + half


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_wilson_keeps_the_hand_written_figures(confidence):
    for n in (1, 2, 3, 10, 34, 35, 50, 400, 5000):
        for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            lower, upper = _wilson_by_the_formula(successes, n, confidence)
            w = wilson_interval(successes, n, confidence)
            # statsmodels clips to [0, 1]; the formula can land a rounding error outside at 0 and n.
            assert w.lower == pytest.approx(max(lower, 0.0), abs=1e-12)
            assert w.upper == pytest.approx(min(upper, 1.0), abs=1e-12)


def test_wilson_7_of_10_at_95_by_hand():
    # z = 1.959964, z^2 = 3.841459; centre = (0.7 + 0.192073) / 1.384146 = 0.644493;
    # half = 1.959964 / 1.384146 * sqrt(0.021 + 0.009604) = 1.416009 * 0.174940 = 0.247716.
    w = wilson_interval(7, 10, 0.95)
    assert (w.lower, w.upper) == (pytest.approx(0.396777, abs=2e-6), pytest.approx(0.892209, abs=2e-6))


def test_wilson_is_the_two_sided_interval_not_a_one_sided_bound():
    # At 90% two-sided, each side leaves 5% out: the lower end equals the one-sided 95% bound,
    # which is higher than the two-sided 95% one (z 1.645 vs 1.960).
    two_sided_90 = wilson_interval(45, 50, 0.90).lower
    assert two_sided_90 > wilson_interval(45, 50, 0.95).lower
    low, _ = proportion_confint(45, 50, alpha=0.10, method="wilson")
    assert two_sided_90 == pytest.approx(low, abs=1e-12)


def test_wilson_of_nothing_is_none_whatever_the_confidence():
    assert wilson_interval(0, 0, 1.0) == WilsonBound(0, 0, None, None)
