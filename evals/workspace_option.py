"""`--workspace SLUG` of the management commands: which workspace a command's names are looked up in.

Every command that names an eval set, rubric, judge config, plan or token takes it. Without it, the
environment's ICEWATER_WORKSPACE, else the only workspace when there is exactly one. An unknown or
ambiguous workspace is a one-line error naming the choices, and nothing is done.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser

from django.core.management.base import CommandError

from evals.models import Workspace

ENVIRONMENT = "ICEWATER_WORKSPACE"


def add_workspace_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        metavar="SLUG",
        help=f"the workspace whose names this command reads and writes (default: ${ENVIRONMENT}, "
        "or the only workspace when there is one)",
    )


def chosen_workspace(slug: str | None) -> Workspace:
    """The workspace `--workspace` (or the environment, or there being one) names; CommandError otherwise."""
    slug = slug or os.environ.get(ENVIRONMENT) or None
    if slug is not None:
        found = Workspace.objects.filter(slug=slug).first()
        if found is None:
            raise CommandError(f"there is no workspace {slug!r} ({_choices()})")
        return found
    only = list(Workspace.objects.all()[:2])
    if len(only) == 1:
        return only[0]
    if not only:
        raise CommandError("there is no workspace yet: make one with `manage.py add_workspace SLUG`")
    raise CommandError(f"say which workspace with --workspace SLUG or ${ENVIRONMENT} ({_choices()})")


def _choices() -> str:
    slugs = list(Workspace.objects.order_by("slug").values_list("slug", flat=True))
    return "workspaces: " + ", ".join(slugs) if slugs else "there are no workspaces yet"
