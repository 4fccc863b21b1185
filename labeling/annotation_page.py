"""What the labeling page shows, read with as few queries as possible: it is the page an annotator
opens for every case, all day long.

One query reads the annotation (only the requesting annotator's: anyone else gets a 404, the blind
rule of guards.own_annotation), its output and case, eval set, rubric version, the rubric version the
queue uses now, the output's name and whether any label is saved yet. The annotator's current labels
are a second query, made only when there are some. The criteria come from the per-rubric-version
cache of labeling.fragments (one more query when it is cold), which also holds each criterion's
unanswered form, so a freshly opened case renders almost no template.

The save endpoint keeps using pages.annotation_context (under the row lock of guards.own_annotation):
it needs the ORM objects to write, and answers with one criterion's partial only.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.http import Http404, HttpRequest
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone

from . import queue as q
from .annotate import CriterionState
from .fragments import criterion_forms
from .models import Annotation, Case, EvalSet, Label, Output, Rubric, RubricVersion, User
from .naming import output_name
from .pages import OUTCOMES, transcript_parts

# Written out in SQL: built through the ORM (joins, three correlated subqueries, an EXISTS) this one
# query cost more CPU than the rest of the page together. Plain SQL that SQLite and PostgreSQL both
# run; the blind rule is the `a.annotator_id` condition (someone else's annotation is not found).
# The two names are scalar subqueries rather than joins: PostgreSQL plans this query on every page
# load (no prepared statements), and each joined table made planning dearer than running it.
PAGE_SQL = """
SELECT a.id, a.status, a.reserved_until, a.submitted_at, a.output_id, a.rubric_version_id,
       o.response, o.tool_calls, o.case_id, c.case_id, c.input, c.reference, c.eval_set_id,
       (SELECT e.name FROM labeling_evalset e WHERE e.id = c.eval_set_id),
       rv.version, rv.instruction, rv.content_hash, rv.rubric_id,
       (SELECT r.name FROM labeling_rubric r WHERE r.id = rv.rubric_id),
       (SELECT q.rubric_version_id FROM labeling_labelingqueue q
         WHERE q.eval_set_id = c.eval_set_id AND q.is_current LIMIT 1),
       (SELECT COUNT(*) FROM labeling_output s WHERE s.case_id = o.case_id),
       (SELECT COUNT(*) FROM labeling_output s WHERE s.case_id = o.case_id AND s.id <= o.id),
       EXISTS (SELECT 1 FROM labeling_label l WHERE l.annotation_id = a.id AND l.is_current)
  FROM labeling_annotation a
  JOIN labeling_output o ON o.id = a.output_id
  JOIN labeling_case c ON c.id = o.case_id
  JOIN labeling_rubricversion rv ON rv.id = a.rubric_version_id
 WHERE a.id = %s AND a.annotator_id = %s
"""
COLUMNS = (
    "pk",
    "status",
    "reserved_until",
    "submitted_at",
    "output_id",
    "rubric_version_id",
    "response",
    "tool_calls",
    "case_pk",
    "case_id",
    "input",
    "reference",
    "eval_set_id",
    "eval_set_name",
    "version",
    "instruction",
    "content_hash",
    "rubric_id",
    "rubric_name",
    "queue_rubric_version_id",
    "answers",
    "answer_number",
    "has_labels",
)
# Columns whose database value needs the field's conversion (datetimes on SQLite, JSON everywhere).
CONVERTED = {
    "reserved_until": (Annotation, "reserved_until"),
    "submitted_at": (Annotation, "submitted_at"),
    "tool_calls": (Output, "tool_calls"),
}


@cache
def _converters(vendor: str) -> dict[str, tuple]:
    """What the ORM applies to each converted column on this database: (column expression, converters)."""
    result = {}
    for column, (model, name) in CONVERTED.items():
        col = model._meta.get_field(name).get_col(model._meta.db_table)
        result[column] = (col, connection.ops.get_db_converters(col) + col.get_db_converters(connection))
    return result


def _annotation_row(user: User, pk: int) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(PAGE_SQL, [pk, user.pk])
        found = cursor.fetchone()
    if found is None:
        raise Http404("No such annotation of yours. If it was a draft, its reservation may have lapsed.")
    row = dict(zip(COLUMNS, found, strict=True))
    for column, (col, converters) in _converters(connection.vendor).items():
        for converter in converters:
            row[column] = converter(row[column], col, connection)
    row["has_labels"] = bool(row["has_labels"])
    return row


def _objects(row: dict) -> tuple[Annotation, Output, RubricVersion]:
    """Model instances built from the row, for the template and transcript_parts (no further queries)."""
    eval_set = EvalSet(pk=row["eval_set_id"], name=row["eval_set_name"])
    case = Case(
        pk=row["case_pk"],
        eval_set=eval_set,
        case_id=row["case_id"],
        input=row["input"],
        reference=row["reference"],
    )
    output = Output(pk=row["output_id"], case=case, response=row["response"], tool_calls=row["tool_calls"])
    rubric = Rubric(pk=row["rubric_id"], name=row["rubric_name"])
    rubric_version = RubricVersion(
        pk=row["rubric_version_id"],
        rubric=rubric,
        version=row["version"],
        instruction=row["instruction"],
        content_hash=row["content_hash"],
    )
    annotation = Annotation(
        pk=row["pk"],
        output=output,
        rubric_version=rubric_version,
        status=row["status"],
        reserved_until=row["reserved_until"],
        submitted_at=row["submitted_at"],
    )
    annotation.queue_rubric_version_id = row["queue_rubric_version_id"]
    return annotation, output, rubric_version


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
    row = _annotation_row(request.user, pk)
    annotation, output, rubric_version = _objects(row)
    stale = annotation.queue_rubric_version_id != annotation.rubric_version_id
    submitted = annotation.status == Annotation.Status.SUBMITTED
    correcting = correcting and submitted and not stale
    locked = stale or (submitted and not correcting)
    labels = _current_labels(annotation.pk) if row["has_labels"] else {}
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
        "output_name": output_name(row["case_id"], row["answer_number"], row["answers"]),
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
