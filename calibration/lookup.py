"""Finding eval sets, rubric versions and judge configs by the names people type.

Commands and the HTTP gate take names, not ids; a typo gets a message that says what exists.
"""

from __future__ import annotations

from judging.models import JudgeConfig
from labeling.models import EvalSet, RubricVersion


class UnknownName(Exception):
    """A name that matches nothing; the message lists what does exist."""


def _known(values: list[str], limit: int = 8) -> str:
    if not values:
        return "there are none yet"
    shown = ", ".join(values[:limit])
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return f"known: {shown}{more}"


def eval_set_named(name: str) -> EvalSet:
    found = EvalSet.objects.filter(name=name).first()
    if found is None:
        names = list(EvalSet.objects.order_by("name").values_list("name", flat=True))
        raise UnknownName(f"unknown eval set {name!r} ({_known(names)})")
    return found


def parse_rubric_ref(ref: str) -> tuple[str, str]:
    name, sep, version = (ref or "").rpartition("@")
    if not sep or not name or not version:
        raise UnknownName(f"rubric must be written NAME@VERSION, got {ref!r}")
    return name, version


def rubric_version_named(ref: str) -> RubricVersion:
    name, version = parse_rubric_ref(ref)
    found = RubricVersion.objects.select_related("rubric").filter(rubric__name=name, version=version).first()
    if found is None:
        refs = [rv.ref for rv in RubricVersion.objects.select_related("rubric").order_by("rubric__name", "version")]
        raise UnknownName(f"unknown rubric version {ref!r} ({_known(refs)})")
    return found


def judge_named(name: str) -> JudgeConfig:
    found = JudgeConfig.objects.filter(name=name).first()
    if found is None:
        names = list(JudgeConfig.objects.order_by("name").values_list("name", flat=True))
        raise UnknownName(f"unknown judge config {name!r} ({_known(names)})")
    return found
