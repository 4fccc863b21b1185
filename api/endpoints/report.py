"""The calibration report (GET /api/calibration-report): the same JSON as `calibration_report --format json`."""

from __future__ import annotations

from django.http import HttpResponse
from ninja import Router

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_scope
from api.models import TokenScope
from api.schemas import ERRORS, ReportOut
from calibration.report.compose import calibration_report, segmented_report
from calibration.report.files import to_json
from calibration.workbench.holdout_looks import count_report_look

from .names import EvalSetName, JudgeName, RubricRef, named

router = Router()
REPORT = TokenAuth(TokenScope.REPORT)


@router.get("/calibration-report", auth=REPORT, response={200: ReportOut, **ERRORS})
def report(
    request: TokenHttpRequest,
    eval_set: EvalSetName,
    rubric: RubricRef,
    judge: JudgeName,
    agent_version: str | None = None,
    by: str | None = None,
):
    """The calibration report: the same JSON as `calibration_report --format json` (by=agent_version splits it)."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    if by not in (None, "agent_version"):
        raise ApiError(400, f"by must be agent_version (or left out), not {by!r}")
    if by and agent_version:
        raise ApiError(400, "by=agent_version and agent_version exclude each other: pick one")
    es, rv, jc = named(eval_set, rubric, judge, workspace=request.workspace)
    built = (
        segmented_report(eval_set=es, rubric_version=rv, judge_config=jc)
        if by
        else calibration_report(
            eval_set=es, rubric_version=rv, judge_config=jc, agent_version=agent_version, with_audit_plans=True
        )
    )
    # A version measured on the held-out split: its figures in this answer are a counted look (docs/calibration.md).
    count_report_look(eval_set=es, rubric_version=rv, judge_config=jc, by=None, via="api")
    return HttpResponse(to_json(built), content_type="application/json")
