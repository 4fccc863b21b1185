"""The names a call gives (eval set, rubric version, judge config) as query parameters, and finding them."""

from __future__ import annotations

from typing import Annotated

from ninja import Field

from api.auth import ApiError
from evals.lookup import eval_set_named
from evals.models import Criterion, EvalSet, RubricVersion, Workspace
from evals.validators import RUBRIC_REF_PATTERN, UnknownName
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig

# Names in query parameters: never empty (the schema says so, as the server does), at most a name's length.
EvalSetName = Annotated[str, Field(min_length=1, max_length=200)]
RubricRef = Annotated[str, Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")]
JudgeName = Annotated[str, Field(min_length=1, max_length=200)]


def named(
    eval_set: str, rubric: str, judge: str, *, workspace: Workspace
) -> tuple[EvalSet, RubricVersion, JudgeConfig]:
    """The eval set, rubric version and judge config of `workspace` (the token's) by name; ApiError 404 naming
    what was asked.

    As at the HTTP gate, the message does not list the names that exist: a token holder learns
    nothing beyond what it named and its token's scope. A name that exists only in another workspace is
    unknown here, with the same message as a name that exists nowhere.
    """
    try:
        return (
            eval_set_named(eval_set, workspace, say_known=False),
            RubricVersion.objects.by_ref(rubric, workspace, say_known=False),
            judge_named(judge, workspace, say_known=False),
        )
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None


def named_instrument(
    eval_set: str, rubric: str, judge: str, criterion: str, *, workspace: Workspace
) -> tuple[EvalSet, Criterion, JudgeConfig]:
    """`named`, and the criterion of the rubric version by its key (ApiError 404 naming it when it has none): what an
    audit plan and a watch are started on."""
    found_set, rubric_version, judge_config = named(eval_set, rubric, judge, workspace=workspace)
    found = rubric_version.criteria.filter(key=criterion).first()
    if found is None:
        raise ApiError(404, f"{rubric_version.ref} has no criterion {criterion!r}")
    return found_set, found, judge_config


def named_judge(judge: str, *, workspace: Workspace) -> JudgeConfig:
    """A judge config of `workspace` by name; ApiError 404 as `named` answers (another workspace's is unknown)."""
    try:
        return judge_named(judge, workspace, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
