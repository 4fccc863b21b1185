from django.db import migrations, models


class Migration(migrations.Migration):
    """Which lower bound decides the gate. Marks that exist were made when the gate decided on the observed
    (Wilson) bound, so they keep it; new marks default to the corrected bound (calibration/policy.py)."""

    dependencies = [
        ("calibration", "0007_gate_result_web"),
    ]

    operations = [
        migrations.AddField(
            model_name="gatingmark",
            name="decide_on",
            field=models.CharField(
                choices=[
                    ("corrected_lower", "corrected lower bound"),
                    ("wilson_lower", "observed (Wilson) lower bound"),
                ],
                default="wilson_lower",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="gatingmark",
            name="decide_on",
            field=models.CharField(
                choices=[
                    ("corrected_lower", "corrected lower bound"),
                    ("wilson_lower", "observed (Wilson) lower bound"),
                ],
                default="corrected_lower",
                max_length=16,
            ),
        ),
    ]
