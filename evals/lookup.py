"""Finding eval sets by the names people type (rubric versions: `RubricVersion.objects.by_ref`; judge configs:
judging/judge_lookup.py; all with the same exception and the same `say_known`).

Commands and the HTTP gate take names, not ids; on the command line a typo gets a message that says
what exists. The HTTP gate passes `say_known=False`: a token holder must not learn the other names.
"""

from __future__ import annotations

from evals.models import EvalSet, Workspace
from evals.validators import UnknownName, known_names


def unknown_name(what: str, name: str, known, say_known: bool) -> UnknownName:
    # `known` is a lazy queryset: it is read only when the message lists it.
    return UnknownName(f"unknown {what} {name!r}" + (f" ({known_names(known)})" if say_known else ""))


def eval_set_named(name: str, workspace: Workspace, *, say_known: bool = True) -> EvalSet:
    """The eval set of `workspace` called `name`; the message lists only that workspace's names."""
    mine = EvalSet.objects.filter(workspace=workspace)
    found = mine.filter(name=name).first()
    if found is None:
        raise unknown_name("eval set", name, mine.order_by("name").values_list("name", flat=True), say_known)
    return found
