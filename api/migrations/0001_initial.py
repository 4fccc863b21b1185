"""The token models move from calibration to api with their tables and rows: this migration only tells Django's
state that api now holds them (their tables keep the names calibration_gatetoken and calibration_verdictpush), and
relabels their content types, so that admin permissions (the lead group's) and admin log entries stay theirs.
calibration 0011 then drops them from calibration's state and points GateResult.token here."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import api.models

MOVED = ("gatetoken", "verdictpush")


def relabel(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        # A fresh database has no content types yet (post_migrate makes them): then there is nothing to relabel.
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor) -> None:
    relabel(apps, "calibration", "api")


def backwards(apps, schema_editor) -> None:
    relabel(apps, "api", "calibration")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("calibration", "0011_shared_models_in_evals"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("judging", "0008_shared_models_in_evals"),
        ("labeling", "0011_shared_models_in_evals"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GateToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("project", models.CharField(max_length=200)),
                        ("eval_set_pattern", models.CharField(default="*", max_length=200)),
                        ("scopes", models.JSONField(default=api.models.gate_scope_only)),
                        ("judges", models.JSONField(blank=True, default=list)),
                        ("token_hash", models.CharField(max_length=64, unique=True)),
                        ("hint", models.CharField(max_length=16)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("created_by", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("revoked_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("rubric_version", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="gate_tokens", to="evals.rubricversion")),
                    ],
                    options={"db_table": "calibration_gatetoken", "ordering": ["-created_at"]},
                ),
                migrations.CreateModel(
                    name="VerdictPush",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("run", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="push", to="judging.judgerun")),
                        ("token", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="pushes", to="api.gatetoken")),
                    ],
                    options={"db_table": "calibration_verdictpush"},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
