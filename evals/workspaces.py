"""Which workspace a row belongs to, and the rows of one workspace.

Every model names the path from its rows to their workspace in `workspace_path` ("" for Workspace itself,
"workspace" for the top-level models, e.g. "case__eval_set__workspace" for an output). `in_workspace` is
how every page, endpoint, command and task reads rows: a row of another workspace is then exactly as
missing as one that does not exist (docs/security.md, "Workspaces").
"""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import FieldDoesNotExist
from django.db import models

from evals.models import Workspace

M = TypeVar("M", bound=models.Model)


def workspace_path(model: type[models.Model]) -> str:
    path = getattr(model, "workspace_path", None)
    if path is None:
        raise FieldDoesNotExist(f"{model.__name__} names no workspace_path: every model must (evals/workspaces.py)")
    return path


def in_workspace(rows: type[M] | models.QuerySet[M], workspace: Workspace | int) -> models.QuerySet[M]:
    """The rows (a model or a queryset) that belong to `workspace`."""
    queryset = rows if isinstance(rows, models.QuerySet) else rows._default_manager.all()
    path = workspace_path(queryset.model)
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    return queryset.filter(**{f"{path}_id" if path else "pk": workspace_id})


def workspace_of(row: models.Model) -> Workspace:
    """The workspace `row` belongs to (one query at most per step of its path that is not loaded)."""
    path = workspace_path(type(row))
    found: object = row
    for step in path.split("__") if path else ():
        found = getattr(found, step)
    assert isinstance(found, Workspace)
    return found


def workspace_id_of(row: models.Model) -> int:
    path = workspace_path(type(row))
    if not path:
        return row.pk
    *steps, last = path.split("__")
    found: object = row
    for step in steps:
        found = getattr(found, step)
    return getattr(found, f"{last}_id")
