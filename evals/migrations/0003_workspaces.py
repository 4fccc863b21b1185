"""Workspaces (issue 36): eval sets and rubrics belong to one, people are members with a role in each.

A database from before keeps every row and id: eval sets and rubrics move into the workspace `default`,
and every account becomes a member of it with the role it had (evals/workspace_migration.py). Names are
unique within a workspace from now on, not across workspaces.
"""

import django.db.models.deletion

import evals.validators
from django.conf import settings
from django.db import migrations, models

from evals.workspace_migration import default_workspace, fill_workspace, no_change

ROLE_CHOICES = [("annotator", "Annotator"), ("reviewer", "Reviewer"), ("lead", "Lead")]


def members_from_roles(apps, schema_editor) -> None:
    User = apps.get_model("evals", "User")
    Membership = apps.get_model("evals", "Membership")
    users = list(User.objects.order_by("pk").values_list("pk", "role"))
    if not users:
        return
    workspace = default_workspace(apps)
    Membership.objects.bulk_create(
        [Membership(user_id=pk, workspace=workspace, role=role) for pk, role in users], ignore_conflicts=True
    )


def roles_from_members(apps, schema_editor) -> None:
    """Going back to one role per person: their highest role in any workspace."""
    User = apps.get_model("evals", "User")
    Membership = apps.get_model("evals", "Membership")
    rank = {"annotator": 0, "reviewer": 1, "lead": 2}
    best: dict[int, str] = {}
    for user_id, role in Membership.objects.values_list("user_id", "role"):
        if rank[role] > rank.get(best.get(user_id, "annotator"), 0):
            best[user_id] = role
    for user_id, role in best.items():
        User.objects.filter(pk=user_id).update(role=role)


class Migration(migrations.Migration):
    dependencies = [("evals", "0002_content_types")]

    operations = [
        migrations.CreateModel(
            name="Workspace",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("slug", models.SlugField(unique=True)),
                ("name", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={"ordering": ["name", "slug"]},
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", models.CharField(choices=ROLE_CHOICES, default="annotator", max_length=16)),
                (
                    "source",
                    models.CharField(
                        choices=[("local", "Icewater"), ("oidc", "Identity provider")], default="local", max_length=8
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="evals.workspace"
                    ),
                ),
            ],
            options={"ordering": ["workspace", "user__username"]},
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(fields=("user", "workspace"), name="one_membership_per_workspace"),
        ),
        migrations.AddField(
            model_name="evalset",
            name="workspace",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="eval_sets", to="evals.workspace"
            ),
        ),
        migrations.AddField(
            model_name="rubric",
            name="workspace",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="rubrics", to="evals.workspace"
            ),
        ),
        migrations.RunPython(fill_workspace("evals", "EvalSet"), no_change),
        migrations.RunPython(fill_workspace("evals", "Rubric"), no_change),
        migrations.RunPython(members_from_roles, roles_from_members),
        migrations.AlterField(
            model_name="evalset",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="eval_sets", to="evals.workspace"
            ),
        ),
        migrations.AlterField(
            model_name="rubric",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="rubrics", to="evals.workspace"
            ),
        ),
        migrations.AlterField(
            model_name="evalset",
            name="name",
            field=models.CharField(max_length=200, validators=[evals.validators.validate_name]),
        ),
        migrations.AlterField(
            model_name="rubric",
            name="name",
            field=models.CharField(max_length=200, validators=[evals.validators.validate_name]),
        ),
        migrations.AddConstraint(
            model_name="evalset",
            constraint=models.UniqueConstraint(fields=("workspace", "name"), name="eval_set_name_unique_in_workspace"),
        ),
        migrations.AddConstraint(
            model_name="rubric",
            constraint=models.UniqueConstraint(fields=("workspace", "name"), name="rubric_name_unique_in_workspace"),
        ),
        migrations.RemoveField(model_name="user", name="role"),
    ]
