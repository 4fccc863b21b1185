"""The labeling page's and the save's queries compiled to SQL once (labeling/compiled_query.py) give what the ORM
gives for every set of values, compile once, and refuse what they cannot do rather than run the wrong SQL."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError

from evals.models import Criterion, Output
from labeling.annotate import criterion_states
from labeling.compiled_query import CompiledQuery
from labeling.guards import own_annotation
from labeling.models import Annotation
from tests.factories import all_answers, annotate_directly, default_workspace, labeling_setup, make_user, six_criteria

pytestmark = pytest.mark.django_db


def orm_annotation(user, workspace, pk):
    """What own_annotation read before it was compiled once: the same queryset, evaluated by the ORM."""
    from labeling.guards import _own_annotation_query

    return _own_annotation_query(workspace_id=workspace.pk, pk=pk, annotator_id=user.pk, for_update=False).first()


def seen(annotation):
    return (
        annotation.pk,
        annotation.status,
        annotation.slot,
        annotation.reserved_until,
        annotation.output.response,
        annotation.output.tool_calls,
        annotation.output.case.input,
        annotation.output.case.eval_set.name,
        annotation.rubric_version.ref,
        annotation.queue_rubric_version_id,
    )


def test_own_annotation_gives_what_the_orm_gives_for_each_person_and_annotation(django_assert_num_queries):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    me, other = make_user(), make_user()
    workspace = default_workspace()
    drafts = [
        annotate_directly(outputs[0], rv, me, {}, submit=False),
        annotate_directly(outputs[1], rv, other, {}, submit=False),
        annotate_directly(outputs[1], rv, me, all_answers(rv)),
    ]
    for annotation in drafts:
        owner = annotation.annotator
        with django_assert_num_queries(1):  # everything around it in the one query, as before
            got = seen(own_annotation(owner, workspace, annotation.pk))
        assert got == seen(orm_annotation(owner, workspace, annotation.pk))
        assert got[0] == annotation.pk  # the values of this call, not those it was first compiled with
    # The queue closed: the subquery's answer changes with the data, not frozen in the compiled SQL.
    rv.labeling_queues.update(is_current=False)
    assert own_annotation(me, workspace, drafts[0].pk).queue_rubric_version_id is None


def test_own_annotation_still_answers_404_for_anyone_else_and_another_workspace():
    from django.http import Http404

    from tests.factories import make_workspace

    _, rv, outputs = labeling_setup(n_outputs=1)
    me, other = make_user(), make_user()
    mine = annotate_directly(outputs[0], rv, me, {}, submit=False)
    own_annotation(me, default_workspace(), mine.pk)  # negative control: its owner gets it
    with pytest.raises(Http404):
        own_annotation(other, default_workspace(), mine.pk)
    with pytest.raises(Http404):
        own_annotation(me, make_workspace(), mine.pk)
    with pytest.raises(Http404):
        own_annotation(me, default_workspace(), mine.pk + 1000)


@pytest.mark.django_db(transaction=True)  # outside a transaction: the test's own would hide the refusal
def test_the_locked_read_takes_the_row_lock_and_needs_a_transaction():
    _, rv, outputs = labeling_setup(n_outputs=1)
    me = make_user()
    mine = annotate_directly(outputs[0], rv, me, {}, submit=False)
    with pytest.raises(TransactionManagementError):
        own_annotation(me, default_workspace(), mine.pk, for_update=True)
    with transaction.atomic():
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            assert own_annotation(me, default_workspace(), mine.pk, for_update=True).pk == mine.pk
    assert "FOR NO KEY UPDATE OF" in ctx.captured_queries[-1]["sql"]


def test_criterion_states_read_each_annotations_own_current_labels():
    _, rv, outputs = labeling_setup(n_outputs=1, criteria=six_criteria())
    a, b = make_user(), make_user()
    keys = [c.key for c in Criterion.objects.filter(rubric_version=rv).order_by("order", "id")]
    first = annotate_directly(outputs[0], rv, a, {keys[0]: ("PASS", "refund of $40.00"), keys[2]: ("FAIL", "NONE")})
    second = annotate_directly(outputs[0], rv, b, {keys[1]: ("NOT_APPLICABLE", "")}, submit=False)
    got_first = [(s.criterion.key, s.label and (s.label.outcome, s.label.evidence)) for s in criterion_states(first)]
    got_second = [(s.criterion.key, s.label and (s.label.outcome, s.label.evidence)) for s in criterion_states(second)]
    assert got_first == [
        (keys[0], ("PASS", "refund of $40.00")),
        (keys[1], None),
        (keys[2], ("FAIL", "NONE")),
        *[(k, None) for k in keys[3:]],
    ]
    assert got_second == [(keys[0], None), (keys[1], ("NOT_APPLICABLE", "")), *[(k, None) for k in keys[2:]]]
    assert [s.label.more_evidence for s in criterion_states(first) if s.label] == [[], []]  # JSON read as a list


def test_it_compiles_once_per_database(monkeypatch):
    _, rv, outputs = labeling_setup(n_outputs=2)
    me = make_user()
    drafts = [annotate_directly(output, rv, me, {}, submit=False) for output in outputs]
    query = CompiledQuery(lambda *, pk: Annotation.objects.select_related("output").filter(pk=pk), "pk")
    compiled = []
    real = SQLCompiler.as_sql
    monkeypatch.setattr(SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or real(self, *a, **k))
    got = [query.rows(pk=d.pk)[0] for d in drafts] + [query.rows(pk=drafts[0].pk)[0]]
    assert [a.pk for a in got] == [drafts[0].pk, drafts[1].pk, drafts[0].pk]
    assert isinstance(got[1].output, Output) and got[1].output.pk == outputs[1].pk
    assert len(compiled) == 1


def test_a_value_that_does_not_reach_the_sql_as_one_parameter_is_refused():
    # Sliced by the value: Django writes it into the SQL text, where swapping parameters cannot reach it.
    sliced = CompiledQuery(lambda *, n: Annotation.objects.all()[: n + 2**31], "n")
    with pytest.raises(ValueError, match="'n' reaches the compiled SQL 0 times"):
        sliced.rows(n=1)
    twice = CompiledQuery(
        lambda *, pk: Annotation.objects.filter(pk=pk) | Annotation.objects.filter(output_id=pk), "pk"
    )
    with pytest.raises(ValueError, match="'pk' reaches the compiled SQL 2 times"):
        twice.rows(pk=1)
    once = CompiledQuery(lambda *, pk: Annotation.objects.filter(pk=pk), "pk")
    assert once.rows(pk=1) == []  # negative control: one parameter compiles and runs
