"""The jury's correlation with gold, cross-validated (calibration/stats/jury_fit.py), and the price of gating it
gives (issue 38): expected values worked by hand, or from scikit-learn's cross_val_predict as the reference."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold, cross_val_predict

from calibration.stats.audit_forecast import gating_price, labels_per_decision
from calibration.stats.jury_fit import FOLDS, SEED, JuryFit, cross_validated_r

# Ten items, one 0/1 signal right on 8: with an intercept the fit is each group's mean of gold, so leaving an item
# out predicts the mean of the OTHER items of its group. Signal 1: gold 1, 1, 1, 1, 0; signal 0: gold 0, 0, 0, 0, 1.
Y = [1, 1, 1, 1, 0, 0, 0, 0, 0, 1]
X = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]


def test_leave_one_out_on_ten_items_by_hand():
    # By hand: a right PASS-group item is predicted 3/4 (the other four: three 1s), the wrong one 4/4 = 1; in the
    # FAIL group 1/4 and 0. Predictions 0.75 x 4, 1, 0.25 x 4, 0 around their mean 0.5: deviations +-0.25 (x 8) and
    # +-0.5, against gold's +-0.5. Sum of products 8 x 0.125 - 2 x 0.25 = 0.5; sums of squares 1.0 and 2.5:
    # r = 0.5 / sqrt(2.5) = 1 / sqrt(10).
    assert cross_validated_r(Y, X) == pytest.approx(1 / 10**0.5, abs=1e-12)
    # The in-sample phi of the same signal is (4 x 4 - 1 x 1) / 5^2 = 0.6: what a fit on ten items flatters.
    assert np.corrcoef(Y, X)[0, 1] == pytest.approx(0.6)


def test_ten_folds_match_scikit_learns_cross_val_predict():
    rng = np.random.default_rng(7)
    n = 60
    y = (rng.random(n) < 0.7).astype(float)
    signals = np.column_stack(
        [np.where(rng.random(n) < 0.8, y, 1 - y), np.where(rng.random(n) < 0.7, y, 1 - y), rng.random(n)]
    )
    folds = KFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    reference = cross_val_predict(LinearRegression(), signals, y, cv=folds)
    assert cross_validated_r(y, signals) == pytest.approx(float(np.corrcoef(reference, y)[0, 1]), abs=1e-9)


def test_noise_signals_get_no_credit_that_the_in_sample_fit_gives():
    # Negative control: four signals unrelated to gold on 30 items. In-sample R^2 averages K / (n - 1) = 0.14 by
    # chance alone; the cross-validated R (clipped at 0) stays near nothing.
    rng = np.random.default_rng(0)
    in_sample, cross = [], []
    for _ in range(200):
        y = (rng.random(30) < 0.5).astype(float)
        signals = rng.random((30, 4))
        design = np.column_stack([np.ones(30), signals])
        fitted = design @ np.linalg.lstsq(design, y, rcond=None)[0]
        in_sample.append(np.corrcoef(fitted, y)[0, 1] ** 2)
        r = cross_validated_r(y, signals)
        assert r is not None and 0.0 <= r <= 1.0
        cross.append(r**2)
    assert np.mean(in_sample) == pytest.approx(4 / 29, abs=0.03)
    assert np.mean(cross) < 0.03


def test_undefined_without_enough_items_varying_gold_or_a_varying_signal():
    assert cross_validated_r(Y[:9], X[:9]) is None  # fewer than ten items
    assert cross_validated_r([1.0] * 10, X) is None  # gold constant
    assert cross_validated_r(Y, [0.5] * 10) is None  # the one signal constant
    assert cross_validated_r(Y, np.column_stack([X] * 5)) is None  # ten items, six coefficients: too few
    with pytest.raises(ValueError, match="10 gold values but 9 rows"):
        cross_validated_r(Y, X[:9])


def test_a_constant_signal_is_left_out_of_the_fit():
    assert cross_validated_r(Y, np.column_stack([X, [1.0] * 10])) == pytest.approx(1 / 10**0.5, abs=1e-12)


def test_the_jury_is_priced_as_a_judge_at_its_r_and_exported_only_where_it_exists():
    cells = (40, 10, 10, 40)  # the verdict's phi is 0.6
    jury = JuryFit(("other-judge",), 0.8, 100)
    price = gating_price(criterion="k", cells=cells, N=1000, minimum=0.9, jury=jury)
    assert price is not None and price.jury is not None
    worse = [
        max(
            labels_per_decision(phi=0.8, pass_rate=min(0.9 + m, 1.0), margin=m, N=1000, minimum=0.9).labels,
            labels_per_decision(phi=0.8, pass_rate=0.9 - m, margin=m, N=1000, minimum=0.9).labels,
        )
        for m in (0.10, 0.05)
    ]
    assert [c.labels for c in price.jury.costs] == worse
    assert price.jury_lowers and price.jury.costs[0].labels < price.costs[0].labels
    exported = price.as_dict()["jury"]
    assert exported["configs"] == ["other-judge"] and exported["R"] == 0.8 and exported["n"] == 100
    assert exported["labels"] == {"0.10": worse[0], "0.05": worse[1]}
    assert f"with the jury of other-judge (cross-validated R 0.80 on 100 items): about {worse[0]} labels at 0.10" in (
        price.in_words
    )
    # The judge's own price is as without a jury; without one, nothing new is said or exported.
    alone = gating_price(criterion="k", cells=cells, N=1000, minimum=0.9)
    assert alone is not None and alone.jury is None and "jury" not in alone.as_dict()
    assert price.costs == alone.costs and price.in_words.startswith(alone.in_words)
    assert "jury" not in alone.in_words
    # A jury no better than the judge is said to be so, not quoted as a saving.
    weak = gating_price(criterion="k", cells=cells, N=1000, minimum=0.9, jury=JuryFit(("weak",), 0.3, 100))
    assert weak is not None and not weak.jury_lowers
    assert weak.in_words.endswith("; a jury of weak would not lower it (cross-validated R 0.30 on 100 items)")


def test_the_docs_worked_example_by_hand():
    # docs/calibration.md, "The price of gating": cells 40, 10, 10, 40 (phi 0.6), minimum 0.8, N 1,000; a jury at
    # R 0.75 leaves 1 - 0.5625 = 0.4375 of the variance. FAIL side at 0.10 (p 0.7): s^2 = 0.46 * 0.21 + 0.54 * 0.16
    # = 0.183, A = 1.38 * 3.8415 * 0.183 * 0.4375 / 0.01 + 6.3 * 2 * 0.4278 / 0.10 = 42.4 + 53.9 = 96.3, 96.3 / 1.0963
    # = 87.9 -> 88 (the judge alone: 104). At 0.05 (p 0.75): s^2 = 0.17265, A = 160.2 + 104.7 = 264.9 -> 209.4 -> 210
    # (the judge alone: 254).
    price = gating_price(
        criterion="correct_amount",
        cells=(40, 10, 10, 40),
        N=1000,
        minimum=0.8,
        jury=JuryFit(("claude-judge",), 0.75, 100),
    )
    assert price is not None and price.jury is not None
    assert [c.labels for c in price.costs] == [104, 254]
    assert [c.labels for c in price.jury.costs] == [88, 210]
    assert price.in_words.endswith(
        "; with the jury of claude-judge (cross-validated R 0.75 on 100 items): about 88 labels at 0.10, 210 at 0.05"
    )
