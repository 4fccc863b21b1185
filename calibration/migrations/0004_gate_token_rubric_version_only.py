"""Tokens are scoped to a rubric version only (0003 filled it in for every token): drop the rubric column."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("calibration", "0003_scope_gate_tokens"),
    ]

    operations = [
        migrations.RemoveField(model_name="gatetoken", name="rubric"),
        migrations.AlterField(
            model_name="gatetoken",
            name="rubric_version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="gate_tokens",
                to="labeling.rubricversion",
            ),
        ),
    ]
