"""Finding a judge config by the name people type, with the same message as evals.lookup's."""

from __future__ import annotations

from evals.lookup import unknown_name
from evals.models import Workspace

from .models import JudgeConfig


def judge_named(name: str, workspace: Workspace, *, say_known: bool = True) -> JudgeConfig:
    """The judge config of `workspace` called `name`; the message lists only that workspace's names."""
    mine = JudgeConfig.objects.filter(workspace=workspace)
    found = mine.filter(name=name).first()
    if found is None:
        raise unknown_name("judge config", name, mine.order_by("name").values_list("name", flat=True), say_known)
    return found
