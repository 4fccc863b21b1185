"""What the migrations into workspaces share: every row that existed before workspaces lands in one workspace.

A database from before workspaces (issue 36) has one team's data. Each app's migration gives its top-level
rows (eval sets, rubrics, judge configs, tokens, import jobs, gate results) the workspace `default`, made
the first time one is needed, and every account a membership there with the role it had. Ids stay as they
were: nothing is copied or renumbered, a column is added and filled.
"""

from __future__ import annotations

DEFAULT_SLUG = "default"
DEFAULT_NAME = "Default workspace"


def default_workspace(apps):
    Workspace = apps.get_model("evals", "Workspace")
    found, _ = Workspace.objects.get_or_create(slug=DEFAULT_SLUG, defaults={"name": DEFAULT_NAME})
    return found


def fill_workspace(app_label: str, model_name: str):
    """A RunPython function: the model's rows without a workspace get the default one."""

    def forward(apps, schema_editor) -> None:
        model = apps.get_model(app_label, model_name)
        if model.objects.filter(workspace__isnull=True).exists():
            model.objects.filter(workspace__isnull=True).update(workspace=default_workspace(apps))

    return forward


def no_change(apps, schema_editor) -> None:
    """Going back: the column is dropped by the schema operation before it; nothing else to undo."""
