"""An API token belongs to one workspace and reaches nothing outside it (issue 36). Existing ones go to `default`."""

import django.db.models.deletion
from django.db import migrations, models

from evals.workspace_migration import fill_workspace, no_change


class Migration(migrations.Migration):
    dependencies = [("evals", "0003_workspaces"), ("api", "0002_token_trace_binding")]

    operations = [
        migrations.AddField(
            model_name="gatetoken",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tokens",
                to="evals.workspace",
            ),
        ),
        migrations.RunPython(fill_workspace("api", "GateToken"), no_change),
        migrations.AlterField(
            model_name="gatetoken",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="tokens", to="evals.workspace"
            ),
        ),
    ]
