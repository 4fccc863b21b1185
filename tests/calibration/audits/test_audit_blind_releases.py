"""A stratified audit's releases carry no signal of the judge's verdict (issue 41, item 1).

Annotators and reviewers are blind to the judge so that gold does not anchor on it. A stratified plan used to
release each batch from one stratum (all judged PASS, or all the rest), so anyone who knew the design knew the
judge's verdict on every output of a batch. Now a release is the plan's next outputs in the order, whatever the
labels say, and the test counts them in that order. These tests walk real plans through Next.

Negative control: on the code before the fix the releases were chosen by the labels (audit_strata.plan_next), so
two worlds whose gold points to opposite sides were handed different outputs, each release after the first was all
one stratum, and the tests below failed there (checked before the fix).
"""

from __future__ import annotations

import pytest
from scipy.stats import fisher_exact

from calibration.audits.figures import plan_figures
from calibration.audits.plans import release_plan_next, start_plan
from evals.models import Role
from labeling.models import AuditOrderItem, Label
from labeling.queue import claim_next, current_queue
from tests.audit_helpers import KEY
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

# 24 of the 40 outputs judged PASS: the judge-PASS share of the whole candidate is 0.6.
PASSES, FAILS = 24, 16
MINIMUM = 0.5


@pytest.fixture
def gating():
    """A lead, a rubric version whose criterion gates with a judge, and a maker of candidates."""
    lead = make_user("lee", Role.LEAD)
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    mark_as_gating(rv, judge, [KEY], make_eval_set("cal"), by=lead, min_pass_rate=0.3)
    return lead, rv, judge


def walk(gating, name: str, seed: int, *, judge_right: bool, releases: int, k: int):
    """A stratified plan on a fresh candidate: `releases` times, "Label these k next", then two annotators click Next
    until it hands out nothing and label what they get (gold: the judge's verdict when `judge_right`, else its
    opposite, so the labels point to PASS in one world and to FAIL in the other). Per release: the outputs the first
    annotator was handed in Next's order, their judge verdicts, and the side the labels pointed to before it."""
    lead, rv, judge = gating
    eval_set = make_eval_set(name)
    outputs = bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": PASSES, "FAIL": FAILS}})
    verdict = {o.pk: ("PASS" if i < PASSES else "FAIL") for i, o in enumerate(outputs)}
    truth = {pk: v if judge_right else ("FAIL" if v == "PASS" else "PASS") for pk, v in verdict.items()}
    open_queue(eval_set, rv, lead)
    plan = start_plan(
        criterion=rv.criteria.get(key=KEY), eval_set=eval_set, judge_config=judge, by=lead, seed=seed,
        design="stratified", min_pass_rate=MINIMUM,
    )  # fmt: skip
    queue = current_queue(eval_set)
    criterion = rv.criteria.get(key=KEY)
    walked = []
    for _ in range(releases):
        before = plan_figures(plan, k=k)
        side = None if before.estimate is None else ("PASS" if before.estimate >= MINIMUM else "FAIL")
        release_plan_next(plan=plan, by=lead, k=k)
        handed: dict[str, list[int]] = {}
        for person in ("amy", "bo"):
            user = annotator(person)
            handed[person] = []
            while (claim := claim_next(user=user, queue=queue)) is not None:
                output_id = claim.annotation.output_id
                Label.objects.create(annotation=claim.annotation, criterion=criterion, outcome=truth[output_id])
                claim.annotation.status = "submitted"
                claim.annotation.reserved_until = None
                claim.annotation.save()
                handed[person].append(output_id)
        walked.append((handed["amy"], [verdict[o] for o in handed["amy"]], side))
    return plan, walked, {o.pk: i for i, o in enumerate(outputs)}


@pytest.mark.slow
def test_next_hands_out_the_same_outputs_whether_the_labels_point_to_pass_or_to_fail(gating):
    for seed in (3, 11):
        plan, right, rank_of = walk(gating, f"rc-right-{seed}", seed, judge_right=True, releases=3, k=8)
        _, wrong, rank_of_wrong = walk(gating, f"rc-wrong-{seed}", seed, judge_right=False, releases=3, k=8)
        # The two worlds' labels point to opposite sides once there are labels...
        assert [side for _, _, side in right[1:]] == ["PASS", "PASS"]
        assert [side for _, _, side in wrong[1:]] == ["FAIL", "FAIL"]
        # ...and Next hands out the same outputs in the same order: which output comes next is independent of what
        # the labels (and so the judge's verdicts behind the strata) say. The candidates are two eval sets made the
        # same way (the seeded order sorts outputs by id first), so outputs are compared by their rank in creation.
        assert [[rank_of[o] for o in handed] for handed, _, _ in right] == [
            [rank_of_wrong[o] for o in handed] for handed, _, _ in wrong
        ]
        # It is the order itself, 8 positions a release: what a uniform plan on the same order hands out.
        order = list(
            AuditOrderItem.objects.filter(order=plan.order).order_by("position").values_list("output_id", flat=True)
        )
        assert [o for handed, _, _ in right for o in handed] == order[:24]
        for i, (handed, _, _) in enumerate(right):
            assert handed == order[8 * i : 8 * (i + 1)]


@pytest.mark.slow
def test_the_judge_pass_share_of_a_release_does_not_depend_on_the_side_the_labels_point_to(gating):
    # 8 seeded plans in each world, 3 releases of 10; the releases after the first (labels before them) are counted
    # by the side the labels pointed to then and by the judge's verdict on each output handed out.
    table = {"PASS": [0, 0], "FAIL": [0, 0]}  # side -> [judged PASS, judged FAIL] handed out
    for seed in range(8):
        for judge_right in (True, False):
            name = f"rc-{seed}-{judge_right}"
            _, walked, _ = walk(gating, name, 100 + seed, judge_right=judge_right, releases=3, k=10)
            for handed, verdicts, side in walked[1:]:
                assert len(handed) == 10 and side is not None
                table[side][0] += verdicts.count("PASS")
                table[side][1] += verdicts.count("FAIL")
    # 160 outputs handed out on each side. Each release is 10 positions of a uniformly random order: its judged-PASS
    # count is hypergeometric (40 outputs, 24 judged PASS), whatever the side. Before the fix a release after the
    # first was 9 of one stratum and 1 of the other (each stratum's floor of a tenth): 120 of 160 judged PASS on
    # both sides here, a share of 0.75 where the candidate's is 0.6.
    for side in ("PASS", "FAIL"):
        share = table[side][0] / sum(table[side])
        # 0.6 expected; 160 draws (without replacement within a release) have a standard error under 0.04.
        assert 0.6 - 0.12 <= share <= 0.6 + 0.12, (side, table)
    assert fisher_exact([table["PASS"], table["FAIL"]]).pvalue > 0.05, table


def test_a_release_is_the_plans_next_outputs_in_the_order_and_its_count_is_what_the_lead_asked(gating):
    plan, walked, _ = walk(gating, "rc-count", 5, judge_right=True, releases=2, k=7)
    plan.refresh_from_db()
    assert len(plan.path) == 14 and plan.path == plan.strata[:14]
    assert [len(handed) for handed, _, _ in walked] == [7, 7]
    f = plan_figures(plan)
    assert f.released == 14 and f.strata_labeled == (plan.strata[:14].count("0"), plan.strata[:14].count("1"))
