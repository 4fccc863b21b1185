"""The shared models move from labeling to evals with their tables, rows, foreign keys and permissions.

The database is put back where production is before the move: labeling, judging and calibration at their
last migrations before it, the content types saying "labeling", and evals 0001 not recorded while admin's
migrations are (admin depends on the user model's app). Rows are written through the models as they were
then; `migrate`, as an operator runs it, brings the database forward; the rows are read through evals'.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connection
from django.db.migrations.exceptions import InconsistentMigrationHistory
from django.db.migrations.recorder import MigrationRecorder

from calibration.models import GatingMark
from evals.models import Case, Criterion, EvalSet, Output, Rubric, RubricVersion, User, Workspace
from judging.models import Verdict
from labeling.models import GoldLabel, Label

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE_THE_MOVE = [
    ("evals", "0001_initial"),
    ("labeling", "0010_import_job"),
    ("judging", "0007_name_validators"),
    ("calibration", "0010_verdict_provenance"),
]


def production_before_the_move(migrator):
    """The schema and migration history of a database made before the move; the models of that time."""
    old = migrator(BEFORE_THE_MOVE)  # evals 0002 undone: the content types say "labeling" again
    # The content types of evals' own later models (workspaces, memberships, ...) were made by this test
    # database's post_migrate; a database of that time has none, and evals 0003 brings them.
    old.get_model("contenttypes", "ContentType").objects.filter(app_label="evals").delete()
    # evals 0001 changes nothing in the database: unrecorded, the history is the one production has.
    MigrationRecorder(connection).record_unapplied("evals", "0001_initial")
    applied = MigrationRecorder(connection).applied_migrations()
    assert ("admin", "0001_initial") in applied and ("evals", "0001_initial") not in applied
    return old


def write_todays_rows(old) -> dict[str, int]:
    """One row in every moved table and in the tables that point at them, through the old models."""
    model = old.get_model
    ContentType_ = model("contenttypes", "ContentType")
    assert not ContentType_.objects.filter(app_label="evals").exists()
    case_type = ContentType_.objects.get(app_label="labeling", model="case")
    view_case = model("auth", "Permission").objects.get(content_type=case_type, codename="view_case")
    auditors = model("auth", "Group").objects.create(name="auditors")
    auditors.permissions.add(model("auth", "Permission").objects.get(codename="view_output"))
    lee = model("labeling", "User").objects.create(username="lee", role="lead", is_staff=True)
    lee.groups.add(auditors)
    lee.user_permissions.add(view_case)
    eval_set = model("labeling", "EvalSet").objects.create(name="refunds", description="kept")
    case = model("labeling", "Case").objects.create(eval_set=eval_set, case_id="c-1", input="refund me")
    output = model("labeling", "Output").objects.create(case=case, agent_version="v1", response="done")
    rubric = model("labeling", "Rubric").objects.create(name="support")
    version = model("labeling", "RubricVersion").objects.create(
        rubric=rubric, version="1", instruction="grade", content_hash="h" * 64, status="approved", approved_by=lee
    )
    criterion = model("labeling", "Criterion").objects.create(
        rubric_version=version, key="grounded", definition="only facts", gold_policy="any_fail"
    )
    annotation = model("labeling", "Annotation").objects.create(
        output=output, rubric_version=version, annotator=lee, slot=1, status="submitted"
    )
    label = model("labeling", "Label").objects.create(
        annotation=annotation, criterion=criterion, outcome="FAIL", evidence="done"
    )
    gold = model("labeling", "GoldLabel").objects.create(
        output=output, rubric_version=version, criterion=criterion, outcome="PASS", decided_by=lee
    )
    judge = model("judging", "JudgeConfig").objects.create(
        name="gpt-judge", backend="instrument", content_hash="j" * 64, created_by=lee
    )
    run = model("judging", "JudgeRun").objects.create(
        eval_set=eval_set, rubric_version=version, judge_config=judge, started_by=lee
    )
    verdict = model("judging", "Verdict").objects.create(
        run=run, output=output, rubric_version=version, criterion=criterion, judge_config=judge,
        judge_config_hash="j" * 64, outcome="PASS",
    )  # fmt: skip
    mark = model("calibration", "GatingMark").objects.create(
        rubric_version=version, judge_config=judge, criterion=criterion, rubric_content_hash="h" * 64,
        judge_config_hash="j" * 64, calibration_eval_set=eval_set, tier="gate", reason="calibrated",
        marked_by=lee,
    )  # fmt: skip
    return {
        "user": lee.pk, "eval_set": eval_set.pk, "case": case.pk, "output": output.pk, "rubric": rubric.pk,
        "version": version.pk, "criterion": criterion.pk, "label": label.pk, "gold": gold.pk,
        "verdict": verdict.pk, "mark": mark.pk, "case_type": case_type.pk,
    }  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_migrate_moves_todays_rows_foreign_keys_and_permissions_to_evals(migrator):
    ids = write_todays_rows(production_before_the_move(migrator))

    call_command("migrate", verbosity=0)  # what an operator runs after deploying: no InconsistentMigrationHistory

    lee = User.objects.get(pk=ids["user"])
    default = Workspace.objects.get()  # the only workspace: the one the rows of that time moved into
    assert (default.slug, lee.username, lee.role_in(default), lee.is_staff) == ("default", "lee", "lead", True)
    assert list(lee.groups.values_list("name", flat=True)) == ["auditors"]
    assert lee.has_perm("evals.view_case")  # their own permission, on the relabeled content type
    assert lee.has_perm("evals.view_output")  # through their group
    assert not lee.has_perm("evals.change_case")
    assert ContentType.objects.get(pk=ids["case_type"]).natural_key() == ("evals", "case")
    assert not ContentType.objects.filter(app_label="labeling", model__in=["user", "case", "output"]).exists()

    output = Output.objects.get(pk=ids["output"])
    assert (output.response, output.case.pk, output.case.eval_set.pk) == ("done", ids["case"], ids["eval_set"])
    eval_set = EvalSet.objects.get(pk=ids["eval_set"])
    assert (eval_set.description, eval_set.workspace) == ("kept", default)
    assert Case.objects.get(pk=ids["case"]).input == "refund me"
    version = RubricVersion.objects.get(pk=ids["version"])
    assert (version.ref, version.status, version.approved_by) == ("support@1", "approved", lee)
    assert version.rubric == Rubric.objects.get(pk=ids["rubric"], workspace=default)
    criterion = Criterion.objects.get(pk=ids["criterion"])
    assert (criterion.rubric_version, criterion.gold_policy) == (version, "any_fail")

    label = Label.objects.get(pk=ids["label"])
    assert (label.criterion, label.annotation.output, label.annotation.annotator) == (criterion, output, lee)
    gold = GoldLabel.objects.get(pk=ids["gold"])
    assert (gold.output, gold.rubric_version, gold.decided_by, gold.outcome) == (output, version, lee, "PASS")
    verdict = Verdict.objects.get(pk=ids["verdict"])
    assert (verdict.output, verdict.criterion, verdict.run.started_by) == (output, criterion, lee)
    assert verdict.judge_config.workspace == default
    mark = GatingMark.objects.get(pk=ids["mark"])
    assert (mark.criterion, mark.calibration_eval_set.name, mark.marked_by) == (criterion, "refunds", lee)
    assert version.is_in_use()  # the reverse relations of labeling, judging and calibration reach it
    assert Group.objects.get(name="auditors").user_set.get() == lee


@pytest.mark.django_db(transaction=True)
def test_djangos_own_migrate_refuses_that_database(migrator):
    # Negative control: without evals' migrate command, Django stops before running anything.
    production_before_the_move(migrator)
    try:
        with pytest.raises(InconsistentMigrationHistory, match="admin.0001_initial"):
            call_command(DjangoMigrate(), verbosity=0)
        assert ("evals", "0001_initial") not in MigrationRecorder(connection).applied_migrations()
    finally:  # what evals' command would have done, so the fixture can bring the database forward again
        MigrationRecorder(connection).record_applied("evals", "0001_initial")


@pytest.mark.django_db(transaction=True)
def test_a_new_database_runs_evals_0001_in_its_turn(migrator):
    from evals.management.commands.migrate import record_state_only_move

    migrator([("labeling", "0009_name_validators")])  # labeling before its last migration before the move
    assert ("evals", "0001_initial") not in MigrationRecorder(connection).applied_migrations()
    assert record_state_only_move(connection) is False  # the old schema is not complete: nothing recorded
    assert ("evals", "0001_initial") not in MigrationRecorder(connection).applied_migrations()
