"""The labeling page, read with as few queries as possible: it is the page an annotator opens for every
case, all day long.

One query (guards.own_annotation with page=True, the statement save and submit use too; on PostgreSQL
part of the session's own read, see read_with_session) reads the annotation (only the requesting
annotator's: anyone else gets a 404, the blind rule), its output and case, eval set, rubric version,
the rubric version the queue uses now, the output's name and whether any label is saved yet. The
annotator's current labels are a second query, made only when there are some. The criteria come from
the per-rubric-version cache of labeling.fragments (one more query when it is cold).

A freshly opened case (a draft with nothing saved, still held, under the queue's rubric version) is
nearly every page view, and its page differs between cases only in a few values: it is filled in
from a shell rendered once per rubric version and person (labeling.page_shell). Every other state
is rendered by the template from `labeling_page_context`; tests check that both give the same page.

The save endpoint keeps using pages.annotation_context (under the row lock of guards.own_annotation):
it needs the ORM objects to write, and answers with one criterion's partial only.
"""

from __future__ import annotations

from functools import cache, wraps

from django.contrib.messages import get_messages
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import get_script_prefix, reverse
from django.utils import timezone

from config.context_processors import render_messages

from . import page_shell
from . import queue as q
from .annotate import CriterionState
from .csrf import page_token
from .fragments import criterion_forms
from .guards import own_annotation, page_along
from .models import Annotation, Label
from .naming import output_name
from .pages import OUTCOMES, held_until, transcript_html, transcript_parts
from .sessions import read_along


def read_with_session(view):
    """Outermost on the labeling page's view (before the login check reads the session): the page's annotation
    is read in the same statement as the session (labeling.sessions.read_along), one round trip instead of two."""

    @wraps(view)
    def wrapped(request: HttpRequest, pk: int, *args, **kwargs) -> HttpResponse:
        read_along(request.session, page_along(pk))
        return view(request, pk, *args, **kwargs)

    return wrapped


def labeling_page(request: HttpRequest, pk: int, *, correcting: bool = False) -> HttpResponse:
    """The requesting annotator's annotation `pk` (404 if not theirs), from the shell when it is a fresh case."""
    # The row the session read brought (read_with_session) is used only if it is `pk` and this user's.
    annotation = own_annotation(request.user, pk, page=True, row=getattr(request.session, "along_row", None))
    if not correcting and is_fresh(annotation):
        return HttpResponse(page_shell.fill(request, annotation, page_values(request, annotation)))
    return render(request, "labeling/annotate.html", labeling_page_context(request, annotation, correcting=correcting))


def is_fresh(annotation: Annotation) -> bool:
    """A held draft with no label yet, under the rubric version its queue uses: the page page_shell fills in."""
    held = annotation.reserved_until
    return (
        annotation.status == Annotation.Status.DRAFT
        and annotation.queue_rubric_version_id == annotation.rubric_version_id
        and not annotation.has_labels
        and held is not None
        and held > timezone.now()
    )


def page_values(request: HttpRequest, annotation: Annotation) -> dict:
    """What differs between two cases' pages besides the rubric and the person: the values page_shell fills in,
    as the template would print them (raw; page_shell escapes the text ones)."""
    case = annotation.output.case
    return {
        "annotation_pk": annotation.pk,
        "output_name": output_name(case.case_id, annotation.answer_number, annotation.answers),
        "eval_set_name": case.eval_set.name,
        "held_until": held_until(annotation.reserved_until),
        # One masked token for the whole page, as {% csrf_token %} gives (Django's, masked more cheaply).
        "csrf_token": page_token(request),
        "save_url": annotation_url("labeling:save_label", annotation.pk),
        "submit_url": annotation_url("labeling:submit", annotation.pk),
        "transcript_html": transcript_html(transcript_parts(annotation.output)),
        # Rendered here, not left to base.html's lazy one: the shell has a placeholder in its place.
        "messages_html": render_messages(get_messages(request)),
    }


def annotation_url(name: str, pk: int) -> str:
    """reverse(name, args=[pk]) for one of the annotation's URLs, from the URL reversed once per process (and
    script prefix) with a stand-in id: reversing costs more than a page's other values together (profiled)."""
    head, tail = _url_around_id(name, get_script_prefix())
    return f"{head}{int(pk)}{tail}"


@cache
def _url_around_id(name: str, prefix: str) -> tuple[str, str]:
    url = reverse(name, args=[_STAND_IN])
    head, found, tail = url.partition(str(_STAND_IN))
    if not found or _STAND_IN_TEXT in tail:
        raise ImproperlyConfigured(f"{name}'s URL does not hold the annotation id once: {url}")
    return head, tail


_STAND_IN = 987654321012
_STAND_IN_TEXT = str(_STAND_IN)


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


def labeling_page_context(request: HttpRequest, annotation: Annotation, *, correcting: bool = False) -> dict:
    """Everything annotate.html shows for `annotation` (read by guards.own_annotation with page=True)."""
    values = page_values(request, annotation)
    output, rubric_version = annotation.output, annotation.rubric_version
    stale = annotation.queue_rubric_version_id != annotation.rubric_version_id
    submitted = annotation.status == Annotation.Status.SUBMITTED
    correcting = correcting and submitted and not stale
    locked = stale or (submitted and not correcting)
    labels = _current_labels(annotation.pk) if annotation.has_labels else {}
    forms = criterion_forms(rubric_version, label_criteria=labels.keys())
    states = []
    for number, form in enumerate(forms, start=1):
        # The cached form stands in for the Criterion: it carries what the partial shows of one.
        state = CriterionState(criterion=form, label=labels.get(form.pk), number=number)
        if state.label is None and not locked and not correcting:
            # Unanswered: the cached form, with this request's two values put in.
            state.blank_html = form.render_blank(save_url=values["save_url"], csrf_token=values["csrf_token"])
        states.append(state)
    answered = sum(1 for s in states if s.label)
    held = annotation.reserved_until
    return {
        **values,
        "annotation": annotation,
        "output": output,
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
        "reservation_minutes": int(q.RESERVATION.total_seconds() // 60),
        "reservation_lapsed": not submitted and held is not None and held <= timezone.now(),
    }
