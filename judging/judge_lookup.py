"""Finding a judge config by the name people type, with the same message as evals.lookup's."""

from __future__ import annotations

from evals.lookup import unknown_name

from .models import JudgeConfig


def judge_named(name: str, *, say_known: bool = True) -> JudgeConfig:
    found = JudgeConfig.objects.filter(name=name).first()
    if found is None:
        raise unknown_name(
            "judge config", name, JudgeConfig.objects.order_by("name").values_list("name", flat=True), say_known
        )
    return found
