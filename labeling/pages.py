"""What the labeling and adjudication pages render, built with a fixed number of queries.

Kept apart from views.py so the views stay thin and the query budget of each page
is visible in one place; never one query per criterion or output. The labeling page
itself is labeling.annotation_page's; here is what the save endpoint answers with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from . import queue as q
from .adjudicate import item_view
from .annotate import OUTCOME_KEYS, criterion_states
from .forms import AdjudicationForm
from .models import Annotation, Criterion, EvalSet, LabelingQueue, Output, RubricVersion
from .naming import output_name, output_names
from .transcript import highlight, render_json

OUTCOMES = OUTCOME_KEYS  # (value, label people see, key that picks it on the labeling page)


def transcript_parts(output: Output, quotes: dict[str, str] | None = None) -> dict:
    """Input, tool calls with results, response (quotable, optionally highlighted) and the reference (not quotable)."""
    quotes = quotes or {}

    def mark(text: str):
        # Without quotes there is nothing to mark: escaping is all highlight() would do, at a
        # fraction of its per-character cost on a long transcript.
        return highlight(text, quotes) if quotes else escape(text)

    calls = [
        {
            "name": mark(str(call.get("name", ""))),
            "args": mark(render_json(call.get("args", ""))),
            "result": mark(render_json(call.get("response", ""))),
        }
        for call in output.tool_calls or []
    ]
    return {
        "input": mark(output.case.input),
        "tool_calls": calls,
        "response": mark(output.response),
        "reference": output.case.reference,
    }


def transcript_html(parts: dict) -> SafeString:
    """The transcript as the labeling and adjudication pages show it, from transcript_parts.

    Built here rather than by a template: it is on every labeling page, and the template engine took
    ~0.3 ms of the page's CPU for these few elements (measured). Every text in `parts` but the
    reference is already escaped (and highlighted) by transcript_parts; format_html escapes the rest.
    Elements with class "quotable" are what evidence may quote; the reference is not part of the transcript.
    """
    calls = [
        format_html(
            '<div class="transcript-block tool" data-part="tool">\n'
            '  <h3>Tool call {} · <span class="tool-name quotable">{}</span></h3>\n'
            '  <div class="tool-io">\n'
            '    <div><span class="io-label">Arguments</span><pre class="quotable">{}</pre></div>\n'
            '    <div><span class="io-label">Result</span><pre class="quotable">{}</pre></div>\n'
            "  </div>\n"
            "</div>\n",
            number,
            call["name"],
            call["args"],
            call["result"],
        )
        for number, call in enumerate(parts["tool_calls"], start=1)
    ] or [mark_safe('<p class="muted quote-hint">No tool calls.</p>\n')]
    reference = ""
    if parts["reference"]:
        reference = format_html(
            '<div class="transcript-block reference" data-part="reference">\n'
            '  <h3>Reference <span class="muted">· what a correct answer contains (not part of the transcript, '
            "not quotable)</span></h3>\n"
            "  <pre>{}</pre>\n"
            "</div>\n",
            parts["reference"],
        )
    return format_html(
        '<div class="transcript-block" data-part="input">\n'
        "  <h3>Input</h3>\n"
        '  <pre class="quotable">{}</pre>\n'
        "</div>\n"
        "{}"
        '<div class="transcript-block response" data-part="response">\n'
        "  <h3>Response</h3>\n"
        '  <pre class="quotable">{}</pre>\n'
        "</div>\n"
        "{}",
        parts["input"],
        mark_safe("".join(calls)),  # noqa: S308 - each built by format_html above
        parts["response"],
        reference,
    )


def held_until(reserved_until) -> str:
    """Until when a case is held, as its page says it ("14:05", in the current time zone); "" if it is not."""
    if reserved_until is None:
        return ""
    # What the template filter time:"H:i" prints (24-hour, zero-padded), without its formatter's cost.
    return timezone.localtime(reserved_until).strftime("%H:%M")


def annotation_context(annotation: Annotation, *, correcting: bool = False) -> dict:
    """What the save endpoint's answer (one criterion's partial, and the reservation out of band) shows.
    The whole labeling page is labeling.annotation_page's."""
    stale = annotation.queue_rubric_version_id != annotation.rubric_version_id
    submitted = annotation.status == Annotation.Status.SUBMITTED
    states = criterion_states(annotation)
    criteria = [state.criterion for state in states]
    return {
        "annotation": annotation,
        "rubric_version": annotation.rubric_version,
        "stale": stale,
        "submitted": submitted,
        "correcting": correcting and submitted and not stale,
        "locked": stale or (submitted and not correcting),
        "criteria_by_key": {c.key: c for c in criteria},
        "states": states,
        "states_by_key": {s.criterion.key: s for s in states},
        "outcomes": OUTCOMES,
        "save_url": reverse("labeling:save_label", args=[annotation.pk]),
        "reservation_minutes": int(q.RESERVATION.total_seconds() // 60),
        "held_until": held_until(annotation.reserved_until),
    }


def adjudication_context(
    output: Output, criterion: Criterion, *, form: AdjudicationForm | None = None, error: str = ""
) -> dict:
    view = item_view(output, criterion)
    # Before two annotations are in, showing the first would unblind whoever takes the second slot.
    quotes = {side.css: side.evidence for side in view.sides if side.css} if view.ready else {}
    if form is None:
        current = view.current_gold
        initial = {"based_on": view.based_on}
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
        "transcript_html": transcript_html(transcript_parts(output, quotes)),
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


def pick_scope(request: HttpRequest) -> Scope:
    """From ?eval_set=&rubric_version=, defaulting to an open queue and its current rubric version."""
    eval_sets = list(EvalSet.objects.order_by("name"))
    by_id = {e.pk: e for e in eval_sets}
    wanted = by_id.get(_int(request.GET.get("eval_set")) or -1)
    queues = {queue.eval_set_id: queue for queue in q.open_queues()}
    if wanted is None:
        wanted = next((e for e in eval_sets if e.pk in queues), eval_sets[0] if eval_sets else None)
    versions = list(RubricVersion.objects.select_related("rubric").order_by("rubric__name", "created_at"))
    queue = queues.get(wanted.pk) if wanted else None
    version = next((v for v in versions if v.pk == _int(request.GET.get("rubric_version"))), None)
    if version is None and queue is not None:
        version = queue.rubric_version
    if version is None and versions:
        version = versions[-1]
    return Scope(eval_set=wanted, rubric_version=version, eval_sets=eval_sets, rubric_versions=versions, queue=queue)
