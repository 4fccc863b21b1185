"""The report's verdict in words and the label budget: pure functions, hand-worked numbers, no database."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from calibration.report.criterion_verdict import (
    CANNOT,
    GATING,
    MAY_GATE,
    MORE_LABELS,
    WHY_FEW_ITEMS,
    WHY_GATING,
    WHY_JUDGE,
    WHY_NO_DATA,
    WHY_NO_VERDICTS,
    WHY_ONE_OUTCOME,
    WHY_PEOPLE,
    criterion_verdict,
    decide,
    label_budget,
)
from calibration.report.waiting import waiting_counts
from calibration.stats.metrics import Finding


def row(key="correct_amount", n=200, kappa=0.71, ci=(0.62, 0.8), tier="gate", codes=(), human=0.8):
    warnings = [
        Finding(code, f"people agree only at kappa {human}" if code == "humans_disagree" else code) for code in codes
    ]
    return SimpleNamespace(
        criterion=key,
        judge=SimpleNamespace(n=n, kappa=kappa, kappa_ci=ci),
        tier=tier,
        warning_codes=list(codes),
        warnings=warnings,
    )


# --- The label budget: n' = n * ((kappa - low) / (kappa - threshold))^2, at least 100 ---------------------


def test_the_budget_of_the_docstrings_example_is_240_more_items():
    # kappa 0.70, lower end 0.50, n 80, gate 0.60: 80 * (0.20 / 0.10)^2 = 80 * 4 = 320 in all.
    budget = label_budget(n=80, kappa=0.70, ci_low=0.50, threshold=0.6, tier="gate")
    assert (budget.needed, budget.more, budget.tier) == (320, 240, "gate")


def test_a_ratio_a_hair_above_a_whole_number_asks_for_no_extra_item():
    # 200 * (0.15 / 0.05)^2 = 200 * 9 = 1800 (floating point says 1800.0000000000014).
    budget = label_budget(n=200, kappa=0.45, ci_low=0.30, threshold=0.4, tier="trend")
    assert budget.needed == 1800 and budget.more == 1600


def test_the_budget_never_goes_below_the_minimum_for_a_tier():
    # 50 * (0.10 / 0.20)^2 = 12.5 items would narrow the interval enough, but a tier needs 100.
    budget = label_budget(n=50, kappa=0.8, ci_low=0.7, threshold=0.6, tier="gate")
    assert (budget.needed, budget.more) == (100, 50)
    # 150 * (0.10 / 0.15)^2 = 66.7: already clear, nothing more.
    assert label_budget(n=150, kappa=0.75, ci_low=0.65, threshold=0.6, tier="gate").more == 0


def test_a_kappa_at_or_below_the_threshold_has_no_budget():
    assert label_budget(n=300, kappa=0.6, ci_low=0.5, threshold=0.6, tier="gate") is None
    assert label_budget(n=300, kappa=0.55, ci_low=0.45, threshold=0.6, tier="gate") is None
    assert label_budget(n=300, kappa=None, ci_low=None, threshold=0.6, tier="gate") is None


def test_a_point_interval_cannot_be_scaled_and_asks_for_the_minimum():
    budget = label_budget(n=20, kappa=1.0, ci_low=1.0, threshold=0.6, tier="gate")
    assert budget.point_interval and (budget.needed, budget.more) == (100, 80)


# --- The verdict per criterion -----------------------------------------------------------------------------


def test_a_gate_tier_criterion_may_gate_now():
    v = criterion_verdict(row())
    assert v.answer == MAY_GATE and "gate tier" in v.sentence and not v.needs_labels


def test_a_gate_tier_criterion_whose_interval_dips_below_says_how_many_items_would_clear_it():
    v = criterion_verdict(row(n=120, kappa=0.66, ci=(0.54, 0.78), codes=["interval_below_gate"]))
    # 120 * (0.12 / 0.06)^2 = 480 in all, 360 more.
    assert v.answer == MAY_GATE and v.budget.more == 360 and "about 360 more" in v.sentence


def test_a_good_kappa_on_too_few_items_could_gate_with_more_labels():
    v = criterion_verdict(row(n=80, kappa=0.7, ci=(0.5, 0.86), tier="insufficient", codes=["small_n"]))
    assert (v.answer, v.why, v.budget.more) == (MORE_LABELS, WHY_FEW_ITEMS, 240)
    assert "fewer than the 100" in v.sentence


def test_a_judge_that_disagrees_cannot_gate_however_many_labels():
    v = criterion_verdict(row(kappa=0.5, ci=(0.41, 0.6), tier="trend"))
    assert (v.answer, v.why, v.budget) == (CANNOT, WHY_JUDGE, None) and "trends" in v.sentence
    # On too few items more labels can only settle the trend tier: 60 * (0.2 / 0.1)^2 = 240 in all.
    few = criterion_verdict(row(n=60, kappa=0.5, ci=(0.3, 0.7), tier="insufficient"))
    assert (few.answer, few.budget.tier, few.budget.more) == (CANNOT, "trend", 180)
    unusable = criterion_verdict(row(kappa=0.2, ci=(0.1, 0.3), tier="unusable"))
    assert (unusable.answer, unusable.budget) == (CANNOT, None) and "not usable" in unusable.sentence


def test_people_who_disagree_come_first_whatever_the_judge_does():
    v = criterion_verdict(row(codes=["humans_disagree"], human=0.31))
    assert (v.answer, v.why) == (CANNOT, WHY_PEOPLE) and "0.31" in v.sentence and "definition" in v.sentence
    # Negative control: the same row without the warning may gate.
    assert criterion_verdict(row(human=0.31)).answer == MAY_GATE


def test_no_data_and_one_outcome_ask_for_labels_without_a_budget():
    none = criterion_verdict(row(n=0, kappa=None, ci=None, tier="insufficient", codes=["no_data"]))
    one = criterion_verdict(row(n=40, kappa=None, ci=None, tier="insufficient", codes=["kappa_undefined"]))
    assert (none.answer, none.why, none.budget) == (MORE_LABELS, WHY_NO_DATA, None)
    assert (one.answer, one.why, one.budget) == (MORE_LABELS, WHY_ONE_OUTCOME, None)


def test_the_headline_names_each_group_in_rubric_order():
    decision = decide(
        [
            row("a"),
            row("b", n=80, kappa=0.7, ci=(0.5, 0.86), tier="insufficient"),
            row("c", kappa=0.2, ci=(0.1, 0.3), tier="unusable"),
            row("d", codes=["humans_disagree"], human=0.2),
        ]
    )
    assert [c.criterion for c in decision.cannot] == ["c", "d"]
    assert decision.headline == "1 may gate now (a); 1 could with more labels (b); 2 cannot (c, d)."
    assert decide([]).headline == "This rubric version has no criteria."


# --- What already waits, from item states -----------------------------------------------------------------


def test_waiting_work_counts_disagreements_single_labels_and_unlabeled_outputs():
    states = pd.DataFrame(
        {
            "criterion": [1, 1, 1, 1, 2],
            "output": [10, 11, 12, 13, 10],
            "n_labels": [2, 1, 2, 0, 2],
            "state": ["disagreed", "awaiting", "agreed", "adjudicated", "agreed"],
        }
    )
    counts = waiting_counts(states, [(1, "a"), (2, "b")], outputs=6, disputes={"b": 2})
    a, b = counts["a"], counts["b"]
    # Output 13 has gold imported without labels: it waits for nobody.
    assert (a.disagreements, a.labeled_once, a.unlabeled, a.disputes) == (1, 1, 2, 0)
    assert (b.disagreements, b.labeled_once, b.unlabeled, b.disputes) == (0, 0, 5, 2)
    assert (b.for_reviewers, b.for_annotators) == (2, 5)


# --- What the decision says (issue 25: a newcomer's reading) ------------------------------------------------


def test_a_judge_without_verdicts_on_a_criterion_is_told_so_not_asked_for_labels():
    # A judge that grades only some criteria: 120 items have gold or labels, none a verdict of this judge.
    none = vars(row(n=0, kappa=None, ci=None, tier="insufficient", codes=["no_data", "no_verdict"]))
    v = criterion_verdict(SimpleNamespace(**none, judge_items=0, buckets=SimpleNamespace(no_verdict=120)))
    assert (v.answer, v.why) == (CANNOT, WHY_NO_VERDICTS)
    assert "this judge has no verdicts for correct_amount" in v.sentence and "120 labeled items" in v.sentence
    assert "label and judge" not in v.sentence
    # Negative control: a judge with verdicts that wait for gold is still asked for labels.
    waiting = vars(row(n=0, kappa=None, ci=None, tier="insufficient", codes=["no_data"])) | {
        "judge_items": 40,
        "buckets": SimpleNamespace(no_verdict=0),
    }
    assert criterion_verdict(SimpleNamespace(**waiting)).why == WHY_NO_DATA


def test_a_trend_tier_criterion_is_told_its_interval_reaches_below_the_trend_threshold():
    # kappa 0.46 on 296 items, interval (0.32, 0.60): in the trend tier by kappa, its lower end is below 0.4.
    # Budget: 296 * ((0.46 - 0.32) / (0.46 - 0.40))^2 = 296 * (0.14 / 0.06)^2 = 296 * 5.444... = 1611.6 -> 1612.
    v = criterion_verdict(row("within_policy", n=296, kappa=0.46, ci=(0.32, 0.60), tier="trend"))
    assert v.answer == CANNOT and v.budget.needed == 1612 and v.budget.more == 1316
    assert "it is in the trend tier, but its interval's lower end 0.32 is not above 0.4" in v.sentence
    assert "for the trend tier about" not in v.sentence
    # Negative control: below MIN_N the tier is "insufficient", and the budget is still for the trend tier.
    few = criterion_verdict(row(n=80, kappa=0.46, ci=(0.32, 0.60), tier="insufficient"))
    assert "for the trend tier about" in few.sentence


def test_people_who_disagree_are_said_once_with_their_figure():
    message = (
        "people agree only at mean pairwise kappa 0.13 over 1 annotator pair: gold is noisy; sharpen the "
        "criterion's definition before calibrating a judge on it"
    )
    r = row("grounded", codes=["humans_disagree"])
    r.warnings = [Finding("humans_disagree", message)]
    v = criterion_verdict(r)
    assert v.sentence == (
        "people disagree with each other (they agree only at mean pairwise kappa 0.13 over 1 annotator pair), so "
        "gold is noisy and no judge can be calibrated on it; sharpen the definition and its examples in a new "
        "rubric version"
    )
    assert v.sentence.count("noisy") == 1 and v.sentence.count("definition") == 1


def test_a_criterion_that_already_gates_is_no_longer_offered_as_may_gate():
    gating = vars(row()) | {"gating": True}
    v = criterion_verdict(SimpleNamespace(**gating))
    assert (v.answer, v.why) == (GATING, WHY_GATING) and "it gates releases with this judge" in v.sentence
    # Its figures are this report's eval set's, which need not be the one the mark was made on.
    assert f"(here kappa {gating['judge'].kappa:.2f} on {gating['judge'].n} items)" in v.sentence
    decision = decide([SimpleNamespace(**gating), row("b")])
    assert [c.criterion for c in decision.gating] == ["correct_amount"]
    assert [c.criterion for c in decision.may_gate] == ["b"]
    assert decision.headline == "1 gates now (correct_amount); 1 may gate now (b)."
    both = decide([SimpleNamespace(**gating), SimpleNamespace(**(vars(row("b")) | {"gating": True}))])
    assert both.headline == "2 gate now (correct_amount, b)."  # not "2 gates now"
