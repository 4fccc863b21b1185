"""One audit of several gating criteria on one sample (issue 37 item 3): starting a group (good and bad input), the
shared decision a worker stores with its gold state, `audit_plan create --criterion a --criterion b` and
`show --group`, and the gate reading a group's plans at the levels stored at its start.

The hand-worked candidate is test_audit_shared_reading.py's: 40 outputs, correct_amount and next_step gating at a
minimum of 0.5 and confidence 0.95 (alpha 0.025; k = 2, FAIL at 0.0125); the judge passed every output on the
first criterion and split 20/20 on the second. With the first 25 of the order released and both annotators
labeling correct_amount PASS and next_step FAIL: correct_amount passes at label 20 by the exact rule (20 of 40 at
0.5), next_step's FAIL test at alpha / 2 decides at label 20 (its twentieth FAIL, the first label the test may), so
the release FAILs at label 20 on next_step.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from calibration.audits import group_figures
from calibration.audits.groups import close_group, release_group_next, start_group
from calibration.audits.plans import AuditPlanError, start_plan
from calibration.audits.shared_figures import shared_reading
from calibration.models import AuditPlan, AuditPlanGroup, GatingMark
from evals.models import Role
from labeling.models import AuditOrder
from tests import factories as make
from tests.audit_helpers import KEY, in_order
from tests.calibration.gate.test_gate_audit_levels import FIRST_20, gate

pytestmark = pytest.mark.django_db

OTHER = "next_step"


def candidate():
    """Both criteria gate with gpt-judge (min 0.5, confidence 0.95); rc-1's queue open under refund@1, whose third
    criterion, tone, does not gate."""
    lead = make.make_user("lee", Role.LEAD)
    rv = make.make_rubric_version(name="refund")
    rv.criteria.create(key="tone", definition="Polite.", order=9)
    judge = make.make_judge("gpt-judge")
    make.mark_as_gating(rv, judge, [KEY, OTHER], make.make_eval_set("cal"), by=lead, min_pass_rate=0.5)
    eval_set = make.make_eval_set("rc-1")
    make.bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": 40}, OTHER: {"PASS": 20, "FAIL": 20}})
    make.open_queue(eval_set, rv, lead)
    return lead, rv, judge, eval_set


def group_of(lead, rv, judge, eval_set, keys=(KEY, OTHER)) -> AuditPlanGroup:
    return start_group(
        criteria=[rv.criteria.get(key=key) for key in keys], eval_set=eval_set, judge_config=judge, by=lead, seed=7
    )


def label(rv, outputs, outcomes: dict[str, str]) -> None:
    """Both annotators label every criterion of each output, as they do."""
    for output in outputs:
        make.annotate(output, rv, make.annotator("amy"), 1, outcomes)
        make.annotate(output, rv, make.annotator("bo"), 2, outcomes)


def fail_on_next_step():
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    assert release_group_next(group=group, by=lead, k=25) == 25
    label(rv, in_order(group.plans.first())[:25], {KEY: "PASS", OTHER: "FAIL"})
    group.refresh_from_db()
    return lead, rv, group


def test_a_group_starts_a_plan_per_criterion_on_one_order_with_its_levels_fixed():
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    plans = list(group.plans.order_by("criterion__order"))
    assert [p.criterion.key for p in plans] == [KEY, OTHER]
    assert len({p.order_id for p in plans}) == 1 and all(p.design == "uniform" for p in plans)
    assert [(p.min_pass_rate, p.confidence) for p in plans] == [(0.5, 0.95), (0.5, 0.95)]
    assert (group.k, group.confidence) == (2, 0.95)
    assert (group.alpha_pass, group.alpha_fail) == pytest.approx((0.025, 0.0125))


@pytest.mark.parametrize(
    "keys, said",
    [
        ((), "at least one gating criterion"),
        ((KEY, KEY), "Each criterion once: correct_amount was chosen twice"),
        ((KEY, "tone"), "tone of refund@1 does not gate with judge gpt-judge"),
    ],
)
def test_bad_criteria_are_refused_in_words_and_nothing_is_started(keys, said):
    lead, rv, judge, eval_set = candidate()
    with pytest.raises(AuditPlanError, match=said):
        group_of(lead, rv, judge, eval_set, keys=keys)
    assert not AuditPlanGroup.objects.exists() and not AuditPlan.objects.exists()


def test_an_open_plan_on_one_criterion_refuses_the_group_and_starts_none_of_it():
    lead, rv, judge, eval_set = candidate()
    alone = start_plan(criterion=rv.criteria.get(key=OTHER), eval_set=eval_set, judge_config=judge, by=lead, seed=7)
    with pytest.raises(AuditPlanError, match="next_step: next_step on rc-1 with gpt-judge already has an open audit"):
        group_of(lead, rv, judge, eval_set)
    assert list(AuditPlan.objects.values_list("pk", flat=True)) == [alone.pk]
    assert not AuditPlanGroup.objects.exists()


def test_only_a_lead_starts_a_group_and_a_stratified_one_is_refused_for_now():
    lead, rv, judge, eval_set = candidate()
    reviewer = make.make_user("rita", Role.REVIEWER)
    with pytest.raises(AuditPlanError, match="Only a lead"):
        group_of(reviewer, rv, judge, eval_set)
    with pytest.raises(AuditPlanError, match="uniform for now"):
        start_group(
            criteria=list(rv.criteria.filter(key__in=[KEY, OTHER])),
            eval_set=eval_set,
            judge_config=judge,
            by=lead,
            design="stratified",
        )
    assert not AuditPlanGroup.objects.exists() and not AuditPlan.objects.exists()


def test_the_worker_stores_the_shared_decision_with_its_gold_state():
    _lead, _rv, group = fail_on_next_step()
    figures = group.figures
    # The hand-worked decision (the module's docstring), the same as shared_reading's on these plans.
    rows = {r["criterion"]: r for r in figures["criteria"]}
    assert (rows[KEY]["decided"], rows[KEY]["decided_at"], rows[KEY]["decided_by"]) == ("PASS", 20, "exact")
    assert (rows[OTHER]["decided"], rows[OTHER]["decided_at"], rows[OTHER]["decided_by"]) == ("FAIL", 20, "test")
    assert (figures["decided"], figures["decided_at"], figures["deciding"]) == ("FAIL", 20, [OTHER])
    assert (figures["alpha_pass"], figures["alpha_fail"]) == pytest.approx((0.025, 0.0125))
    assert group_figures.release_words(figures).startswith("FAIL came from next_step at label 20")
    reading = shared_reading(list(group.plans.order_by("criterion__order")))
    assert rows[OTHER]["upper"] == pytest.approx(reading.criteria[1].decision.upper)
    assert group.is_current and group.gold_state == group_figures.group_state(group, list(group.plans.all()))


def test_a_change_to_any_plan_s_gold_makes_the_group_s_figures_behind_until_a_worker_computes_them(monkeypatch):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    release_group_next(group=group, by=lead, k=25)
    sent: list[int] = []
    monkeypatch.setattr(group_figures, "send", sent.append)  # no worker: the change is only seen
    label(rv, in_order(group.plans.first())[:1], {KEY: "PASS", OTHER: "FAIL"})
    group.refresh_from_db()
    assert not group.is_current and sent and set(sent) == {group.pk}
    assert group.gold_state != group_figures.group_state(group, list(group.plans.all()))
    # The worker's part: current again, of today's gold.
    assert group_figures.recompute(group.pk) == 1
    group.refresh_from_db()
    assert group.is_current and group.gold_state == group_figures.group_state(group, list(group.plans.all()))
    assert group_figures.recompute(group.pk) == 0  # nothing new: nothing computed


def test_a_decided_group_releases_no_more_and_closing_closes_every_plan():
    lead, _rv, group = fail_on_next_step()
    released = AuditOrder.objects.get(pk=group.plans.first().order_id).released
    with pytest.raises(AuditPlanError, match="is decided: FAIL came from next_step"):
        release_group_next(group=group, by=lead, k=5)
    assert AuditOrder.objects.get(pk=group.plans.first().order_id).released == released
    close_group(group=group, by=lead)
    assert group.closed_at is not None and not group.plans.filter(closed_at__isnull=True).exists()


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("audit_plan", *args, stdout=out)
    return out.getvalue()


CREATE = ["create", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--by", "lee", "--seed", "7"]


def test_the_command_starts_a_group_and_shows_its_shared_decision_in_text_and_json():
    _lead, rv, _judge, _eval_set = candidate()
    said = command(*CREATE, "--criterion", KEY, "--criterion", OTHER)
    group = AuditPlanGroup.objects.get()
    assert said.startswith(f"audit group {group.pk} of 2 criteria on rc-1: correct_amount plan ")
    assert "PASS at 0.025, FAIL at 0.0125 (alpha / 2)" in said
    plan = group.plans.first()
    release_group_next(group=group, by=group.created_by, k=25)
    label(rv, in_order(plan)[:25], {KEY: "PASS", OTHER: "FAIL"})
    text = command("show", "--group", str(group.pk))
    assert "release: FAIL came from next_step at label 20" in text
    assert "next_step (plan" in text and "FAIL at label 20; interval [" in text
    answer = json.loads(command("show", "--group", str(group.pk), "--format", "json"))
    assert (answer["k"], answer["shared"]["decided"], answer["shared"]["deciding"]) == (2, "FAIL", [OTHER])
    assert answer["freshness"]["current"] is True


def test_the_command_s_gating_flag_takes_every_gating_criterion_and_bad_input_is_refused():
    candidate()
    with pytest.raises(CommandError, match="drop --min-pass-rate"):
        command(*CREATE, "--criterion", KEY, "--criterion", OTHER, "--min-pass-rate", "0.6")
    with pytest.raises(CommandError, match="unknown criterion 'nope'"):
        command(*CREATE, "--criterion", KEY, "--criterion", "nope")
    with pytest.raises(CommandError, match="no audit group 99"):
        command("show", "--group", "99")
    assert not AuditPlanGroup.objects.exists()
    command(*CREATE, "--gating")
    assert sorted(AuditPlanGroup.objects.get().plans.values_list("criterion__key", flat=True)) == [KEY, OTHER]


# The gate: FIRST_20 and its capitals are test_gate_audit_levels.py's, worked by hand there: next_step's FAIL capital
# on these 20 labels is 50.1, past 1 / 0.025 = 40 and short of 1 / 0.0125 = 80.


def only_next_step_audited(together: bool):
    """Both criteria gate, but only next_step's policy decides on an audit (the gate's own k is 1); the judge failed
    every output on next_step. Both audited together in a group (k = 2), or each in a plan alone."""
    lead = make.make_user("lee", Role.LEAD)
    rv = make.make_rubric_version(name="refund")
    judge = make.make_judge("gpt-judge")
    make.mark_as_gating(rv, judge, [KEY, OTHER], make.make_eval_set("cal"), by=lead, min_pass_rate=0.5)
    GatingMark.objects.filter(criterion__key=OTHER).update(decide_on="audit")
    eval_set = make.make_eval_set("rc-1")
    make.bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": 40}, OTHER: {"FAIL": 40}})
    make.open_queue(eval_set, rv, lead)
    if together:
        plan = group_of(lead, rv, judge, eval_set).plans.first()
    else:
        plan = start_plan(criterion=rv.criteria.get(key=OTHER), eval_set=eval_set, judge_config=judge, by=lead, seed=7)
    AuditOrder.objects.filter(pk=plan.order_id).update(released=40)
    for output, said in zip(in_order(plan)[:20], FIRST_20, strict=True):
        outcomes = {KEY: "PASS", OTHER: "PASS" if said == "P" else "FAIL"}
        make.annotate(output, rv, make.annotator("amy"), 1, outcomes)
        make.annotate(output, rv, make.annotator("bo"), 2, outcomes)


def test_the_gate_reads_a_group_s_plan_at_the_group_s_stored_levels():
    only_next_step_audited(together=True)
    code, answer, err = gate()
    # k = 2 from the group: next_step's FAIL capital 50.1 is short of 80, so the gate waits.
    assert code == 2 and answer["passed"] is None
    assert "reads each FAIL at 0.0125" in err


def test_the_same_labels_on_a_plan_alone_fail_the_gate_at_alpha_as_a_negative_control():
    only_next_step_audited(together=False)
    code, answer, _ = gate()
    assert code == 1 and answer["failed_criteria"] == [OTHER]
    row = next(r for r in answer["criteria"] if r["criterion"] == OTHER)
    assert (row["audit_k"], row["audit_alpha_fail"]) == (1, pytest.approx(0.025))
