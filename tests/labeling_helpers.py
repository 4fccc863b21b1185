"""Builders shared by the labeling, adjudication and progress tests (plain functions, explicit arguments)."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from evals.models import Criterion, EvalSet, Output, RubricVersion, User
from labeling.models import Annotation, Label, LabelingQueue

from .factories import make_eval_set, make_output, make_rubric_version, make_user

RESPONSE = "I have issued a refund of $40.00. You will see it within 5 business days."


def six_criteria() -> list[dict]:
    return [
        {
            "key": f"crit_{i}",
            "definition": f"Criterion number {i} holds.",
            "pass_example": f"pass {i}",
            "fail_example": f"fail {i}",
        }
        for i in range(1, 7)
    ]


def open_queue(eval_set: EvalSet, rubric_version: RubricVersion, by: User | None = None) -> LabelingQueue:
    by = by or User.objects.filter(role="lead").first() or make_user("queue-lead", "lead")
    LabelingQueue.objects.filter(eval_set=eval_set, is_current=True).update(is_current=False)
    return LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rubric_version, opened_by=by)


def labeling_setup(n_outputs: int = 1, criteria: list[dict] | None = None, lead: User | None = None):
    """An eval set with `n_outputs` outputs, a rubric version, and its queue open."""
    eval_set = make_eval_set()
    rv = make_rubric_version(criteria=criteria)
    outputs = [make_output(eval_set, case_id=f"case-{i:03d}") for i in range(1, n_outputs + 1)]
    open_queue(eval_set, rv, lead)
    return eval_set, rv, outputs


def annotate_directly(
    output: Output,
    rubric_version: RubricVersion,
    annotator: User,
    answers: dict[str, tuple[str, str]],
    *,
    slot: int | None = None,
    submit: bool = True,
) -> Annotation:
    """Write an annotation straight to the database (for tests about reading, not about the forms)."""
    if slot is None:
        slot = Annotation.objects.filter(output=output, rubric_version=rubric_version).count() + 1
    annotation = Annotation.objects.create(
        output=output,
        rubric_version=rubric_version,
        annotator=annotator,
        slot=slot,
        status=Annotation.Status.SUBMITTED if submit else Annotation.Status.DRAFT,
        submitted_at=timezone.now() if submit else None,
        reserved_until=None if submit else timezone.now() + timedelta(minutes=30),
    )
    criteria = {c.key: c for c in Criterion.objects.filter(rubric_version=rubric_version)}
    for key, (outcome, evidence) in answers.items():
        Label.objects.create(annotation=annotation, criterion=criteria[key], outcome=outcome, evidence=evidence)
    return annotation


def all_answers(rubric_version: RubricVersion, outcome: str = "PASS", evidence: str = "NONE") -> dict:
    return {c.key: (outcome, evidence) for c in Criterion.objects.filter(rubric_version=rubric_version)}


def save_url(annotation: Annotation) -> str:
    return reverse("labeling:save_label", args=[annotation.pk])


def submit_url(annotation: Annotation) -> str:
    return reverse("labeling:submit", args=[annotation.pk])


def page_url(annotation: Annotation) -> str:
    return reverse("labeling:annotate", args=[annotation.pk])


def claim_via_next(client, user: User, eval_set: EvalSet) -> Annotation:
    """Sign `client` in as `user` and press Next: the annotation it reserved."""
    client.force_login(user)
    client.post(next_url(eval_set))
    return Annotation.objects.filter(annotator=user).latest("pk")


def next_url(eval_set: EvalSet) -> str:
    return reverse("labeling:next", args=[eval_set.pk])
