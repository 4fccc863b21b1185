"""formats 0001 and labeling 0011: ImportJob moves to formats with its table, its rows and its content type."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import make_user

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE = [("labeling", "0011_shared_models_in_evals")]
AFTER = [("labeling", "0012_import_job_to_formats"), ("formats", "0001_initial")]


def before_the_move(migrator):
    """The schema of labeling 0010, with formats not yet there (labeling 0011 goes too: it depends on formats)."""
    MigrationExecutor(connection).migrate([("formats", None)])
    return migrator(BEFORE)


def table_names() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


@pytest.mark.django_db(transaction=True)
def test_import_jobs_made_in_labeling_are_formats_import_jobs_after_the_move(migrator):
    lead = make_user("lead-of-old-jobs", role="lead")
    old = before_the_move(migrator)
    OldJob = old.get_model("labeling", "ImportJob")
    ContentType = old.get_model("contenttypes", "ContentType")
    queued = OldJob.objects.create(
        kind="cases", file_name="big.jsonl", content=b'{"case_id": "c1"}\n', size=18, created_by_id=lead.pk,
        options={"eval_set": "cal", "agent_version": "v1"},
    )  # fmt: skip
    done = OldJob.objects.create(
        kind="labels", file_name="labels.csv", size=9, status="done", created_by_id=lead.pk,
        result={"ok": True, "messages": ["imported 3 labels"]},
    )  # fmt: skip
    old_type = ContentType.objects.get(app_label="labeling", model="importjob")

    new = migrator(AFTER)
    assert "labeling_importjob" in table_names()  # the table was neither renamed nor copied
    NewJob = new.get_model("formats", "ImportJob")
    assert NewJob._meta.db_table == "labeling_importjob"
    rows = {j.pk: j for j in NewJob.objects.all()}
    assert set(rows) == {queued.pk, done.pk}
    assert bytes(rows[queued.pk].content) == b'{"case_id": "c1"}\n' and rows[queued.pk].status == "queued"
    assert rows[queued.pk].options == {"eval_set": "cal", "agent_version": "v1"}
    assert rows[done.pk].result == {"ok": True, "messages": ["imported 3 labels"]}
    assert rows[done.pk].created_by_id == lead.pk
    moved_type = new.get_model("contenttypes", "ContentType").objects.get(pk=old_type.pk)
    assert (moved_type.app_label, moved_type.model) == ("formats", "importjob")  # permissions follow the model
    with pytest.raises(LookupError):
        new.get_model("labeling", "ImportJob")

    back = before_the_move(migrator)  # and back: the rows stay where they are, the model is labeling's again
    assert back.get_model("labeling", "ImportJob").objects.count() == 2
    assert back.get_model("contenttypes", "ContentType").objects.get(pk=old_type.pk).app_label == "labeling"


@pytest.mark.django_db(transaction=True)
def test_the_content_type_of_a_database_that_already_has_one_for_formats_is_left_alone(migrator):
    # Negative control for the relabeling: two content types for one model would break the admin's permissions.
    old = before_the_move(migrator)
    ContentType = old.get_model("contenttypes", "ContentType")
    ContentType.objects.get_or_create(app_label="labeling", model="importjob")
    ContentType.objects.create(app_label="formats", model="importjob")
    new = migrator(AFTER)
    types = new.get_model("contenttypes", "ContentType").objects.filter(model="importjob")
    assert sorted(types.values_list("app_label", flat=True)) == ["formats", "labeling"]
