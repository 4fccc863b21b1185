"""api 0001 and calibration 0011: the token models move from calibration to api with their tables and rows.

A database at calibration 0010 with tokens, a push and gate results in it is migrated forward: every row is still
there and read through api's models, the gate result still names its token, the push still names its run and
token, and the content types (which the lead group's admin permissions hang on) are relabelled, not made anew.
And back again.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from api.models import GateToken, VerdictPush
from calibration.models import GateResult
from evals.role_groups import LEAD_GROUP
from judging.models import JudgeRun
from overview.lead_permissions import sync_lead_group
from tests.factories import default_workspace, make_eval_set, make_judge, make_rubric_version, make_user
from tests.migration_helpers import migrate_to_latest

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE = [("calibration", "0011_shared_models_in_evals")]
AFTER = [("api", "0001_initial"), ("calibration", "0012_token_models_moved_to_api")]


def before(migrator):
    """calibration 0010 with api unapplied (which takes calibration 0011 with it): the tokens still calibration's."""
    MigrationExecutor(connection).migrate([("api", None)])
    return migrator(BEFORE)


def content_types(registry) -> dict[str, tuple[str, int]]:
    ContentType = registry.get_model("contenttypes", "ContentType")
    found = ContentType.objects.filter(model__in=["gatetoken", "verdictpush"])
    return {ct.model: (ct.app_label, ct.pk) for ct in found}


@pytest.mark.django_db(transaction=True)
def test_tokens_pushes_and_gate_results_survive_the_move_to_api(migrator):
    lee = make_user("lee")
    rv = make_rubric_version("refund", "1")
    run = JudgeRun.objects.create(eval_set=make_eval_set("rc-1"), rubric_version=rv, judge_config=make_judge("ci"))
    old = before(migrator)
    Token, Push = old.get_model("calibration", "GateToken"), old.get_model("calibration", "VerdictPush")
    Result = old.get_model("calibration", "GateResult")
    made = {"rubric_version_id": rv.pk, "created_by_id": lee.pk}
    ci = Token.objects.create(project="ci", token_hash="a" * 64, hint="icw_ci", scopes=["push", "gate"], **made)
    gone = Token.objects.create(project="old", token_hash="b" * 64, hint="icw_old", eval_set_pattern="rc-*", **made)
    Push.objects.create(run_id=run.pk, token=ci)
    asked = {"decision": "passed", "eval_set_name": "rc-1", "rubric_ref": "refund@1", "judge_name": "ci"}
    Result.objects.create(source="http", token=ci, **asked)
    Result.objects.create(source="cli", **asked)
    labels = content_types(old)
    assert {app for app, _ in labels.values()} == {"calibration"}  # the negative control: where they start

    new = migrator(AFTER)
    assert {
        t.hint: (t.project, t.scopes, t.eval_set_pattern) for t in new.get_model("api", "GateToken").objects.all()
    } == {
        "icw_ci": ("ci", ["push", "gate"], "*"),
        "icw_old": ("old", ["gate"], "rc-*"),  # the default of its day, kept
    }
    assert content_types(new) == {model: ("api", pk) for model, (_, pk) in labels.items()}  # relabelled, same rows

    # The project's own models (today's schema: later migrations add columns, e.g. api 0002) read the same rows.
    migrate_to_latest()
    assert set(GateToken.objects.values_list("pk", flat=True)) == {ci.pk, gone.pk}
    push = VerdictPush.objects.select_related("run", "token").get()
    assert (push.run, push.token.project) == (run, "ci") and JudgeRun.objects.get().push == push
    assert sorted((r.source, r.token_id) for r in GateResult.objects.all()) == [("cli", None), ("http", ci.pk)]
    GateToken.objects.create(
        workspace=default_workspace(),  # where the migration to workspaces put every row
        project="new",
        token_hash="c" * 64,
        hint="icw_new",
        created_by=lee,
        rubric_version=rv,
    )
    with connection.cursor() as cursor:  # still the old table, no copy
        cursor.execute("SELECT count(*) FROM calibration_gatetoken")
        assert cursor.fetchone() == (3,)
    view = Permission.objects.get(codename="view_gatetoken")
    assert view.content_type.app_label == "api" and view in sync_lead_group().permissions.all()
    assert sync_lead_group().name == LEAD_GROUP

    back = before(migrator)
    assert back.get_model("calibration", "GateToken").objects.count() == 3
    assert back.get_model("calibration", "VerdictPush").objects.get().token_id == ci.pk
    assert {app for app, _ in content_types(back).values()} == {"calibration"}
