"""evals 0003 and its siblings (issue 36): a database from before workspaces moves into one, keeping every row.

A database at the schema before workspaces, with people of each role and the whole chain of an eval (eval set,
case, output, rubric version, criterion, labels, gold, a queue, a judge config and its run and verdict, a
token, an import job, a gate result, a trace binding) is migrated forward. Every row is still there under its
id, everything top-level is in the workspace `default`, and each person is a member of it with the role they
had. A database with nothing in it gets no workspace at all. And back again, with the roles restored.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_helpers import migrate_to_latest

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE = [
    ("evals", "0002_content_types"),
    ("judging", "0010_judge_guidance_and_gold_splits"),
    ("api", "0002_token_trace_binding"),
    ("formats", "0004_trace_binding_root_span_kind"),
    ("calibration", "0016_gating_mark_decides_on_audit"),
]
AFTER = [
    ("evals", "0003_workspaces"),
    ("judging", "0011_judge_config_workspace"),
    ("api", "0003_token_workspace"),
    ("formats", "0005_import_job_workspace"),
    ("calibration", "0017_gate_result_workspace"),
]
# Every model whose rows the test makes, by (app, model): their ids before and after must be the same.
CHAIN = [
    ("evals", "User"),
    ("evals", "EvalSet"),
    ("evals", "Case"),
    ("evals", "Output"),
    ("evals", "Rubric"),
    ("evals", "RubricVersion"),
    ("evals", "Criterion"),
    ("labeling", "Annotation"),
    ("labeling", "Label"),
    ("labeling", "GoldLabel"),
    ("labeling", "LabelingQueue"),
    ("judging", "JudgeConfig"),
    ("judging", "JudgeRun"),
    ("judging", "Verdict"),
    ("api", "GateToken"),
    ("formats", "ImportJob"),
    ("formats", "TraceBinding"),
    ("calibration", "GateResult"),
]


def migrate(targets):
    MigrationExecutor(connection).migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def ids(registry) -> dict[str, list[int]]:
    return {
        f"{app}.{name}": sorted(registry.get_model(app, name).objects.values_list("pk", flat=True))
        for app, name in CHAIN
    }


def fill(old) -> dict:
    """One of everything, through the historical models (the code of today cannot write the old schema)."""
    m = old.get_model
    people = {
        role: m("evals", "User").objects.create(username=f"{role}-1", role=role)
        for role in ("annotator", "reviewer", "lead")
    }
    second = m("evals", "User").objects.create(username="annotator-2", role="annotator")
    eval_set = m("evals", "EvalSet").objects.create(name="refunds")
    case = m("evals", "Case").objects.create(eval_set=eval_set, case_id="c1", input="Where is my refund?")
    output = m("evals", "Output").objects.create(case=case, response="It is on its way.")
    rubric = m("evals", "Rubric").objects.create(name="refund-support")
    rv = m("evals", "RubricVersion").objects.create(rubric=rubric, version="1", content_hash="0" * 64)
    criterion = m("evals", "Criterion").objects.create(rubric_version=rv, key="grounded", definition="Grounded.")
    for slot, person in ((1, people["annotator"]), (2, second)):
        annotation = m("labeling", "Annotation").objects.create(
            output=output, rubric_version=rv, annotator=person, slot=slot, status="submitted"
        )
        m("labeling", "Label").objects.create(annotation=annotation, criterion=criterion, outcome="PASS")
    m("labeling", "GoldLabel").objects.create(
        output=output, rubric_version=rv, criterion=criterion, outcome="PASS", decided_by=people["reviewer"]
    )
    m("labeling", "LabelingQueue").objects.create(eval_set=eval_set, rubric_version=rv, opened_by=people["lead"])
    judge = m("judging", "JudgeConfig").objects.create(name="gpt-judge", backend="imported")
    run = m("judging", "JudgeRun").objects.create(eval_set=eval_set, rubric_version=rv, judge_config=judge)
    m("judging", "Verdict").objects.create(
        run=run, output=output, rubric_version=rv, criterion=criterion, judge_config=judge, outcome="PASS"
    )
    binding = m("formats", "TraceBinding").objects.create(eval_set=eval_set)
    token = m("api", "GateToken").objects.create(
        project="ci",
        rubric_version=rv,
        token_hash="a" * 64,
        hint="icw_ci",
        created_by=people["lead"],
        trace_binding=binding,
    )
    m("formats", "ImportJob").objects.create(kind="cases", file_name="cases.jsonl", size=1, created_by=people["lead"])
    m("calibration", "GateResult").objects.create(
        decision="passed",
        source="http",
        eval_set_name="refunds",
        rubric_ref="refund-support@1",
        judge_name="gpt-judge",
        token=token,
    )
    return {"people": {**people, "second": second}}


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_workspaces_keeps_every_row_in_one_workspace(migrator):
    old = migrator(BEFORE)
    made = fill(old)
    before = ids(old)
    assert all(before.values()), before  # the negative control: every model has a row to lose
    assert "Workspace" not in {model.__name__ for model in old.get_app_config("evals").get_models()}

    new = migrate(AFTER)
    assert ids(new) == before  # nothing lost, nothing renumbered
    Workspace, Membership = new.get_model("evals", "Workspace"), new.get_model("evals", "Membership")
    (workspace,) = Workspace.objects.all()
    assert (workspace.slug, workspace.name) == ("default", "Default workspace")
    for app, name in (
        ("evals", "EvalSet"),
        ("evals", "Rubric"),
        ("judging", "JudgeConfig"),
        ("api", "GateToken"),
        ("formats", "ImportJob"),
        ("calibration", "GateResult"),
    ):
        model = new.get_model(app, name)
        assert set(model.objects.values_list("workspace_id", flat=True)) == {workspace.pk}, name
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"annotator-1": "annotator", "reviewer-1": "reviewer", "lead-1": "lead", "annotator-2": "annotator"}
    assert set(Membership.objects.values_list("source", flat=True)) == {"local"}
    # The labels keep their authors: the gold still names its reviewer, each annotation its annotator.
    Gold, Annotation = new.get_model("labeling", "GoldLabel"), new.get_model("labeling", "Annotation")
    assert Gold.objects.get().decided_by_id == made["people"]["reviewer"].pk
    assert sorted(Annotation.objects.values_list("annotator__username", flat=True)) == ["annotator-1", "annotator-2"]

    # And back: the column goes, each person's role comes back from their membership.
    back = migrate(BEFORE)
    assert ids(back) == before
    assert dict(back.get_model("evals", "User").objects.values_list("username", "role")) == roles
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
def test_an_empty_database_gets_no_workspace(migrator):
    migrator(BEFORE)
    new = migrate(AFTER)
    assert not new.get_model("evals", "Workspace").objects.exists()
    migrate_to_latest()
