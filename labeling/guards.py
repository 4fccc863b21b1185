"""Who may open what: the blind rule and the adjudication rule, checked on the server.

Views fetch through these helpers, never with a bare `get_object_or_404`:

- An annotation page, its save and submit endpoints belong to the annotation's
  annotator only. For anyone else the annotation does not exist (404), so ids
  cannot be probed; not even a lead reads another person's draft through them.
- Adjudication is for reviewers and leads who did not label the output under
  that rubric version (they would be judging their own call).
"""

from __future__ import annotations

import functools

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404

from .access import has_role
from .models import (
    Annotation,
    Case,
    Criterion,
    EvalSet,
    Label,
    LabelingQueue,
    Output,
    Role,
    Rubric,
    RubricVersion,
    User,
)
from .rows import fetchone, instance


def own_annotation(
    user: User, pk: int, *, for_update: bool = False, page: bool = False, row: tuple | None = None
) -> Annotation:
    """The annotation with its output, case, eval set, rubric version and rubric, if `user` made it; 404 otherwise.
    (A few columns nothing here uses are left unread: _OWN_UNREAD.)

    Also carries `queue_rubric_version_id`: the rubric version its eval set's queue uses now
    (None when the queue is closed), read in the same query. `for_update` locks the annotation
    row only: saves and submits of one annotation serialize, and a claim cannot drop it
    meanwhile; NO KEY, so labels being inserted for it (FK checks) are not blocked. `page` also
    reads what the labeling page shows besides (labeling/annotation_page.py): `answers` (outputs of
    its case), `answer_number` (this output's place among them) and `has_labels`.

    One SQL statement, as select_related would write it: built through the ORM this query cost
    about 8 ms a save or submit on the benchmark machine against ~2 ms written out (measured),
    the difference being the queryset's compilation and the planner's work on its joins. It runs
    as a prepared statement (rows.fetchone), so PostgreSQL plans it once per connection.

    `row`: the page's row as the session read already brought it (page_along); used only if it is
    this annotation and `user` made it, read again otherwise.
    """
    lock = for_update and connection.features.has_select_for_update
    sql, columns = _own_annotation_sql(connection.vendor, lock, page)
    if row is None or row[0] != pk or row[_ANNOTATOR_AT] != user.pk:
        row = fetchone(connection, sql, [pk, user.pk])
    if row is None:
        raise Http404("No such annotation of yours. If it was a draft, its reservation may have lapsed.")
    objects = {}
    at = 0
    for alias, model, fields in columns:
        objects[alias] = instance(model, fields, row[at : at + len(fields)])
        at += len(fields)
    annotation, output, case = objects["a"], objects["o"], objects["c"]
    case.eval_set = objects["e"]
    output.case = case
    annotation.output = output
    objects["rv"].rubric = objects["r"]
    annotation.rubric_version = objects["rv"]
    annotation.queue_rubric_version_id = row[at]
    if page:
        annotation.answers, annotation.answer_number, has_labels = row[at + 1 :]
        annotation.has_labels = bool(has_labels)
    return annotation


# (alias, model, join condition) of own_annotation's statement, joined in this order, every column read but
# those in _OWN_UNREAD: nothing on the labeling page, save or submit uses them (they are deferred: the ORM
# would load one if asked), and the free-form metadata can be large JSON to decode on every request.
_OWN_TABLES = (
    ("a", Annotation, None),
    ("o", Output, "o.id = a.output_id"),
    ("c", Case, "c.id = o.case_id"),
    ("rv", RubricVersion, "rv.id = a.rubric_version_id"),
)
_OWN_UNREAD = {
    Output: {"metadata", "latency_ms"},
    Case: {"metadata"},
    RubricVersion: {"approval_reason", "approved_at", "created_at"},
}
# (alias, model, foreign key column) read as scalar subqueries: the id and the name only, the rest deferred
# (loaded by the ORM if something asks). Joined, each table made PostgreSQL's planning of this statement
# dearer than running it (measured: +0.8 ms a page, before the statement was prepared; on SQLite it still is).
_OWN_NAMED = (
    ("e", EvalSet, "c.eval_set_id"),
    ("r", Rubric, "rv.rubric_id"),
)


# Where the annotation's own id and annotator are in the statement's row (the annotation's columns come first).
_ANNOTATOR_AT = [f.attname for f in Annotation._meta.concrete_fields].index("annotator_id")
assert Annotation._meta.concrete_fields[0].attname == "id"


def page_along(pk: int) -> tuple[str, list, int] | None:
    """own_annotation's page read of annotation `pk`, written to ride along with the session's read
    (labeling.sessions.read_along: its annotator is the session's user, `s.user_id`), as (sql, params,
    number of columns); None where the database cannot (SQLite has no LATERAL join)."""
    if connection.vendor != "postgresql":
        return None
    sql, columns = _own_annotation_sql(connection.vendor, False, True, along=True)
    return sql, [pk], sum(len(fields) for _, _, fields in columns) + 4


@functools.cache
def _own_annotation_sql(vendor: str, lock: bool, page: bool, along: bool = False) -> tuple[str, list]:
    quote = connection.ops.quote_name
    columns, select, joins = [], [], []
    for alias, model, on in _OWN_TABLES:
        fields = [f for f in model._meta.concrete_fields if f.attname not in _OWN_UNREAD.get(model, ())]
        columns.append((alias, model, fields))
        select += [f"{alias}.{quote(f.column)}" for f in fields]
        table = f"{quote(model._meta.db_table)} {alias}"
        joins.append(table if on is None else f"JOIN {table} ON {on}")
    for alias, model, key in _OWN_NAMED:
        columns.append((alias, model, [model._meta.pk, model._meta.get_field("name")]))
        select += [key, f"(SELECT {alias}.name FROM {quote(model._meta.db_table)} {alias} WHERE {alias}.id = {key})"]  # noqa: S608 - names from the models
    select.append(
        f"(SELECT q.rubric_version_id FROM {quote(LabelingQueue._meta.db_table)} q "  # noqa: S608 - names from the models
        "WHERE q.eval_set_id = c.eval_set_id AND q.is_current LIMIT 1)"
    )
    if page:
        outputs, labels = quote(Output._meta.db_table), quote(Label._meta.db_table)
        select += [
            f"(SELECT COUNT(*) FROM {outputs} sib WHERE sib.case_id = o.case_id)",  # noqa: S608 - names from the models
            f"(SELECT COUNT(*) FROM {outputs} sib WHERE sib.case_id = o.case_id AND sib.id <= o.id)",  # noqa: S608
            f"EXISTS (SELECT 1 FROM {labels} l WHERE l.annotation_id = a.id AND l.is_current)",  # noqa: S608
        ]
    if along:  # a subquery of the session read: every column named, the annotator is the session's user
        named = ", ".join(f"{item} AS c{i}" for i, item in enumerate(select))
        return f"SELECT {named} FROM {' '.join(joins)} WHERE a.id = %s AND a.annotator_id = s.user_id", columns  # noqa: S608 - names from the models
    sql = (
        f"SELECT {', '.join(select)} FROM {' '.join(joins)} "  # noqa: S608 - names from the models
        "WHERE a.id = %s AND a.annotator_id = %s"
    )
    if lock:
        sql += " FOR NO KEY UPDATE OF a"
    return sql, columns


def _count(qs) -> Coalesce:
    """COUNT(*) of a correlated queryset, as an expression (0 when it matches nothing)."""
    counted = qs.order_by().annotate(_one=Value(1)).values("_one").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted[:1]), 0)


def may_adjudicate(user: User) -> bool:
    return has_role(user, Role.REVIEWER, Role.LEAD)


def adjudicable_item(user: User, output_id: int, criterion_id: int) -> tuple[Output, Criterion]:
    """The (output, criterion) a reviewer may decide; 404 if unknown, 403 if they labeled it."""
    if not may_adjudicate(user):
        raise PermissionDenied("Adjudication is for reviewers and leads.")
    criterion = Criterion.objects.select_related("rubric_version__rubric").filter(pk=criterion_id).first()
    if criterion is None:
        raise Http404("No such item.")
    mine = Annotation.objects.filter(
        output_id=OuterRef("pk"), rubric_version_id=criterion.rubric_version_id, annotator=user
    )
    siblings = Output.objects.filter(case_id=OuterRef("case_id"))
    output = (
        Output.objects.select_related("case__eval_set")
        .annotate(
            labeled_by_me=Exists(mine),
            answers=_count(siblings),
            answer_number=_count(siblings.filter(pk__lte=OuterRef("pk"))),
        )
        .filter(pk=output_id)
        .first()
    )
    if output is None:
        raise Http404("No such item.")
    if output.labeled_by_me:
        raise PermissionDenied("You labeled this output, so another reviewer must adjudicate it.")
    return output, criterion
