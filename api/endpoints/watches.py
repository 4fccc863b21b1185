"""Watches on production traffic (issue 39; POST and GET /api/watches, GET /api/watches/{watch_id}, POST
.../stop): the same domain functions as `manage.py watch` (watch/starting.py, watch/figures.py), with a token of the
audit scope (a watch's audit stream is an audit's), in the name of the lead who made it. Starting and stopping are a
lead's; reading needs the maker to be a reviewer or lead still (an annotator never reads the judge's figures). A
watch of another workspace, or outside the token's eval sets and rubric version, answers as a missing one.
"""

from __future__ import annotations

from django.http import JsonResponse
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_scope
from api.models import TokenScope
from api.schemas import ERRORS, ErrorOut
from evals.models import Role, User
from evals.validators import RUBRIC_REF_PATTERN
from evals.workspaces import in_workspace
from watch.figures import watch_figures, watch_record
from watch.models import Watch
from watch.starting import WatchError, start, stop
from watch.tasks import send_update

from .names import named_instrument

router = Router()
AUDIT = TokenAuth(TokenScope.AUDIT)
WATCH_ERRORS = {**ERRORS, 409: ErrorOut, 411: ErrorOut, 413: ErrorOut}


class WatchIn(Schema):
    """A new watch, the same as `watch start`'s flags (the lead is the one who made the token)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="WatchRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the production eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config that grades the outputs")
    criterion: str = Field(min_length=1, max_length=100, description="the criterion's key")
    audit_share: float = Field(gt=0, le=1, description="p: the share of arriving outputs drawn for annotators")
    alpha: float | None = Field(default=None, gt=0, lt=1, description="each test's false-alarm probability (0.05)")
    minimum: float | None = Field(default=None, ge=0, le=1, description="default: the gating mark's minimum")
    tpr_lower: float | None = Field(default=None, ge=0, le=1, description="default: the calibration's TPR bound")
    tnr_lower: float | None = Field(default=None, ge=0, le=1, description="default: the calibration's TNR bound")


class WatchOut(Schema):
    """A watch as the list gives it (watch/figures.py watch_record)."""

    id: int
    eval_set: str
    rubric: str
    criterion: str
    judge: str
    status: str = Field(description="watching or stopped")
    minimum: float
    audit_share: float
    alpha: float
    labels: int = Field(description="audit labels fed to the statistics")
    outputs: int = Field(description="outputs fed to the statistics")
    started_by: str
    started_at: str
    stopped_at: str | None


class WatchListOut(Schema):
    rubric: str = Field(description="the token's rubric version: the watches listed are under it")
    watches: list[WatchOut] = Field(description="newest first")
    watching: int = Field(description="how many of them are still watching")


class WatchBandOut(Schema):
    estimate: float | None
    lower: float
    upper: float
    bound: float = Field(description="the minimum, or the calibration's lower bound")
    reading: str = Field(description="above, straddles or below the bound")


class WatchAlarmOut(Schema):
    what: str = Field(description="pass rate, TPR or TNR")
    bound: float
    estimate: float | None
    band: list[float]
    at_labels: int
    at_outputs: int
    since_labels: int
    since_outputs: int
    evidence: float
    advice: str
    message: str
    fired_at: str


class WatchPointOut(Schema):
    labels: int
    outputs: int
    estimate: float | None
    lower: float
    upper: float
    tpr: list[float | None] = Field(description="[estimate, lower, upper]")
    tnr: list[float | None] = Field(description="[estimate, lower, upper]")
    at: str


class WatchFiguresOut(WatchOut):
    """A watch's figures now, as `watch show --format json` (watch/figures.py watch_figures)."""

    alarms: list[WatchAlarmOut]
    bands: dict[str, WatchBandOut] = Field(description="keyed by pass rate, TPR, TNR")
    minimum_source: str
    tpr_lower: float
    tnr_lower: float
    bounds_source: str
    fired: list[str]
    arrived: int
    drawn: int
    awaiting_verdict: int
    awaiting_gold: int
    unjudged: int
    problem: str
    updated_at: str | None
    freshness: str
    points: list[WatchPointOut] = Field(description="the latest band points, newest first")


def _maker(request: TokenHttpRequest, *roles: str) -> User:
    maker = request.auth.created_by
    role = maker.role_in(request.auth.workspace_id)
    if role not in roles:
        held = f"is {role} there now" if role else "is no longer a member of the token's workspace"
        who = "a lead may start and stop watches" if roles == (Role.LEAD,) else "a reviewer or lead may read watches"
        raise ApiError(403, f"this token was made by {maker.username}, who {held}; only {who}")
    return maker


def _watches(request: TokenHttpRequest):
    return in_workspace(
        Watch.objects.select_related("eval_set", "rubric_version__rubric", "criterion", "judge_config", "started_by"),
        request.workspace,
    ).filter(rubric_version=request.auth.rubric_version)


def _watch_in_scope(request: TokenHttpRequest, watch_id: int) -> Watch:
    watch = _watches(request).filter(pk=watch_id).first()
    try:
        if watch is not None:
            check_scope(request, eval_set=watch.eval_set.name)
    except ApiError:
        watch = None
    if watch is None:
        raise ApiError(404, "there is no watch with this id")
    return watch


@router.post("/watches", auth=AUDIT, response={201: WatchFiguresOut, **WATCH_ERRORS})
def start_watch(request: TokenHttpRequest, payload: WatchIn):
    """Start a watch, as `watch start` does; answers with its figures. 404 for a name that matches nothing, 409 when
    it cannot start (the queue not open under the rubric version, no minimum or bounds to watch against, already
    watched)."""
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    lead = _maker(request, Role.LEAD)
    eval_set, criterion, judge_config = named_instrument(
        payload.eval_set, payload.rubric, payload.judge, payload.criterion, workspace=request.workspace
    )
    try:
        watch = start(
            eval_set=eval_set,
            criterion=criterion,
            judge_config=judge_config,
            by=lead,
            audit_share=payload.audit_share,
            alpha=payload.alpha,
            minimum=payload.minimum,
            tpr_lower=payload.tpr_lower,
            tnr_lower=payload.tnr_lower,
        )
    except WatchError as exc:
        raise ApiError(409, str(exc)) from None
    send_update(watch.pk)
    return JsonResponse(watch_figures(watch), status=201)


@router.get("/watches", auth=AUDIT, response={200: WatchListOut, **ERRORS})
def list_watches(request: TokenHttpRequest):
    """The watches under the token's rubric version on its eval sets, newest first, watching and stopped."""
    _maker(request, Role.REVIEWER, Role.LEAD)
    pattern_ok = []
    for watch in _watches(request):
        try:
            check_scope(request, eval_set=watch.eval_set.name)
        except ApiError:
            continue
        pattern_ok.append(watch_record(watch))
    watching = sum(record["status"] == "watching" for record in pattern_ok)
    return JsonResponse({"rubric": request.auth.rubric_version.ref, "watches": pattern_ok, "watching": watching})


@router.get("/watches/{watch_id}", auth=AUDIT, response={200: WatchFiguresOut, **ERRORS})
def show_watch(request: TokenHttpRequest, watch_id: int):
    """The watch's figures now: the same JSON as `watch show WATCH --format json`."""
    _maker(request, Role.REVIEWER, Role.LEAD)
    return JsonResponse(watch_figures(_watch_in_scope(request, watch_id)))


@router.post("/watches/{watch_id}/stop", auth=AUDIT, response={200: WatchOut, **WATCH_ERRORS})
def stop_watch(request: TokenHttpRequest, watch_id: int):
    """Stop a watch (409 if it is stopped already); answers with its record."""
    watch = _watch_in_scope(request, watch_id)
    lead = _maker(request, Role.LEAD)
    try:
        watch = stop(watch=watch, by=lead)
    except WatchError as exc:
        raise ApiError(409, str(exc)) from None
    return JsonResponse(watch_record(watch))
