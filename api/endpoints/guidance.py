"""Judge guidance and gold splits (GET and POST /api/judge-guidance, GET /api/gold-split; docs/judging.md,
"Improving a judge"): read a config's guidance, derive a version in the name of the lead who made the token, read
the development and held-out split of an eval set's gold."""

from __future__ import annotations

from django.http import JsonResponse
from ninja import Router

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_scope
from api.models import TokenScope
from api.schemas import ERRORS, DeriveIn, GuidanceOut, SplitOut
from evals.access import has_role
from evals.lookup import eval_set_named
from evals.models import Output, Role, RubricVersion, User
from evals.validators import UnknownName
from evals.workspaces import in_workspace
from judging.gold_splits import describe, split_for
from judging.guidance import GuidanceRefused, as_document, derive_config
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig

from .names import EvalSetName, JudgeName, RubricRef

router = Router()
GUIDANCE = TokenAuth(TokenScope.GUIDANCE)


def _token_lead(request: TokenHttpRequest) -> User:
    """The lead a guidance token acts for: who made it, while still an active lead of the token's workspace (a lead
    of another workspace only is no longer this token's lead)."""
    lead = request.auth.created_by
    if not has_role(lead, request.auth.workspace_id, Role.LEAD):
        raise ApiError(403, "the lead who made this token is no longer an active lead; ask a lead for a new token")
    return lead


def _check_guidance_scope(request: TokenHttpRequest, config: JudgeConfig) -> None:
    """A config's guidance is within the token's scope when it speaks of the token's rubric version and its
    examples come from eval sets the token covers; a config without guidance is readable by any guidance token."""
    if config.guidance_rubric_version is not None:
        _check_rubric(request, config.guidance_rubric_version.ref)
        for name in sorted({e.get("eval_set", "") for g in config.guidance.values() for e in g.get("examples", [])}):
            check_scope(request, eval_set=name)


def _check_rubric(request: TokenHttpRequest, ref: str) -> None:
    if ref != request.auth.rubric_version.ref:
        raise ApiError(403, f"this token is for {request.auth.rubric_version.ref} only, not {ref!r}")


@router.get("/judge-guidance", auth=GUIDANCE, response={200: GuidanceOut, **ERRORS})
def read_guidance(request: TokenHttpRequest, judge: JudgeName):
    """A judge config's guidance (notes and examples per criterion), its version and what it was derived from."""
    try:
        config = judge_named(judge, request.workspace, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    _check_guidance_scope(request, config)
    return JsonResponse(as_document(config))


@router.post("/judge-guidance", auth=GUIDANCE, response={201: GuidanceOut, **ERRORS})
def derive_guidance(request: TokenHttpRequest, payload: DeriveIn):
    """A new version of a judge config with this guidance; the base is unchanged. Refused, nothing written, when
    an example is not a verbatim excerpt of its output, is not the gold, or comes from the held-out split."""
    _check_rubric(request, payload.rubric)
    lead = _token_lead(request)
    try:
        base = judge_named(payload.judge, request.workspace, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    _check_guidance_scope(request, base)
    document = payload.model_dump()
    ids = {e["output_id"] for c in document["criteria"].values() for e in c["examples"]}
    # Only this workspace's outputs: an id of another workspace is left to derive_config, which refuses it as the
    # output that does not exist (no 403 that would tell the id is someone's).
    mine = in_workspace(Output, request.workspace).filter(pk__in=ids)
    for name in sorted(set(mine.values_list("case__eval_set__name", flat=True))):
        check_scope(request, eval_set=name)
    del document["judge"]
    try:
        config = derive_config(base=base, guidance=document, by=lead)
    except GuidanceRefused as exc:
        raise ApiError(400, f"{exc}; nothing was written") from None
    return JsonResponse(as_document(config), status=201)


@router.get("/gold-split", auth=GUIDANCE, response={200: SplitOut, **ERRORS})
def read_split(request: TokenHttpRequest, eval_set: EvalSetName, rubric: RubricRef):
    """The development and held-out split of an eval set's gold (output ids; figures are never here)."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    try:
        es = eval_set_named(eval_set, request.workspace, say_known=False)
        rv = RubricVersion.objects.by_ref(rubric, request.workspace, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    split = split_for(es, rv)
    if split is None:
        raise ApiError(404, f"{eval_set} has no gold split under {rubric} yet")
    return JsonResponse(describe(split))
