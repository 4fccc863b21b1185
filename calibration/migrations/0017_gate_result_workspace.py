"""A gate result belongs to the workspace whose gate answered (issue 36). Existing ones go to `default`."""

import django.db.models.deletion
from django.db import migrations, models

from evals.workspace_migration import fill_workspace, no_change


class Migration(migrations.Migration):
    dependencies = [("evals", "0003_workspaces"), ("calibration", "0016_gating_mark_decides_on_audit")]

    operations = [
        migrations.AddField(
            model_name="gateresult",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="gate_results",
                to="evals.workspace",
            ),
        ),
        migrations.RunPython(fill_workspace("calibration", "GateResult"), no_change),
        migrations.AlterField(
            model_name="gateresult",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="gate_results", to="evals.workspace"
            ),
        ),
    ]
