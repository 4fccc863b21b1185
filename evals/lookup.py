"""Finding eval sets and rubric versions by the names people type (judge configs: judging/judge_lookup.py).

Commands and the HTTP gate take names, not ids; on the command line a typo gets a message that says
what exists. The HTTP gate passes `say_known=False`: a token holder must not learn the other names.
"""

from __future__ import annotations

from evals.models import EvalSet, RubricVersion


class UnknownName(Exception):
    """A name that matches nothing; the message lists what does exist unless told not to."""


def _known(values, limit: int = 8) -> str:
    values = list(values)
    if not values:
        return "there are none yet"
    shown = ", ".join(values[:limit])
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return f"known: {shown}{more}"


def unknown_name(what: str, name: str, known, say_known: bool) -> UnknownName:
    # `known` is a lazy queryset: it is read only when the message lists it.
    return UnknownName(f"unknown {what} {name!r}" + (f" ({_known(known)})" if say_known else ""))


def eval_set_named(name: str, *, say_known: bool = True) -> EvalSet:
    found = EvalSet.objects.filter(name=name).first()
    if found is None:
        raise unknown_name("eval set", name, EvalSet.objects.order_by("name").values_list("name", flat=True), say_known)
    return found


def parse_rubric_ref(ref: str) -> tuple[str, str]:
    name, sep, version = (ref or "").rpartition("@")
    if not sep or not name or not version:
        raise UnknownName(f"rubric must be written NAME@VERSION, got {ref!r}")
    return name, version


def rubric_version_named(ref: str, *, say_known: bool = True) -> RubricVersion:
    name, version = parse_rubric_ref(ref)
    found = RubricVersion.objects.select_related("rubric").filter(rubric__name=name, version=version).first()
    if found is None:
        versions = RubricVersion.objects.select_related("rubric").order_by("rubric__name", "version")
        raise unknown_name("rubric version", ref, (rv.ref for rv in versions), say_known)
    return found
