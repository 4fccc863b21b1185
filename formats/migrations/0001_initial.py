"""ImportJob moves from labeling to formats: the state moves, the table "labeling_importjob" and its rows stay.

labeling 0011 drops the model from labeling's state only; no SQL runs in either. The content type is
relabeled so the admin's permissions and log entries that point at it follow the model.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def relabel_content_type(apps, schema_editor, old="labeling", new="formats"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=new, model="importjob").exists():
        ContentType.objects.filter(app_label=old, model="importjob").update(app_label=new)


def relabel_back(apps, schema_editor):
    relabel_content_type(apps, schema_editor, old="formats", new="labeling")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("labeling", "0011_shared_models_in_evals"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ImportJob",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("kind", models.CharField(max_length=10)),
                        ("file_name", models.CharField(max_length=255)),
                        ("content", models.BinaryField(default=b"")),
                        ("size", models.PositiveBigIntegerField()),
                        ("options", models.JSONField(default=dict)),
                        (
                            "status",
                            models.CharField(
                                choices=[("queued", "Queued"), ("running", "Running"), ("done", "Done"), ("failed", "Failed")],
                                default="queued",
                                max_length=10,
                            ),
                        ),
                        ("result", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={"db_table": "labeling_importjob"},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(relabel_content_type, relabel_back),
    ]
