"""The content types of the models that moved from labeling now say evals.

A content type row is what a permission, a group's permissions (the lead group) and an admin log entry
point at. Relabeling the existing row keeps all of them pointing at the same model, under its new app
label; a new row would leave them on a "labeling" model that no longer exists.
"""

from django.db import migrations

MOVED = ("user", "evalset", "case", "output", "rubric", "rubricversion", "criterion")


def relabel(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label=old, model__in=MOVED).update(app_label=new)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("evals", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: relabel(apps, "labeling", "evals"),
            lambda apps, schema_editor: relabel(apps, "evals", "labeling"),
        ),
    ]
