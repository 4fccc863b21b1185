"""Property tests: on random label sets with ERROR, ABSTAIN and N/A mixed in, the report's counts and
kappa equal what a plain-Python reading of the rules plus scikit-learn gives; the gate's Wilson bounds
equal statsmodels'. The expected values are computed item by item here, never with the report's code.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from calibration.report.rows import build_rows
from calibration.stats.metrics import wilson_interval

P, F, NA, AB, ER = "PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN", "ERROR"
HUMAN = st.sampled_from([P, F, NA, AB])
JUDGE = st.sampled_from([P, F, NA, AB, ER])

item = st.fixed_dictionaries(
    {
        "a": st.none() | HUMAN,
        "b": st.none() | HUMAN,
        "adjudicated": st.none() | st.none() | HUMAN,
        "judge": st.none() | JUDGE,
        "found": st.sampled_from([True, True, False, None]),
    }
)
# Two criteria; skew towards PASS sometimes so constant sides and undefined kappa come up.
criterion_items = st.lists(item, min_size=0, max_size=60)


def frames(items_by_criterion: dict[int, list[dict]]):
    labels, adjudicated, verdicts = [], [], []
    for crit, items in items_by_criterion.items():
        for i, it in enumerate(items):
            for slot, who in ((1, "a"), (2, "b")):
                if it[who] is not None:
                    labels.append((i, crit, i * 10 + slot, slot, slot, it[who]))  # annotator = the person
            if it["adjudicated"] is not None:
                adjudicated.append((i, crit, it["adjudicated"]))
            if it["judge"] is not None:
                verdicts.append((i, crit, 0, it["judge"], it["found"], 0))
    return (
        pd.DataFrame(labels, columns=["output", "criterion", "annotation", "annotator", "slot", "outcome"]),
        pd.DataFrame(adjudicated, columns=["output", "criterion", "outcome"]),
        pd.DataFrame(verdicts, columns=["output", "criterion", "sample", "outcome", "evidence_found", "run_rank"]),
    )


def expected(items: list[dict]) -> dict:
    """The rules of the issue, read literally, one item at a time."""
    out = dict(judge_error=0, judge_abstain=0, not_applicable=0, pending_gold=0, evidence_not_found=0)
    judge_list, gold_list, a_list, b_list = [], [], [], []
    for it in items:
        if it["adjudicated"] is not None:
            gold = it["adjudicated"]
        elif it["a"] is not None and it["a"] == it["b"]:
            gold = it["a"]  # two annotators: their agreement is the strict majority
        else:
            gold = None
        j = it["judge"]
        if j is not None and it["found"] is False:
            out["evidence_not_found"] += 1
        if j == ER:
            out["judge_error"] += 1
        elif j == AB:
            out["judge_abstain"] += 1
        elif j == NA or (j in (P, F) and gold == NA):
            out["not_applicable"] += 1
        elif j in (P, F) and gold not in (P, F):
            out["pending_gold"] += 1
        elif j in (P, F):
            judge_list.append(j)
            gold_list.append(gold)
        if it["a"] in (P, F) and it["b"] in (P, F):
            a_list.append(it["a"])
            b_list.append(it["b"])
    out["n"] = len(judge_list)
    out["false_pass"] = sum(j == P and g == F for j, g in zip(judge_list, gold_list, strict=True))
    out["false_fail"] = sum(j == F and g == P for j, g in zip(judge_list, gold_list, strict=True))
    out["kappa"] = sk_kappa(gold_list, judge_list)
    out["human_n"] = len(a_list)
    out["human_kappa"] = sk_kappa(a_list, b_list)
    out["human_alpha"] = alpha_by_hand([[v for v in (it["a"], it["b"]) if v in (P, F)] for it in items])
    return out


def alpha_by_hand(units: list[list[str]]) -> float | None:
    """Krippendorff's nominal alpha from the coincidence matrix, written out (Krippendorff 2011)."""
    o = {(x, y): 0.0 for x in (P, F) for y in (P, F)}
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, x in enumerate(values):
            for j, y in enumerate(values):
                if i != j:
                    o[(x, y)] += 1 / (m - 1)
    n_c = {c: o[(c, P)] + o[(c, F)] for c in (P, F)}
    n = n_c[P] + n_c[F]
    if n == 0 or n_c[P] == 0 or n_c[F] == 0:
        return None
    observed = (o[(P, F)] + o[(F, P)]) / n
    chance = 2 * n_c[P] * n_c[F] / (n * (n - 1))
    return 1 - observed / chance


def sk_kappa(y1: list[str], y2: list[str]) -> float | None:
    if not y1 or len(set(y1) | set(y2)) == 1:
        return None  # empty, or both sides one and the same outcome: undefined
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return float(cohen_kappa_score(y1, y2, labels=[P, F]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=criterion_items, second=criterion_items)
@pytest.mark.slow
def test_report_counts_and_kappa_equal_scikit_learn(first, second):
    labels, adjudicated, verdicts = frames({1: first, 2: second})
    rows = build_rows(criteria=[(1, "one"), (2, "two")], labels=labels, adjudicated=adjudicated, verdicts=verdicts)
    for row, items in zip(rows, (first, second), strict=True):
        want = expected(items)
        figures = row.as_dict()  # by the report's keys
        for key in ("n", "false_pass", "false_fail", "judge_error", "judge_abstain", "not_applicable"):
            assert figures[key] == want[key], key
        assert row.buckets.pending_gold == want["pending_gold"]
        assert row.buckets.evidence_not_found == want["evidence_not_found"]
        assert row.human.n == want["human_n"]
        if want["kappa"] is None:
            assert row.judge.kappa is None
            assert row.warning_codes[0] in ("no_data", "kappa_undefined")
        else:
            assert row.judge.kappa == pytest.approx(want["kappa"], abs=1e-12)
        if want["human_kappa"] is None:
            assert row.human.kappa is None
        else:
            assert row.human.kappa == pytest.approx(want["human_kappa"], abs=1e-12)
        # Two people, one pair: the mean pairwise kappa is their kappa, over the same items.
        if want["human_kappa"] is None:
            assert row.human.pairwise_kappa is None
        else:
            assert row.human.pairwise_kappa == pytest.approx(want["human_kappa"], abs=1e-12)
            assert row.human.pairs == 1
        if want["human_alpha"] is None:
            assert row.human.alpha is None
        else:
            assert row.human.alpha == pytest.approx(want["human_alpha"], abs=1e-9)
        if row.judge.kappa is not None and row.judge.kappa_ci is not None:
            assert row.judge.kappa_ci[0] <= row.judge.kappa_ci[1]


@settings(max_examples=100, deadline=None)
@given(judge=st.lists(st.sampled_from([P, F]), min_size=1, max_size=40), data=st.data())
@pytest.mark.slow
def test_constant_sides_are_always_named(judge, data):
    gold = data.draw(st.lists(st.sampled_from([P, F]), min_size=len(judge), max_size=len(judge)))
    items = [{"a": g, "b": g, "adjudicated": None, "judge": j, "found": True} for j, g in zip(judge, gold, strict=True)]
    labels, adjudicated, verdicts = frames({1: items})
    row = build_rows(criteria=[(1, "one")], labels=labels, adjudicated=adjudicated, verdicts=verdicts)[0]
    if len(set(judge) | set(gold)) == 1:
        assert row.judge.kappa is None and "kappa_undefined" in row.warning_codes
    elif len(set(judge)) == 1:
        assert row.judge.kappa == 0.0 and "constant_judge" in row.warning_codes
    elif len(set(gold)) == 1:
        assert row.judge.kappa == 0.0 and "constant_gold" in row.warning_codes
    else:
        assert not {"constant_judge", "constant_gold", "kappa_undefined"} & set(row.warning_codes)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=5000),
    frac=st.floats(min_value=0, max_value=1),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_wilson_bounds_equal_statsmodels(n, frac, confidence):
    k = round(frac * n)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    w = wilson_interval(k, n, confidence)
    assert w.lower == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert w.upper == pytest.approx(high, rel=1e-9, abs=1e-12)


def test_the_judges_self_agreement_is_krippendorffs_alpha_over_its_samples():
    import krippendorff
    import numpy as np

    rng = np.random.default_rng(2)
    truth = rng.random(80) < 0.6
    rows = []
    samples = np.full((3, 80), np.nan)  # samples x items, 1 = PASS, 0 = FAIL, NaN = ERROR (not a judgment)
    for item in range(80):
        for sample in range(3):
            roll = rng.random()
            outcome = ER if roll < 0.05 else (P if truth[item] ^ (roll > 0.85) else F)
            rows.append((item, 1, sample, outcome, True, 0))
            if outcome != ER:
                samples[sample, item] = 1.0 if outcome == P else 0.0
    verdicts = pd.DataFrame(rows, columns=["output", "criterion", "sample", "outcome", "evidence_found", "run_rank"])
    empty = pd.DataFrame({"output": [], "criterion": [], "annotation": [], "annotator": [], "slot": [], "outcome": []})
    row = build_rows(
        criteria=[(1, "c")], labels=empty, adjudicated=empty[["output", "criterion", "outcome"]], verdicts=verdicts
    )[0]
    assert row.self_agreement.samples == 3
    want = krippendorff.alpha(reliability_data=samples, level_of_measurement="nominal")
    assert row.self_agreement.alpha == pytest.approx(want, abs=1e-12)
    assert row.self_agreement.alpha_ci[0] < want < row.self_agreement.alpha_ci[1]
    assert row.self_agreement.n == int((np.sum(~np.isnan(samples), axis=0) >= 2).sum())
