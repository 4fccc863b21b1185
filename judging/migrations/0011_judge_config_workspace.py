"""Judge configs belong to a workspace (issue 36); names are unique within one. Existing ones go to `default`."""

import django.db.models.deletion
from django.db import migrations, models

import evals.validators

from evals.workspace_migration import fill_workspace, no_change


class Migration(migrations.Migration):
    dependencies = [("evals", "0003_workspaces"), ("judging", "0010_judge_guidance_and_gold_splits")]

    operations = [
        migrations.AddField(
            model_name="judgeconfig",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judge_configs",
                to="evals.workspace",
            ),
        ),
        migrations.RunPython(fill_workspace("judging", "JudgeConfig"), no_change),
        migrations.AlterField(
            model_name="judgeconfig",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="judge_configs", to="evals.workspace"
            ),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="name",
            field=models.CharField(max_length=200, validators=[evals.validators.validate_name]),
        ),
        migrations.AddConstraint(
            model_name="judgeconfig",
            constraint=models.UniqueConstraint(fields=("workspace", "name"), name="judge_name_unique_in_workspace"),
        ),
    ]
