"""labeling.rows.instance: model instances from hand-written SQL rows, the same as the ORM's own."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.signals import post_init

from labeling.models import Annotation, Case, Output, RubricVersion, User
from labeling.rows import fetchone, instance

from .factories import make_output, make_user
from .labeling_helpers import annotate_directly, labeling_setup

pytestmark = pytest.mark.django_db


def read(model, pk, fields=None):
    fields = fields or list(model._meta.concrete_fields)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    row = fetchone(connection, f"SELECT {columns} FROM {table} WHERE id = %s", [pk])  # noqa: S608 - test names
    return instance(model, fields, row)


def state(obj) -> dict:
    values = {k: v for k, v in obj.__dict__.items() if k != "_state"}
    return {"values": values, "db": obj._state.db, "adding": obj._state.adding, "deferred": obj.get_deferred_fields()}


def test_instances_are_the_orms_own_field_by_field():
    eval_set, rv, (output,) = labeling_setup()
    output = make_output(eval_set, tool_calls=[{"name": "lookup", "args": {"id": 7}, "response": {"ok": True}}])
    user = make_user()
    annotation = annotate_directly(output, rv, user, {"correct_amount": ("PASS", "NONE")})
    for model, pk in ((User, user.pk), (Annotation, annotation.pk), (Output, output.pk), (Case, output.case_id),
                      (RubricVersion, rv.pk)):  # fmt: skip
        assert state(read(model, pk)) == state(model.objects.get(pk=pk)), model
    assert read(Output, output.pk).tool_calls == [{"name": "lookup", "args": {"id": 7}, "response": {"ok": True}}]


def test_unread_fields_are_deferred_and_load_like_the_orms():
    eval_set, rv, (output,) = labeling_setup()
    fields = [Case._meta.pk, Case._meta.get_field("case_id")]
    case = read(Case, output.case_id, fields)
    orm = Case.objects.only("id", "case_id").get(pk=output.case_id)
    assert state(case) == state(orm) and "input" in case.get_deferred_fields()
    assert case.input == output.case.input  # loaded on access, as for the ORM's
    case.case_id = "renamed"
    case.save()
    assert Case.objects.get(pk=case.pk).case_id == "renamed" and Case.objects.get(pk=case.pk).input == case.input


def test_a_model_with_init_receivers_goes_through_its_init():
    eval_set, rv, (output,) = labeling_setup()
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(receiver, sender=Output)
    try:
        obj = read(Output, output.pk)
    finally:
        post_init.disconnect(receiver, sender=Output)
    assert seen == [output.pk] and state(obj) == state(Output.objects.get(pk=output.pk))
    read(Output, output.pk)
    assert seen == [output.pk]  # negative control: without the receiver, __init__ (and so it) is not run
