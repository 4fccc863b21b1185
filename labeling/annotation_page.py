"""What the labeling page shows, read with as few queries as possible: it is the page an annotator
opens for every case, all day long.

One query (guards.own_annotation with page=True, the statement save and submit use too) reads the
annotation (only the requesting annotator's: anyone else gets a 404, the blind rule), its output and
case, eval set, rubric version, the rubric version the queue uses now, the output's name and whether
any label is saved yet. The annotator's current labels
are a second query, made only when there are some. The criteria come from the per-rubric-version
cache of labeling.fragments (one more query when it is cold), which also holds each criterion's
unanswered form, so a freshly opened case renders almost no template.

The save endpoint keeps using pages.annotation_context (under the row lock of guards.own_annotation):
it needs the ORM objects to write, and answers with one criterion's partial only.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone

from . import queue as q
from .annotate import CriterionState
from .fragments import criterion_forms
from .guards import own_annotation
from .models import Annotation, Label
from .naming import output_name
from .pages import OUTCOMES, transcript_parts


def _current_labels(annotation_pk: int) -> dict[int, Label]:
    rows = Label.objects.filter(annotation_id=annotation_pk, is_current=True).values_list(
        "pk", "criterion_id", "outcome", "evidence", "revision"
    )
    return {
        criterion_id: Label(
            pk=pk,
            annotation_id=annotation_pk,
            criterion_id=criterion_id,
            outcome=outcome,
            evidence=evidence,
            revision=revision,
            is_current=True,
        )
        for pk, criterion_id, outcome, evidence, revision in rows
    }


def labeling_page_context(request: HttpRequest, pk: int, *, correcting: bool = False) -> dict:
    """Everything annotate.html shows for the requesting annotator's annotation `pk` (404 if not theirs)."""
    annotation = own_annotation(request.user, pk, page=True)
    output, rubric_version = annotation.output, annotation.rubric_version
    stale = annotation.queue_rubric_version_id != annotation.rubric_version_id
    submitted = annotation.status == Annotation.Status.SUBMITTED
    correcting = correcting and submitted and not stale
    locked = stale or (submitted and not correcting)
    labels = _current_labels(annotation.pk) if annotation.has_labels else {}
    forms = criterion_forms(rubric_version, label_criteria=labels.keys())
    save_url = reverse("labeling:save_label", args=[annotation.pk])
    csrf_token = get_token(request)  # one masked token for the whole page, as {% csrf_token %} gives
    states = []
    for number, form in enumerate(forms, start=1):
        # The cached form stands in for the Criterion: it carries what the partial shows of one.
        state = CriterionState(criterion=form, label=labels.get(form.pk), number=number)
        if state.label is None and not locked and not correcting:
            # Unanswered: the cached form, with this request's two values put in.
            state.blank_html = form.render_blank(save_url=save_url, csrf_token=csrf_token)
        states.append(state)
    answered = sum(1 for s in states if s.label)
    held = annotation.reserved_until
    return {
        "annotation": annotation,
        "output": output,
        "output_name": output_name(output.case.case_id, annotation.answer_number, annotation.answers),
        "case": output.case,
        "eval_set": output.case.eval_set,
        "rubric_version": rubric_version,
        # The queue row is only needed to say where the queue went.
        "queue": q.current_queue(output.case.eval_set.pk) if stale else None,
        "stale": stale,
        "submitted": submitted,
        "correcting": correcting,
        "locked": locked,
        "states": states,
        "states_by_key": {s.criterion.key: s for s in states},
        "answered": answered,
        "answered_pct": round(100 * answered / len(states)) if states else 0,
        "outcomes": OUTCOMES,
        "save_url": save_url,
        "csrf_token": csrf_token,
        "reservation_minutes": int(q.RESERVATION.total_seconds() // 60),
        "transcript": transcript_parts(output),
        "reservation_lapsed": not submitted and held is not None and held <= timezone.now(),
    }
