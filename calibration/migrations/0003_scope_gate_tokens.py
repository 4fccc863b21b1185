"""Existing gate tokens, scoped to a rubric until now, get one rubric version of it: the one they last
gated on (a CI pipeline that works keeps working), else the rubric's newest approved version, else its
newest version. A token whose rubric has no version could never gate anything and is deleted."""

from django.db import migrations
from django.db.models import F


def scope_tokens(apps, schema_editor):
    GateToken = apps.get_model("calibration", "GateToken")
    GateResult = apps.get_model("calibration", "GateResult")
    RubricVersion = apps.get_model("labeling", "RubricVersion")
    for token in GateToken.objects.all():
        used = (
            GateResult.objects.filter(token=token, rubric_version__rubric_id=token.rubric_id)
            .order_by("-created_at", "-id")
            .values_list("rubric_version_id", flat=True)
            .first()
        )
        versions = RubricVersion.objects.filter(rubric_id=token.rubric_id)
        approved = versions.filter(status="approved").order_by(F("approved_at").desc(nulls_last=True), "-created_at", "-id").first()
        newest = versions.order_by("-created_at", "-id").first()
        fallback = approved or newest
        chosen = used or (fallback.pk if fallback else None)
        if chosen is None:
            token.delete()
        else:
            GateToken.objects.filter(pk=token.pk).update(rubric_version_id=chosen)


def unscope_tokens(apps, schema_editor):
    GateToken = apps.get_model("calibration", "GateToken")
    for token in GateToken.objects.select_related("rubric_version"):
        GateToken.objects.filter(pk=token.pk).update(rubric_id=token.rubric_version.rubric_id)


class Migration(migrations.Migration):
    dependencies = [
        ("calibration", "0002_gate_policy_token_scope"),
    ]

    operations = [migrations.RunPython(scope_tokens, unscope_tokens)]
