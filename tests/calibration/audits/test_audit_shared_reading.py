"""The open plans of a candidate's gating criteria read as one shared sample (calibration/audits/shared_figures.py):
two criteria, one order, each criterion's gold read from the same labels; decisions worked by hand
(the exact rule, and one by the FAIL test at alpha / 2)."""

from __future__ import annotations

import pytest

from calibration.audits.plans import close_plan, start_plan
from calibration.audits.shared_figures import SharedReadingError, shared_reading
from calibration.stats.audit_stats import FAIL, PASS
from evals.models import Role
from labeling.audit_order import release_next
from tests import factories as make
from tests.audit_helpers import KEY, in_order

pytestmark = pytest.mark.django_db

OTHER = "next_step"


def two_plans(design: str = "uniform"):
    """correct_amount and next_step gate at a minimum of 0.5; a candidate of 40 outputs the judge passed on the
    first and split 20/20 on the second; a plan per criterion on the eval set's one order, 25 released."""
    lead = make.make_user("lee", Role.LEAD)
    rv = make.make_rubric_version(name="refund")
    judge = make.make_judge("gpt-judge")
    make.mark_as_gating(rv, judge, [KEY, OTHER], make.make_eval_set("cal"), by=lead, min_pass_rate=0.5)
    eval_set = make.make_eval_set("rc-1")
    make.bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": 40}, OTHER: {"PASS": 20, "FAIL": 20}})
    make.open_queue(eval_set, rv, lead)
    plans = [
        start_plan(
            criterion=rv.criteria.get(key=key),
            eval_set=eval_set,
            judge_config=judge,
            by=lead,
            seed=7,
            design=design if key == OTHER else "uniform",
        )
        for key in (KEY, OTHER)
    ]
    release_next(order=plans[0].order, k=25)
    return lead, rv, plans


def label(rv, outputs, outcomes: dict[str, str]) -> None:
    """Both annotators label every criterion of each output, as they do."""
    for output in outputs:
        make.annotate(output, rv, make.annotator("amy"), 1, outcomes)
        make.annotate(output, rv, make.annotator("bo"), 2, outcomes)


def test_both_criteria_read_one_order_and_a_fail_on_either_fails_the_release():
    _lead, rv, plans = two_plans()
    assert plans[0].order_id == plans[1].order_id  # the eval set's one order
    order = in_order(plans[0])
    label(rv, order[:25], {KEY: "PASS", OTHER: "FAIL"})
    reading = shared_reading(plans)
    # correct_amount: 20 gold PASS of 40 reach 0.5 x 40 by the exact rule at label 20. next_step: 20 gold FAIL in a
    # row; its FAIL test (at alpha / 2) decides at the 20th, the first label it may (MIN_GOLD), one before the exact
    # rule would (21 fails leave 19 < 20 possible passes). The release fails there, on next_step.
    assert [(r.key, r.decision.decided, r.decision.decided_at, r.decision.decided_by) for r in reading.criteria] == [
        (KEY, PASS, 20, "exact"),
        (OTHER, FAIL, 20, "test"),
    ]
    assert (reading.decided, reading.decided_at, reading.deciding) == (FAIL, 20, (OTHER,))
    assert (reading.alpha_pass, reading.alpha_fail) == pytest.approx((0.025, 0.0125))


def test_the_release_passes_when_every_criterion_passes_on_the_same_labels():
    _lead, rv, plans = two_plans(design="stratified")
    order = in_order(plans[0])
    label(rv, order[:19], {KEY: "PASS", OTHER: "PASS"})
    # The 20th: both pass it on correct_amount, they disagree on next_step (its gold pending): one short there.
    make.annotate(order[19], rv, make.annotator("amy"), 1, {KEY: "PASS", OTHER: "PASS"})
    make.annotate(order[19], rv, make.annotator("bo"), 2, {KEY: "PASS", OTHER: "FAIL"})
    reading = shared_reading(plans)
    assert [r.design for r in reading.criteria] == ["uniform", "stratified"]
    assert reading.decided is None and reading.undecided == (OTHER,)
    assert reading.criteria[0].decision.decided == PASS
    # A 21st output passing both brings next_step its 20th gold PASS (the exact rule: 20 of 40 at 0.5): every
    # criterion has passed, the release passes at label 21.
    label(rv, order[20:21], {KEY: "PASS", OTHER: "PASS"})
    reading = shared_reading(plans)
    assert (reading.decided, reading.decided_at, reading.deciding) == (PASS, 21, (KEY, OTHER))


def test_plans_that_are_not_one_sample_are_refused_in_words():
    lead, _rv, plans = two_plans()
    with pytest.raises(SharedReadingError, match="same criterion"):
        shared_reading([plans[0], plans[0]])
    with pytest.raises(SharedReadingError, match="at least one"):
        shared_reading([])
    close_plan(plan=plans[1], by=lead)
    plans[1].refresh_from_db()
    with pytest.raises(SharedReadingError, match="closed"):
        shared_reading(plans)
