"""A rubric version that anything refers to cannot change: an edit is a new version."""

from __future__ import annotations

import pytest

from evals.models import Criterion, RubricVersion, RubricVersionLocked
from labeling.models import Annotation
from tests.factories import make_eval_set, make_output, make_rubric_version


@pytest.mark.django_db
def test_an_unused_draft_can_still_be_edited():
    rv = make_rubric_version()
    rv.instruction = "Grade it carefully."
    rv.save()
    crit = rv.criteria.first()
    crit.definition = "A sharper definition."
    crit.save()
    rv.refresh_from_db()
    crit.refresh_from_db()
    assert rv.instruction == "Grade it carefully."  # stored, not only accepted
    assert crit.definition == "A sharper definition."


@pytest.mark.django_db
def test_a_version_with_a_label_cannot_change(annotator):
    rv = make_rubric_version()
    output = make_output(make_eval_set())
    Annotation.objects.create(output=output, rubric_version=rv, annotator=annotator, slot=1)
    rv.instruction = "Something else"
    with pytest.raises(RubricVersionLocked, match="create a new version"):
        rv.save()
    crit = rv.criteria.first()
    crit.definition = "changed"
    with pytest.raises(RubricVersionLocked):
        crit.save()
    with pytest.raises(RubricVersionLocked):
        crit.delete()
    with pytest.raises(RubricVersionLocked):
        Criterion.objects.create(rubric_version=rv, key="extra", definition="x", order=9)
    rv.refresh_from_db()
    assert rv.instruction == "Grade it."
    assert rv.criteria.count() == 2


@pytest.mark.django_db
def test_an_approved_version_cannot_change():
    rv = make_rubric_version()
    RubricVersion.objects.filter(pk=rv.pk).update(status=RubricVersion.Status.APPROVED)
    rv.refresh_from_db()
    rv.instruction = "edited"
    with pytest.raises(RubricVersionLocked):
        rv.save()


@pytest.mark.django_db
def test_the_content_hash_covers_instruction_and_criteria():
    a = make_rubric_version(name="r", version="1")
    b = make_rubric_version(name="r", version="2")
    assert a.content_hash == b.content_hash  # same content, different label
    c = make_rubric_version(name="r", version="3", instruction="Other")
    assert c.content_hash != a.content_hash
    assert a.compute_hash() == a.content_hash
