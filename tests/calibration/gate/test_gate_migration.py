"""calibration 0002-0004: tokens scoped to a rubric get one rubric version of it; marks get the default policy."""

from __future__ import annotations

import pytest

from api.models import GateToken
from calibration.models import GateResult
from tests.migration_helpers import migrate_to_latest, old_rubric_version

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE = [("calibration", "0001_initial")]
AFTER = [("calibration", "0004_gate_token_rubric_version_only")]


@pytest.mark.django_db(transaction=True)
def test_old_tokens_keep_the_version_they_gated_on_else_the_newest_approved_one(migrator):
    old = migrator(BEFORE)  # the rows of that time, through its models
    lee = old.get_model("labeling", "User").objects.create(username="lee", role="lead")
    cal = old.get_model("labeling", "EvalSet").objects.create(name="cal")
    judge = old.get_model("judging", "JudgeConfig").objects.create(
        name="gpt-judge", backend="imported", content_hash="j" * 64
    )
    used = old_rubric_version(old, "refund", "1", status="approved", approved_at="2026-10-01T00:00Z")
    newest_approved = old_rubric_version(old, "refund", "2", status="approved", approved_at="2026-11-01T00:00Z")
    draft = old_rubric_version(old, "refund", "3")
    only_draft = old_rubric_version(old, "billing", "1")
    Token, Result = old.get_model("calibration", "GateToken"), old.get_model("calibration", "GateResult")
    Mark = old.get_model("calibration", "GatingMark")
    Rubric = old.get_model("labeling", "Rubric")
    empty = Rubric.objects.create(name="no-versions")

    def token(rubric_id, hint):
        return Token.objects.create(
            project=hint, rubric_id=rubric_id, token_hash=hint * 8, hint=hint, created_by_id=lee.pk
        )

    ci = token(used.rubric_id, "ci")
    token(used.rubric_id, "fresh")
    token(only_draft.rubric_id, "drafts")
    nothing = token(empty.pk, "nothing")
    Result.objects.create(
        decision="passed", source="http", eval_set_name="rc-1", rubric_ref="refund@1", judge_name="gpt-judge",
        rubric_version_id=used.pk, min_pass_rate=0.8, max_error_rate=0.05, confidence=0.9, token=ci,
    )  # fmt: skip
    Mark.objects.create(
        rubric_version_id=used.pk, judge_config_id=judge.pk, criterion_id=used.criteria.order_by("order").first().pk,
        rubric_content_hash="r", judge_config_hash="j", calibration_eval_set_id=cal.pk, tier="gate",
        reason="old", marked_by_id=lee.pk,
    )  # fmt: skip

    new = migrator(AFTER)
    Token, Result = new.get_model("calibration", "GateToken"), new.get_model("calibration", "GateResult")
    scoped = {t.hint: (t.rubric_version_id, t.eval_set_pattern) for t in Token.objects.all()}
    assert scoped == {
        "ci": (used.pk, "*"),  # the version its pipeline gated on: it keeps working
        "fresh": (newest_approved.pk, "*"),  # never used: the newest approved version, not the newer draft
        "drafts": (only_draft.pk, "*"),  # no approved version: the newest one
    }  # "nothing": its rubric has no version, it could never gate anything
    assert draft.pk not in {v for v, _ in scoped.values()}
    result = Result.objects.get()
    assert (result.min_pass_rate, result.max_error_rate, result.confidence) == (0.8, 0.05, 0.9)
    mark = new.get_model("calibration", "GatingMark").objects.get()
    assert (mark.min_pass_rate, mark.max_error_rate, mark.confidence) == (0.90, 0.02, 0.95)
    assert nothing.pk not in Token.objects.values_list("pk", flat=True)

    back = migrator(BEFORE)  # and back again: each token is on its rubric
    assert dict(back.get_model("calibration", "GateToken").objects.values_list("hint", "rubric_id")) == {
        "ci": used.rubric_id,
        "fresh": used.rubric_id,
        "drafts": only_draft.rubric_id,
    }

    migrate_to_latest()  # and forward to today: the tokens and their gate result are in the default workspace
    assert set(GateToken.objects.values_list("hint", "workspace__slug")) == {
        ("ci", "default"),
        ("fresh", "default"),
        ("drafts", "default"),
    }
    assert GateResult.objects.get().workspace.slug == "default"
