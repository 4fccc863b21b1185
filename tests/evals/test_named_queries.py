"""The repeated filters have names: each QuerySet method keeps exactly the rows its name says."""

from __future__ import annotations

import pytest
from django.utils import timezone

from judging.models import JudgeRun, Verdict
from labeling.models import Annotation, GoldDispute, GoldLabel, Label, LabelingQueue
from tests.factories import (
    add_verdict,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_run,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def scope():
    eval_set, rv = make_eval_set("es"), make_rubric_version("refund", "1")
    return eval_set, rv, make_output(eval_set), rv.criteria.order_by("order").first()


def test_submitted_labels_are_the_current_revisions_of_submitted_annotations(scope):
    _, rv, output, criterion = scope
    handed_in = Annotation.objects.create(
        output=output, rubric_version=rv, annotator=make_user("a"), slot=1, status="submitted"
    )
    draft = Annotation.objects.create(output=output, rubric_version=rv, annotator=make_user("b"), slot=2)
    old = Label.objects.create(annotation=handed_in, criterion=criterion, outcome="PASS", revision=1, is_current=False)
    corrected = Label.objects.create(annotation=handed_in, criterion=criterion, outcome="FAIL", revision=2)
    drafted = Label.objects.create(annotation=draft, criterion=criterion, outcome="PASS")
    assert list(Annotation.objects.submitted()) == [handed_in]
    assert set(Label.objects.current()) == {corrected, drafted}
    assert list(Label.objects.submitted()) == [corrected]
    assert old not in Label.objects.submitted() and drafted not in Label.objects.submitted()


def test_current_gold_and_queue_are_the_rows_not_yet_replaced(scope, lead):
    eval_set, rv, output, criterion = scope
    was = GoldLabel.objects.create(
        output=output, rubric_version=rv, criterion=criterion, outcome="PASS", decided_by=lead, is_current=False
    )
    now = GoldLabel.objects.create(
        output=output, rubric_version=rv, criterion=criterion, outcome="FAIL", decided_by=lead, revision=2
    )
    assert list(GoldLabel.objects.current()) == [now] and was in GoldLabel.objects.all()
    closed = LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rv, opened_by=lead, is_current=False)
    open_ = LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rv, opened_by=lead)
    assert list(LabelingQueue.objects.current()) == [open_] and closed in LabelingQueue.objects.all()


def test_open_disputes_are_the_unresolved_ones(scope, lead):
    _, rv, output, criterion = scope
    other = make_output(scope[0], case_id="c-2")
    fields = dict(rubric_version=rv, criterion=criterion, disputed_outcome="PASS", reason="x", raised_by=lead)
    open_ = GoldDispute.objects.create(output=output, **fields)
    GoldDispute.objects.create(output=other, resolved_at=timezone.now(), resolved_by=lead, **fields)
    assert list(GoldDispute.objects.open()) == [open_]


def test_active_runs_are_queued_or_running_and_through_a_relation_too(scope):
    eval_set, rv, _, _ = scope
    judge = make_judge("j")
    runs = {status: make_run(eval_set, rv, judge) for status in JudgeRun.Status.values}
    for status, run in runs.items():
        JudgeRun.objects.filter(pk=run.pk).update(status=status)
    assert set(JudgeRun.objects.active()) == {runs["queued"], runs["running"]}
    assert set(JudgeRun.objects.filter(judge_config=judge).active()) == {runs["queued"], runs["running"]}


def test_counted_verdicts_leave_out_a_probe_arms(scope):
    eval_set, rv, output, criterion = scope
    run = make_run(eval_set, rv, make_judge("j"))
    counted = add_verdict(run, output, criterion.key, "PASS")
    probed = add_verdict(run, output, criterion.key, "FAIL", sample=1)
    Verdict.objects.filter(pk=probed.pk).update(probe="padding")
    assert list(Verdict.objects.counted()) == [counted]
