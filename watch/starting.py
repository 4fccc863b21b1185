"""Starting and stopping a watch: a lead's acts, checked here whatever asks (page, command, API).

A watch needs a lead of the eval set's workspace, a criterion, rubric version and judge config of that workspace,
a judge config that can run, and the eval set's labeling queue open under the criterion's rubric version (its audit
stream is labeled there, double-labeled and adjudicated as any audit). The minimum defaults to the criterion's
gating mark with this judge config (the release's minimum), the TPR and TNR bounds to the lower ends of the
intervals in the mark's calibration report row; without a mark, or a row without them, the lead gives them.
"""

from __future__ import annotations

import math

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from calibration.models import GatingMark
from calibration.stats.watch import WatchSettings, start_watch
from evals import audit_log
from evals.models import AuditAction, Criterion, EvalSet, Output, Role, User
from judging import runner
from judging.backends import Misconfigured
from judging.models import JudgeConfig
from labeling.queue import current_queue

from .figures import watch_record
from .models import Watch

DEFAULT_ALPHA = 0.05


class WatchError(Exception):
    """A watch action that cannot be done; the message says why and what to do, and is shown as is."""


def refuse_non_lead(by: User, eval_set: EvalSet) -> None:
    role = by.role_in(eval_set.workspace_id)
    if role != Role.LEAD:
        held = f"is {role} there" if role else "is not a member of it"
        raise WatchError(f"Only a lead of the eval set's workspace may start or stop a watch; {by.username} {held}.")


def _rate(name: str, value: float | None, *, low_open: bool = False, high_open: bool = False) -> None:
    if value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise WatchError(f"The {name} must be a number, got {value!r}.")
    too_low = value <= 0 if low_open else value < 0
    too_high = value >= 1 if high_open else value > 1
    if too_low or too_high:
        lo, hi = ("above 0" if low_open else "at least 0"), ("below 1" if high_open else "at most 1")
        raise WatchError(f"The {name} must be {lo} and {hi}, got {value:g}.")


def _interval_low(figures: dict, key: str) -> float | None:
    """The lower end of an interval in a gating mark's report row ([low, high] in the JSON), if it has one."""
    interval = figures.get(key)
    if isinstance(interval, (list, tuple)) and interval and isinstance(interval[0], (int, float)):
        return float(interval[0])
    return None


def start(
    *,
    eval_set: EvalSet,
    criterion: Criterion,
    judge_config: JudgeConfig,
    by: User,
    audit_share: float,
    alpha: float | None = None,
    minimum: float | None = None,
    tpr_lower: float | None = None,
    tnr_lower: float | None = None,
) -> Watch:
    """Start a watch (WatchError, and nothing written, when it cannot start)."""
    refuse_non_lead(by, eval_set)
    rubric_version = criterion.rubric_version
    if rubric_version.rubric.workspace_id != eval_set.workspace_id or judge_config.workspace_id != (
        eval_set.workspace_id
    ):
        raise WatchError("The eval set, criterion and judge config must all be of one workspace.")
    _rate("audit share", audit_share, low_open=True)
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    _rate("alpha", alpha, low_open=True, high_open=True)
    for name, value in (("minimum pass rate", minimum), ("TPR bound", tpr_lower), ("TNR bound", tnr_lower)):
        _rate(name, value)
    queue = current_queue(eval_set)
    if queue is None or queue.rubric_version_id != rubric_version.pk:
        where = f"is under {queue.rubric_version.ref}" if queue else "is not open"
        raise WatchError(
            f"The labeling queue of {eval_set.name} {where}: open it under {rubric_version.ref} on the Queues page "
            "first, so the audit stream is labeled under the criterion's rubric version."
        )
    _check_judge(eval_set, rubric_version, judge_config)
    mark = (
        GatingMark.objects.for_instrument(rubric_version, judge_config)
        .filter(criterion=criterion)
        .select_related("calibration_eval_set")
        .first()
    )
    minimum, minimum_source = _minimum(minimum, mark, criterion, judge_config)
    tpr_lower, tnr_lower, bounds_source = _bounds(tpr_lower, tnr_lower, mark, criterion, judge_config)
    settings = WatchSettings(
        minimum=minimum, audit_share=float(audit_share), tpr_lower=tpr_lower, tnr_lower=tnr_lower, alpha=alpha
    )
    before = Output.objects.filter(case__eval_set=eval_set).aggregate(m=Max("pk"))["m"] or 0
    try:
        with transaction.atomic():
            watch = Watch.objects.create(
                eval_set=eval_set,
                rubric_version=rubric_version,
                criterion=criterion,
                judge_config=judge_config,
                gating_mark=mark,
                minimum=minimum,
                minimum_source=minimum_source,
                audit_share=float(audit_share),
                alpha=alpha,
                tpr_lower=tpr_lower,
                tnr_lower=tnr_lower,
                bounds_source=bounds_source,
                outputs_before=before,
                started_by=by,
                state=start_watch(settings).to_json(),
            )
            _logged(watch, by, AuditAction.WATCH_STARTED, "started")
            return watch
    except IntegrityError as exc:
        raise WatchError(
            f"{criterion.key} of {rubric_version.ref} on {eval_set.name} with judge {judge_config.name} is already "
            "watched: stop that watch first to start one with other settings."
        ) from exc


def _check_judge(eval_set: EvalSet, rubric_version, judge_config: JudgeConfig) -> None:
    """The judge must be able to grade what arrives: the runner's own checks (an empty eval set is fine: its
    outputs are still to come)."""
    try:
        runner.check(runner.Scope(eval_set, rubric_version, judge_config), check_api_key=False)
    except Misconfigured as exc:
        if "has no outputs to judge" not in str(exc):
            raise WatchError(f"The judge cannot grade the outputs: {exc}.") from exc


def _minimum(
    asked: float | None, mark: GatingMark | None, criterion: Criterion, judge_config: JudgeConfig
) -> tuple[float, str]:
    if asked is not None:
        return float(asked), "set by the lead at the start"
    if mark is None:
        raise WatchError(
            f"{criterion.key} does not gate with judge {judge_config.name}, so there is no release minimum to "
            "watch against: give the minimum pass rate."
        )
    return (
        mark.min_pass_rate,
        f"the gating mark's minimum (mark {mark.pk}, calibrated on {mark.calibration_eval_set.name})",
    )


def _bounds(
    tpr: float | None, tnr: float | None, mark: GatingMark | None, criterion: Criterion, judge_config: JudgeConfig
) -> tuple[float, float, str]:
    figures = mark.figures if mark is not None else {}
    from_mark_tpr, from_mark_tnr = _interval_low(figures, "tpr_ci"), _interval_low(figures, "tnr_ci")
    tpr_final = tpr if tpr is not None else from_mark_tpr
    tnr_final = tnr if tnr is not None else from_mark_tnr
    if tpr_final is None or tnr_final is None:
        missing = " and ".join(n for n, v in (("TPR", tpr_final), ("TNR", tnr_final)) if v is None)
        where = (
            f"the gating mark's calibration row has no {missing} interval"
            if mark is not None
            else f"{criterion.key} does not gate with judge {judge_config.name}"
        )
        raise WatchError(f"{where}: give the {missing} bound (the lower end of the calibration's interval).")
    if tpr is None and tnr is None and mark is not None:
        source = f"the lower ends of the TPR and TNR intervals in the gating mark's calibration row (mark {mark.pk})"
    elif tpr is not None and tnr is not None:
        source = "set by the lead at the start"
    else:
        source = f"one set by the lead, the other from the gating mark's calibration (mark {mark.pk if mark else '-'})"
    return float(tpr_final), float(tnr_final), source


def stop(*, watch: Watch, by: User) -> Watch:
    """Stop a watch: it takes nothing more. Its audited outputs stay in the queue (their labels are gold as any)."""
    refuse_non_lead(by, watch.eval_set)
    with transaction.atomic():
        changed = Watch.objects.filter(pk=watch.pk, stopped_at__isnull=True).update(
            stopped_at=timezone.now(), stopped_by=by
        )
        if not changed:
            raise WatchError(f"Watch {watch.pk} is already stopped.")
        watch.refresh_from_db()
        _logged(watch, by, AuditAction.WATCH_STOPPED, "stopped")
    return watch


def _logged(watch: Watch, by: User, action: AuditAction, verb: str) -> None:
    """The workspace's audit log, in the start's or stop's transaction: who watches what, and with which settings."""
    audit_log.record(
        watch.eval_set.workspace_id,
        by,
        action,
        f"Watch {watch.pk} {verb}: {watch.criterion.key} of {watch.rubric_version.ref} on {watch.eval_set.name}, "
        f"judged by {watch.judge_config.name}",
        **watch_record(watch),
    )
