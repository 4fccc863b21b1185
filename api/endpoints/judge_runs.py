"""Judge runs (POST /api/judge-runs, GET /api/judge-runs/{run_id}): queue a run on the Celery workers as
`run_judge` does, and follow its progress."""

from __future__ import annotations

import dataclasses

from django.http import JsonResponse
from ninja import Router

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_scope
from api.models import TokenScope
from api.schemas import ERRORS, ErrorOut, ProgressOut, RunIn
from evals.workspaces import in_workspace
from judging import runner
from judging.backends import Misconfigured
from judging.models import JudgeRun
from judging.run_progress import Progress, progress_of

from .names import named

router = Router()
JUDGE = TokenAuth(TokenScope.JUDGE)


def progress_body(progress: Progress) -> dict:
    body = dataclasses.asdict(progress)
    for key in ("started_at", "finished_at"):
        body[key] = body[key].isoformat() if body[key] else None
    body.update(percent=progress.percent, finished=progress.finished, complete=progress.complete)
    return body


@router.post("/judge-runs", auth=JUDGE, response={202: ProgressOut, **ERRORS, 503: ErrorOut})
def start_judge_run(request: TokenHttpRequest, payload: RunIn):
    """Queue a judge run on the Celery workers (as `run_judge` does); follow it with GET /api/judge-runs/{id}."""
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    try:
        names = named(payload.eval_set, payload.rubric, payload.judge, workspace=request.workspace)
        scope = runner.Scope(*names, payload.agent_version)
        # The judge's API key lives where the workers run, not necessarily here: the lane checks it.
        run = runner.start_run(scope, check_api_key=False)
    except Misconfigured as exc:
        raise ApiError(400, f"the run cannot start: {exc}") from None
    run.refresh_from_db(fields=["status", "error"])
    if run.status == JudgeRun.Status.FAILED:
        raise ApiError(503, f"judge run {run.pk} could not start: {run.error}", run_id=run.pk)
    # The progress as the domain words it (ProgressOut documents it; tests/api/test_api_schema.py holds it to that).
    return JsonResponse(progress_body(progress_of(run)), status=202)


@router.get("/judge-runs/{run_id}", auth=JUDGE, response={200: ProgressOut, **ERRORS})
def judge_run_progress(request: TokenHttpRequest, run_id: int):
    """How far a judge run has got: items, verdicts per outcome, the most frequent ERROR reasons."""
    runs = in_workspace(JudgeRun, request.workspace).select_related("eval_set", "rubric_version__rubric")
    run = runs.filter(pk=run_id).first()
    # A run outside the token's scope (or workspace) gets the very answer a missing one gets: a 403 would tell a
    # token holder which run ids exist (and so how many runs other projects made).
    try:
        if run is not None:
            check_scope(request, eval_set=run.eval_set.name, rubric=run.rubric_version.ref)
    except ApiError:
        run = None
    if run is None:
        # The message does not repeat the id: the answer is byte for byte that of a run that never was.
        raise ApiError(404, "there is no judge run with this id")
    return JsonResponse(progress_body(progress_of(run)))
