"""An import job belongs to the workspace it imports into (issue 36). Existing ones go to `default`."""

import django.db.models.deletion
from django.db import migrations, models

from evals.workspace_migration import fill_workspace, no_change


class Migration(migrations.Migration):
    dependencies = [("evals", "0003_workspaces"), ("formats", "0004_trace_binding_root_span_kind")]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="import_jobs",
                to="evals.workspace",
            ),
        ),
        migrations.RunPython(fill_workspace("formats", "ImportJob"), no_change),
        migrations.AlterField(
            model_name="importjob",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="import_jobs", to="evals.workspace"
            ),
        ),
    ]
