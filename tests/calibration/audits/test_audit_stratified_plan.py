"""Stratified audit plans (issue 22; stats/audit_strata.py wired into audits/plans.py and figures.py): the judge's
verdicts split the candidate when the plan starts, each release takes the plan's next outputs in the order whatever
their strata (issue 41: tests/calibration/audits/test_audit_blind_releases.py), Next hands out exactly those, and the
figures read them
in release order."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from calibration.audits.figures import plan_figures
from calibration.audits.plans import AuditPlanError, close_plan, release_plan_next, start_plan
from calibration.models import AuditPlan
from evals.models import Role, User
from judging.models import Verdict
from labeling.audit_order import release_next
from labeling.models import AuditOrderItem
from labeling.queue import claim_next, current_queue
from tests.audit_helpers import KEY, gold, in_order, one_label
from tests.factories import (
    annotator,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    mark_as_gating,
    open_queue,
)

pytestmark = pytest.mark.django_db


def mixed(passes: int = 24, fails: int = 16, min_pass_rate: float = 0.3):
    """A gating criterion and a candidate of passes + fails outputs: the judge passed the first `passes`."""
    lead = User.objects.filter(username="lee").first() or make_user("lee", Role.LEAD)
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    mark_as_gating(rv, judge, [KEY], make_eval_set("cal"), by=lead, min_pass_rate=min_pass_rate)
    eval_set = make_eval_set("rc-1")
    outputs = bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": passes, "FAIL": fails}})
    open_queue(eval_set, rv, lead)
    return lead, rv, judge, eval_set, outputs


def start(lead, rv, judge, eval_set, **options):
    return start_plan(
        criterion=rv.criteria.get(key=KEY),
        eval_set=eval_set,
        judge_config=judge,
        by=lead,
        seed=options.pop("seed", 7),
        design="stratified",
        **options,
    )


def test_the_strata_are_the_judges_verdicts_frozen_when_the_plan_starts():
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    judged_pass = {o.pk for o in outputs[:24]}
    expected = "".join("0" if o.pk in judged_pass else "1" for o in in_order(plan))
    assert plan.strata == expected and plan.path == ""
    # The judge changes its mind afterwards: the plan's strata do not move (its path was chosen on them).
    Verdict.objects.filter(output__in=outputs[:24]).update(outcome="FAIL")
    plan.refresh_from_db()
    assert plan.strata == expected
    f = plan_figures(plan)
    assert (f.design, f.strata_sizes, f.strata_labeled, f.released, f.n_labeled) == (
        "stratified",
        (24, 16),
        (0, 0),
        0,
        0,
    )


def test_a_release_takes_each_sides_next_outputs_in_the_order_and_next_hands_out_exactly_those():
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    release_plan_next(plan=plan, by=lead, k=10)
    plan.refresh_from_db()
    assert len(plan.path) == 10
    order = in_order(plan)
    strata = [order[i] for i in range(len(order))]
    sides = {h: [o.pk for o, s in zip(strata, plan.strata, strict=True) if s == h] for h in "01"}
    taken = {h: sides[h][: plan.path.count(h)] for h in "01"}
    # Each side's next outputs in the order's sequence, and nothing else.
    released = set(AuditOrderItem.objects.filter(order=plan.order, released=True).values_list("output_id", flat=True))
    assert released == set(taken["0"]) | set(taken["1"])
    assert plan.order.released == 0  # the order's own counter: a uniform plan on it still has nothing
    # The plan's first 10 outputs in the order, whatever their strata.
    assert plan.path == plan.strata[:10]
    # Next hands out the released outputs, lowest position first, and nothing beyond them.
    queue = current_queue(eval_set)
    handed = []
    for name in ("amy", "bo"):
        user = annotator(name)
        while (claim := claim_next(user=user, queue=queue)) is not None:
            handed.append(claim.annotation.output_id)
            claim.annotation.status = "submitted"
            claim.annotation.reserved_until = None
            claim.annotation.save()
    assert sorted(set(handed)) == sorted(released) and len(handed) == 20
    positions = dict(AuditOrderItem.objects.filter(order=plan.order).values_list("output_id", "position"))
    amy = handed[:10]
    assert [positions[o] for o in amy] == sorted(positions[o] for o in amy)


def test_labels_arrive_and_the_plan_decides_by_the_exact_rule_worked_by_hand():
    # N = 40 at minimum 0.3: 12 gold passes (0.3 x 40) settle PASS whatever the other 28 are.
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    release_plan_next(plan=plan, by=lead, k=25)
    plan.refresh_from_db()
    released = [o for o in outputs if AuditOrderItem.objects.filter(order=plan.order, output=o, released=True).exists()]
    for output in released[:11]:
        gold(plan_candidate(rv), output, "PASS")
    f = plan_figures(plan)
    assert f.decided is None and f.n_gold == 11
    gold(plan_candidate(rv), released[11], "PASS")
    f = plan_figures(plan)
    assert (f.decided, f.decided_by, f.n_gold) == ("PASS", "exact", 12)
    assert f.lower >= 0.3 and f.upper <= 1.0
    with pytest.raises(AuditPlanError, match="is decided: PASS"):
        release_plan_next(plan=plan, by=lead, k=5)


def test_a_pending_label_counts_against_both_decisions_and_the_labeled_part_ends_at_the_last_touched():
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    release_plan_next(plan=plan, by=lead, k=10)
    plan.refresh_from_db()
    items = AuditOrderItem.objects.filter(order=plan.order, released=True).select_related("output")
    first = sorted(items, key=lambda i: i.position)[0].output
    one_label(plan_candidate(rv), first, "PASS")
    f = plan_figures(plan)
    assert f.n_pending == 1 and f.n_gold == 0 and 1 <= f.n_labeled <= 10 and f.released == 10


def test_a_stratified_plan_needs_the_judges_verdicts_and_nothing_is_written_without_them():
    lead, rv, judge, eval_set, outputs = mixed()
    Verdict.objects.filter(output__in=outputs).delete()
    with pytest.raises(AuditPlanError, match="splits the candidate by the judge's verdicts"):
        start(lead, rv, judge, eval_set)
    assert not AuditPlan.objects.exists()


def test_a_uniform_plan_on_the_same_order_reads_only_its_prefix():
    lead, rv, judge, eval_set, outputs = mixed()
    stratified = start(lead, rv, judge, eval_set)
    other = make_judge("other-judge")
    mark_as_gating(rv, other, [KEY], make_eval_set("cal-2"), by=lead, min_pass_rate=0.3)
    uniform = start_plan(
        criterion=rv.criteria.get(key=KEY), eval_set=eval_set, judge_config=other, by=lead, design="uniform"
    )
    assert uniform.order_id == stratified.order_id
    release_plan_next(plan=stratified, by=lead, k=8)
    for item in AuditOrderItem.objects.filter(order=stratified.order, released=True).select_related("output"):
        gold(plan_candidate(rv), item.output, "PASS")
    # The uniform plan released nothing: the stratified plan's labels are outside its prefix.
    assert plan_figures(uniform).n_labeled == 0
    release_next(order=uniform.order, k=3)
    assert plan_figures(uniform).released == 3


def test_the_command_starts_a_uniform_plan_by_default_and_a_stratified_one_when_asked(capsys):
    # Issue 41: since releases are blind, the uniform design costs fewer labels on most sets: the default.
    lead, rv, judge, eval_set, outputs = mixed()
    ask = ("audit_plan", "create", "--eval-set", "rc-1", "--rubric", rv.ref, "--judge", "gpt-judge")
    call_command(*ask, "--criterion", KEY, "--by", "lee", "--seed", "3")
    default = AuditPlan.objects.get(pk=capsys.readouterr().out.strip())
    assert default.design == "uniform"
    close_plan(plan=default, by=lead)
    call_command(*ask, "--criterion", KEY, "--by", "lee", "--seed", "3", "--design", "stratified")
    plan_id = capsys.readouterr().out.strip()
    assert AuditPlan.objects.get(pk=plan_id).design == "stratified"
    call_command("audit_plan", "next", plan_id, "-k", "10")
    out = capsys.readouterr().out
    assert "may now hand out 10 of the plan's 40 outputs:" in out and "of the 24 the judge passed" in out


def plan_candidate(rv):
    """What audit_helpers.gold needs of a candidate: the rubric version."""

    class _C:
        rubric_version = rv

    return _C()


@pytest.mark.slow
def test_a_stratified_plan_starts_on_a_candidate_past_the_old_limit_of_4000_outputs_and_reads_its_figures():
    # Stratified plans were refused above 4,000 outputs (their figures took minutes there); now any size starts.
    lead, rv, judge, eval_set, outputs = mixed(passes=3001, fails=1100)
    plan = start(lead, rv, judge, eval_set)
    assert len(plan.strata) == 4101 and plan.strata.count("0") == 3001
    figures = plan_figures(plan)
    assert (figures.N, figures.strata_sizes, figures.n_labeled, figures.decided) == (4101, (3001, 1100), 0, None)
    assert figures.forecast.expected_labels > 0


def test_an_unknown_design_is_refused_by_the_service_and_the_command_and_nothing_is_written():
    from django.core.management.base import CommandError

    lead, rv, judge, eval_set, outputs = mixed()
    with pytest.raises(AuditPlanError, match="The design is one of stratified, uniform, not 'random'"):
        start_plan(criterion=rv.criteria.get(key=KEY), eval_set=eval_set, judge_config=judge, by=lead, design="random")
    with pytest.raises(CommandError, match="invalid choice: 'random'"):
        call_command(
            "audit_plan", "create", "--eval-set", "rc-1", "--rubric", rv.ref, "--judge", "gpt-judge",
            "--criterion", KEY, "--by", "lee", "--design", "random",
        )  # fmt: skip
    assert not AuditPlan.objects.exists()


def test_the_plans_list_says_what_a_stratified_plan_released_not_the_orders_own_counter(client):
    """The list read the order's counter, which a stratified plan leaves at 0: "0 of 40" beside labeled outputs."""
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    release_plan_next(plan=plan, by=lead, k=10)
    plan.refresh_from_db()
    assert plan.order.released == 0 and plan.released_of == (10, 40)
    client.force_login(lead)
    body = client.get("/calibration/audits/").content.decode()
    # Released 10 of 40; "0 of 40" once, the labeled column's (the order's counter made it twice).
    assert '<td class="num">10 of 40</td>' in body and body.count('<td class="num">0 of 40</td>') == 1
