"""Builders for audit plan tests (issue 22): a calibrated gating criterion and a candidate eval set to audit."""

from __future__ import annotations

from dataclasses import dataclass

from calibration.audits.plans import start_plan
from evals.models import EvalSet, Output, Role, RubricVersion, User
from labeling.audit_order import release_next
from labeling.models import AuditOrderItem

from .factories import (
    adjudicate,
    annotate,
    annotator,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    mark_as_gating,
    open_queue,
)

KEY = "correct_amount"


@dataclass
class Candidate:
    eval_set: EvalSet
    calibration: EvalSet
    rubric_version: RubricVersion
    judge: object
    outputs: list[Output]
    lead: User


def candidate(n: int = 40, judge_says: str = "PASS", min_pass_rate: float = 0.5, **mark) -> Candidate:
    """A rubric version whose `correct_amount` gates with a judge (marked on a calibration set), and a candidate
    eval set of `n` outputs the judge graded `judge_says` on that criterion, its queue open."""
    lead = User.objects.filter(username="lee").first() or make_user("lee", Role.LEAD)
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    calibration = make_eval_set("cal")
    mark_as_gating(rv, judge, [KEY], calibration, by=lead, min_pass_rate=min_pass_rate, **mark)
    eval_set = make_eval_set("rc-1")
    outputs = bulk_verdicts(eval_set, rv, judge, {KEY: {judge_says: n}})
    open_queue(eval_set, rv, lead)
    return Candidate(eval_set, calibration, rv, judge, outputs, lead)


def plan_on(c: Candidate, release: int | None = None, **options):
    plan = start_plan(
        criterion=c.rubric_version.criteria.get(key=KEY),
        eval_set=c.eval_set,
        judge_config=c.judge,
        by=c.lead,
        seed=options.pop("seed", 7),
        **options,
    )
    if release:
        release_next(order=plan.order, k=release)
    return plan


def in_order(plan) -> list[Output]:
    items = AuditOrderItem.objects.filter(order=plan.order).select_related("output").order_by("position")
    return [item.output for item in items]


def gold(c: Candidate, output: Output, outcome: str, second: str | None = None) -> None:
    """Both annotators label `output` on the criterion; `second` differs for a disagreement (pending gold)."""
    annotate(output, c.rubric_version, annotator("amy"), 1, {KEY: outcome})
    annotate(output, c.rubric_version, annotator("bo"), 2, {KEY: second or outcome})


def one_label(c: Candidate, output: Output, outcome: str) -> None:
    annotate(output, c.rubric_version, annotator("amy"), 1, {KEY: outcome})


def settle(c: Candidate, output: Output, outcome: str) -> None:
    reviewer = User.objects.filter(username="rey").first() or make_user("rey", Role.REVIEWER)
    adjudicate(output, c.rubric_version, KEY, outcome, reviewer)


def one_pass_short(release: int = 40) -> tuple[Candidate, object, list[Output]]:
    """N = 40 at minimum 0.5 with `release` of the order released and its first 19 gold PASS: one pass short of
    the exact rule (20 = 0.5 x 40), and of the tests' 20 gold items. The candidate, the plan, the order."""
    c = candidate(n=40)
    plan = plan_on(c, release=release)
    order = in_order(plan)
    for output in order[:19]:
        gold(c, output, "PASS")
    return c, plan, order
