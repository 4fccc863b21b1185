"""The gate policy moves to the lead: stored on each gating mark, and tokens scoped to a rubric version.

Existing marks get the default policy (what the gate applied when a caller asked for nothing); gate
results keep the thresholds their callers chose then. Tokens get a rubric version (filled in by 0003)
and an eval set pattern (every eval set, as before); 0004 drops their rubric. Schema changes and row
updates are in separate migrations: PostgreSQL cannot alter a table in the transaction that updated
its rows (pending foreign key checks).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("calibration", "0001_initial"),
        ("labeling", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="gatingmark",
            name="min_pass_rate",
            field=models.FloatField(default=0.9),
        ),
        migrations.AddField(
            model_name="gatingmark",
            name="max_error_rate",
            field=models.FloatField(default=0.02),
        ),
        migrations.AddField(
            model_name="gatingmark",
            name="confidence",
            field=models.FloatField(default=0.95),
        ),
        migrations.AlterField(
            model_name="gateresult",
            name="min_pass_rate",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="gateresult",
            name="max_error_rate",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="gateresult",
            name="confidence",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="gatetoken",
            name="rubric_version",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="gate_tokens",
                to="labeling.rubricversion",
            ),
        ),
        migrations.AddField(
            model_name="gatetoken",
            name="eval_set_pattern",
            field=models.CharField(default="*", max_length=200),
        ),
        # Nullable first, so that going back can add it again before filling it.
        migrations.AlterField(
            model_name="gatetoken",
            name="rubric",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="gate_tokens",
                to="labeling.rubric",
            ),
        ),
    ]
