"""Audit plans (issue 22; POST and GET /api/audit-plans, GET /api/audit-plans/{plan_id}, POST .../next and
.../close; an audit of several criteria on one sample, POST /api/audit-plan-groups and GET .../{group_id}): the same
domain functions as manage.py audit_plan (calibration/audits/plans.py, groups.py), in the name of the lead who made
the token: an audit plan is a lead's act, so a token whose maker is no longer a lead may not act for one."""

from __future__ import annotations

from typing import Annotated

from django.http import JsonResponse
from ninja import Field, Router

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_scope
from api.models import TokenScope
from api.schemas import (
    ERRORS,
    MAX_AUDIT_K,
    AuditFiguresOut,
    AuditFiguresPendingOut,
    AuditGroupIn,
    AuditGroupOut,
    AuditNextIn,
    AuditPlanIn,
    AuditPlanListOut,
    AuditPlanSummaryOut,
    ErrorOut,
)
from calibration.audits import plan_signals
from calibration.audits.group_text import answer as group_answer
from calibration.audits.groups import start_group
from calibration.audits.plans import AuditPlanError, close_plan, plan_record, release_plan_next, start_plan
from calibration.audits.stored_figures import stored_for
from calibration.models import AuditPlan, AuditPlanGroup
from evals.lookup import eval_set_named
from evals.models import Role
from evals.validators import UnknownName
from evals.workspaces import in_workspace

from .names import EvalSetName, named_instrument, named_judge

router = Router()
AUDIT = TokenAuth(TokenScope.AUDIT)


AUDIT_ERRORS = {**ERRORS, 409: ErrorOut, 411: ErrorOut, 413: ErrorOut}
FIGURES = {200: AuditFiguresOut, 202: AuditFiguresPendingOut}
ForecastK = Annotated[int, Field(ge=1, le=MAX_AUDIT_K, description="forecast after this many more labels")]


def _lead_of(request: TokenHttpRequest):
    maker = request.auth.created_by
    if maker.role_in(request.auth.workspace_id) != Role.LEAD:
        raise ApiError(
            403,
            f"this token was made by {maker.username}, who is no longer a lead; audit plans are a lead's: "
            "a lead can create a token with the audit scope",
        )
    return maker


def _plan_in_scope(request: TokenHttpRequest, plan_id: int) -> AuditPlan:
    """The plan, if it is of the token's workspace and the token's scope covers its eval set and rubric version;
    else the answer a missing plan gets (a 403 would tell a token holder which plan ids exist)."""
    plans = in_workspace(AuditPlan.objects.for_figures(), request.workspace).select_related("created_by")
    plan = plans.filter(pk=plan_id).first()
    try:
        if plan is not None:
            check_scope(request, eval_set=plan.eval_set.name, rubric=plan.criterion.rubric_version.ref)
    except ApiError:
        plan = None
    if plan is None:
        # The message does not repeat the id: the answer is byte for byte that of a plan that never was.
        raise ApiError(404, "there is no audit plan with this id")
    return plan


def _refused(exc: AuditPlanError) -> ApiError:
    return ApiError(409, str(exc))


def _figures(plan: AuditPlan, status: int = 200) -> JsonResponse:
    """The figures a worker stored, with their freshness (issue 37: no request computes them); 202 with the
    freshness alone until the first computation is done."""
    stored = stored_for(plan)
    if stored.figures is None:
        return JsonResponse({"plan": plan.pk, "computed": False} | stored.as_dict(), status=202)
    return JsonResponse(stored.as_dict(), status=status)


@router.post("/audit-plans", auth=AUDIT, response={201: AuditFiguresOut, 202: AuditFiguresPendingOut, **AUDIT_ERRORS})
def create_audit_plan(request: TokenHttpRequest, payload: AuditPlanIn):
    """Start an audit plan on a release candidate, as `audit_plan create` does; answers 202 with the plan's id while
    a worker computes its first figures (GET the plan for them).

    404 for a name that matches nothing (the criterion included), 409 when the plan cannot start (the queue is not
    open under the rubric version, the criterion does not gate with the judge, a plan is open, looser thresholds).
    """
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    lead = _lead_of(request)
    eval_set, criterion, judge_config = named_instrument(
        payload.eval_set, payload.rubric, payload.judge, payload.criterion, workspace=request.workspace
    )
    also = [named_judge(name, workspace=request.workspace) for name in payload.also_judges]
    try:
        plan = start_plan(
            criterion=criterion,
            eval_set=eval_set,
            judge_config=judge_config,
            by=lead,
            agent_version=payload.agent_version,
            seed=payload.seed,
            min_pass_rate=payload.min_pass_rate,
            confidence=payload.confidence,
            design=payload.design,
            extra_judges=also,
        )
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return _figures(plan, status=201)


@router.get("/audit-plans", auth=AUDIT, response={200: AuditPlanListOut, **ERRORS})
def list_audit_plans(request: TokenHttpRequest, eval_set: EvalSetName):
    """The audit plans of an eval set under the token's rubric version, newest first, open and closed."""
    check_scope(request, eval_set=eval_set)
    try:
        found = eval_set_named(eval_set, request.workspace, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    plans = (
        AuditPlan.objects.filter(eval_set=found, criterion__rubric_version=request.auth.rubric_version)
        .select_related("criterion__rubric_version__rubric", "eval_set", "judge_config", "created_by")
        .prefetch_related(plan_signals.without_values())
        .order_by("-created_at", "-id")
    )
    records = [plan_record(plan) for plan in plans]
    return JsonResponse(
        {"eval_set": found.name, "plans": records, "open": sum(r["closed_at"] is None for r in records)}
    )


@router.get("/audit-plans/{plan_id}", auth=AUDIT, response={**FIGURES, **ERRORS})
def show_audit_plan(request: TokenHttpRequest, plan_id: int, k: ForecastK = 25):
    """The plan's figures as a worker last computed them, with their freshness: the same JSON as `audit_plan show
    PLAN --format json`; 202 until the first are computed. (k is accepted for old clients: the forecast is the
    worker's, for the next 25 labels.)"""
    plan = _plan_in_scope(request, plan_id)
    return _figures(plan)


@router.post("/audit-plans/{plan_id}/next", auth=AUDIT, response={**FIGURES, **AUDIT_ERRORS})
def release_audit_plan_next(request: TokenHttpRequest, plan_id: int, payload: AuditNextIn):
    """'Label these k next', as `audit_plan next PLAN -k K`: the queue may hand out k more outputs of the order;
    answers with the stored figures (a worker computes them anew for the release: see `freshness`). 409 if the plan
    is closed."""
    plan = _plan_in_scope(request, plan_id)
    lead = _lead_of(request)
    try:
        release_plan_next(plan=plan, by=lead, k=payload.k)
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return _figures(plan)


@router.post("/audit-plans/{plan_id}/close", auth=AUDIT, response={200: AuditPlanSummaryOut, **AUDIT_ERRORS})
def close_audit_plan(request: TokenHttpRequest, plan_id: int):
    """Close a plan (kept for the record; closing a closed plan changes nothing); another may then be started."""
    plan = _plan_in_scope(request, plan_id)
    try:
        close_plan(plan=plan, by=_lead_of(request))
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return JsonResponse(plan_record(plan))


@router.post("/audit-plan-groups", auth=AUDIT, response={201: AuditGroupOut, **AUDIT_ERRORS})
def create_audit_group(request: TokenHttpRequest, payload: AuditGroupIn):
    """Start one audit of several gating criteria on one sample (issue 37 item 3), as `audit_plan create
    --criterion A --criterion B`: a plan per criterion on the eval set's one order, the levels (PASS at alpha, FAIL
    at alpha / k) fixed now. 404 for a name that matches nothing, 409 when it cannot start (a criterion twice, one
    that does not gate, an open plan on one of them); nothing is started then."""
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    lead = _lead_of(request)
    criteria = []
    for key in payload.criteria:
        eval_set, criterion, judge_config = named_instrument(
            payload.eval_set, payload.rubric, payload.judge, key, workspace=request.workspace
        )
        criteria.append(criterion)
    try:
        group = start_group(
            criteria=criteria,
            eval_set=eval_set,
            judge_config=judge_config,
            by=lead,
            agent_version=payload.agent_version,
            seed=payload.seed,
        )
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return JsonResponse(group_answer(group), status=201)


@router.get("/audit-plan-groups/{group_id}", auth=AUDIT, response={200: AuditGroupOut, **ERRORS})
def show_audit_group(request: TokenHttpRequest, group_id: int):
    """The group and its shared decision as a worker last stored it, with its freshness: the same JSON as
    `audit_plan show --group ID --format json`. Another workspace's group, or one outside the token's scope, answers
    as a missing one."""
    groups = in_workspace(
        AuditPlanGroup.objects.select_related("eval_set", "judge_config", "created_by"), request.workspace
    )
    group = groups.filter(pk=group_id).first()
    plan = group.plans.select_related("criterion__rubric_version__rubric").first() if group else None
    try:
        if group is not None and plan is not None:
            check_scope(request, eval_set=group.eval_set.name, rubric=plan.criterion.rubric_version.ref)
    except ApiError:
        group = None
    if group is None or plan is None:
        raise ApiError(404, "there is no audit group with this id")
    return JsonResponse(group_answer(group))
