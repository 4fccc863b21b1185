"""What the labeling and adjudication pages render, built with a fixed number of queries.

Kept apart from views.py so the views stay thin and the query budget of each page
is visible in one place: the labeling page is the annotation (with output, case,
eval set, rubric version, rubric and the queue's current version in one query), the
criteria with the annotator's own labels, and the output's name; never one query per
criterion or output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from evals.models import Criterion, EvalSet, Output, RubricVersion, Workspace
from evals.naming import output_name, output_names
from evals.transcript import PREVIEW_CHARS, PREVIEW_TOOL_CALLS, Transcript, render_json, show
from evals.workspaces import in_workspace

from . import queue as q
from .adjudicate import item_view
from .annotate import OUTCOME_KEYS, criterion_states
from .forms import AdjudicationForm
from .models import Annotation, LabelingQueue

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    from .guards import AnswerPosition, QueueVersion

OUTCOMES = OUTCOME_KEYS  # (value, label people see, key that picks it on the labeling page)


def transcript_parts(
    output: Output, quotes: Mapping[str, str | list[str]] | None = None, *, full: bool = False
) -> dict:
    """Input, tool calls with results, response (quotable, optionally highlighted) and the reference (not quotable),
    each a transcript.Shown for templates/labeling/_transcript.html. Unless `full`, long texts and many tool
    calls are cut (PREVIEW_CHARS, PREVIEW_TOOL_CALLS)."""
    quotes = quotes or {}
    limit = None if full else PREVIEW_CHARS
    calls = list(output.tool_calls or [])
    shown_calls = calls if full else calls[:PREVIEW_TOOL_CALLS]
    return {
        "input": show(output.case.input, quotes, limit),
        "tool_calls": [
            {
                "name": show(str(call.get("name", "")), quotes, limit),
                "args": show(render_json(call.get("args", "")), quotes, limit),
                "result": show(render_json(call.get("response", "")), quotes, limit),
            }
            for call in shown_calls
        ],
        "tool_calls_hidden": len(calls) - len(shown_calls),
        "response": show(output.response, quotes, limit),
        "reference": show(output.case.reference, {}, limit),
    }


def full_url(request: HttpRequest) -> str:
    """This page with everything of the transcript shown (its "Show all" link)."""
    query = request.GET.copy()
    query["full"] = "1"
    return f"{request.path}?{query.urlencode()}#transcript"


def annotation_context(
    request: HttpRequest,
    annotation: WithAnnotations[Annotation, QueueVersion],
    *,
    correcting: bool = False,
    partial: bool = False,
) -> dict:
    """Everything the labeling page shows for `annotation` (read by guards.own_annotation).
    `partial`: only what one criterion's swap needs (the save endpoint's answer: fewer queries)."""
    eval_set = annotation.output.case.eval_set
    stale = annotation.queue_rubric_version_id != annotation.rubric_version_id
    submitted = annotation.status == Annotation.Status.SUBMITTED
    states = criterion_states(annotation)
    answered = sum(1 for s in states if s.label)
    held = annotation.reserved_until
    context = {
        "annotation": annotation,
        "rubric_version": annotation.rubric_version,
        "stale": stale,
        "submitted": submitted,
        "correcting": correcting and submitted and not stale,
        "locked": stale or (submitted and not correcting),
        "criteria_by_key": {s.criterion.key: s.criterion for s in states},
        "states": states,
        "states_by_key": {s.criterion.key: s for s in states},
        "outcomes": OUTCOMES,
        "save_url": reverse("labeling:save_label", args=[annotation.pk]),
        "reservation_minutes": int(q.RESERVATION.total_seconds() // 60),
        "reservation_lapsed": not submitted and held is not None and held <= timezone.now(),
    }
    if partial:
        return context
    context.update(
        {
            "output": annotation.output,
            "case": annotation.output.case,
            "eval_set": eval_set,
            # The queue row is only needed to say where the queue went (guards loaded its version id).
            "queue": q.current_queue(eval_set.pk) if stale else None,
            "answered": answered,
            "answered_pct": round(100 * answered / len(states)) if states else 0,
            "output_name": output_names([annotation.output_id])[annotation.output_id],
            "transcript": transcript_parts(annotation.output, full=request.GET.get("full") == "1"),
            "full_url": full_url(request),
        }
    )
    return context


def adjudication_context(
    request: HttpRequest,
    output: WithAnnotations[Output, AnswerPosition],
    criterion: Criterion,
    *,
    form: AdjudicationForm | None = None,
    error: str = "",
) -> dict:
    view = item_view(output, criterion)
    # Before two annotations are in, showing the first would unblind whoever takes the second slot.
    quotes = {side.css: side.quotes for side in view.sides if side.css} if view.ready else {}
    if view.ready:  # where each quote was found: the input, a tool call, the response
        transcript = Transcript.of(output)
        view.sides[:] = [
            replace(side, places=tuple(", ".join(transcript.found_in(q)) or "not found" for q in side.quotes))
            for side in view.sides
        ]
    if form is None:
        current = view.current_gold
        initial: dict[str, object] = {"based_on": view.based_on}
        if current is not None:
            initial["outcome"] = current.outcome
        form = AdjudicationForm(initial=initial)
    return {
        "output": output,
        "output_name": (
            output_name(output.case.case_id, output.answer_number, output.answers)
            if hasattr(output, "answers")
            else output_names([output.pk])[output.pk]
        ),
        "case": output.case,
        "criterion": criterion,
        "rubric_version": criterion.rubric_version,
        "view": view,
        "form": form,
        "error": error,
        "outcomes": OUTCOMES,
        "transcript": transcript_parts(output, quotes, full=request.GET.get("full") == "1"),
        "full_url": full_url(request),
        "eval_set": output.case.eval_set,
    }


@dataclass
class Scope:
    """The eval set and rubric version a staff page looks at, with the choices for the pickers."""

    eval_set: EvalSet | None
    rubric_version: RubricVersion | None
    eval_sets: list[EvalSet] = field(default_factory=list)
    rubric_versions: list[RubricVersion] = field(default_factory=list)
    queue: LabelingQueue | None = None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def pick_scope(request: HttpRequest, workspace: Workspace) -> Scope:
    """From ?eval_set=&rubric_version=, defaulting to an open queue and its current rubric version; only
    `workspace`'s eval sets and versions (another workspace's id in the address is ignored like an unknown one)."""
    eval_sets = list(in_workspace(EvalSet, workspace).order_by("name"))
    by_id = {e.pk: e for e in eval_sets}
    wanted = by_id.get(_int(request.GET.get("eval_set")) or -1)
    queues = {queue.eval_set_id: queue for queue in q.open_queues(workspace)}
    if wanted is None:
        wanted = next((e for e in eval_sets if e.pk in queues), eval_sets[0] if eval_sets else None)
    versions = list(
        in_workspace(RubricVersion, workspace).select_related("rubric").order_by("rubric__name", "created_at")
    )
    queue = queues.get(wanted.pk) if wanted else None
    version = next((v for v in versions if v.pk == _int(request.GET.get("rubric_version"))), None)
    if version is None and queue is not None:
        version = queue.rubric_version
    if version is None and versions:
        version = versions[-1]
    return Scope(eval_set=wanted, rubric_version=version, eval_sets=eval_sets, rubric_versions=versions, queue=queue)
