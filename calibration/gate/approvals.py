"""Domain actions of leads: approve a rubric version, mark criteria as gating, revoke a mark, record that
gating stays as it is after reading a calibration.

Each action checks everything first and writes in one transaction, so a refused request leaves
nothing half-written. Approvals hang on one rubric version and one judge config (and their content
hashes): a new version or a changed judge starts with none.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from calibration.data.holdout import measured_examples
from calibration.models import GatingMark, GatingReview
from calibration.report import robustness
from calibration.report.compose import calibration_report
from calibration.stats.policy import GateThresholds
from evals.access import has_role
from evals.audit_log import record
from evals.models import AuditAction, EvalSet, Role, RubricVersion, User
from judging.models import JudgeConfig


class ApprovalRefused(Exception):
    """The request is not allowed or not well-formed; the message says why."""


def _check_lead_and_reason(by: User, reason: str, rubric_version: RubricVersion, *others: EvalSet | JudgeConfig) -> str:
    """A lead of the rubric version's workspace, a reason, and every other object named in that same workspace."""
    workspace_id = rubric_version.rubric.workspace_id
    if not has_role(by, workspace_id, Role.LEAD):
        raise ApprovalRefused(f"{by.username} is not an active lead of this workspace; only its leads approve")
    if any(other.workspace_id != workspace_id for other in others):
        raise ApprovalRefused("the eval set, rubric version and judge config must all be of one workspace")
    reason = (reason or "").strip()
    if not reason:
        raise ApprovalRefused("a reason is required: say why, for whoever reads this approval later")
    return reason


def approve_rubric_version(*, rubric_version: RubricVersion, by: User, reason: str) -> RubricVersion:
    reason = _check_lead_and_reason(by, reason, rubric_version)
    workspace_id = rubric_version.rubric.workspace_id
    if rubric_version.status == RubricVersion.Status.APPROVED:
        who = rubric_version.approved_by.username if rubric_version.approved_by else "someone"
        when = f"{rubric_version.approved_at:%Y-%m-%d}" if rubric_version.approved_at else "an unknown date"
        raise ApprovalRefused(f"{rubric_version.ref} is already approved (by {who} on {when})")
    if rubric_version.status == RubricVersion.Status.RETIRED:
        raise ApprovalRefused(f"{rubric_version.ref} is retired; approve a current version instead")
    now = timezone.now()
    # Conditional update: two leads approving at once cannot both win.
    changed = RubricVersion.objects.filter(pk=rubric_version.pk, status=RubricVersion.Status.DRAFT).update(
        status=RubricVersion.Status.APPROVED, approved_by=by, approved_at=now, approval_reason=reason
    )
    if changed != 1:
        raise ApprovalRefused(f"{rubric_version.ref} changed status meanwhile; reload and try again")
    rubric_version.refresh_from_db()
    record(workspace_id, by, AuditAction.RUBRIC_APPROVED, f"approved {rubric_version.ref}", reason=reason)
    return rubric_version


def mark_gating(
    *,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    eval_set: EvalSet,
    keys: list[str],
    by: User,
    reason: str,
    override: bool = False,
    agent_version: str | None = None,
    policy: GateThresholds | None = None,
    require_clean_probes: bool = False,
) -> list[GatingMark]:
    """Mark criteria as gating on the evidence of a fresh calibration report on `eval_set`.

    Only a `gate`-tier criterion may be marked without `override`; with it, a non-gate criterion is
    marked and the mark says it was an override. The report row relied on is stored with the mark, and so
    is the gate policy (`policy`, the defaults if None) that callers of the gate may only tighten, and the
    probe results of the report (its newest complete probe run). With `require_clean_probes` a criterion
    whose probe run is not clean is refused, and the gate later refuses it while it is not.
    """
    policy = policy or GateThresholds()
    reason = _check_lead_and_reason(by, reason, rubric_version, eval_set, judge_config)
    if rubric_version.status != RubricVersion.Status.APPROVED:
        raise ApprovalRefused(f"{rubric_version.ref} is not approved; approve the rubric version before gating on it")
    keys = [k.strip() for k in keys if k and k.strip()]
    if not keys:
        raise ApprovalRefused("name at least one criterion to mark as gating")
    if len(set(keys)) != len(keys):
        raise ApprovalRefused("a criterion is named twice")
    known = [c.key for c in rubric_version.criteria.order_by("order")]
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ApprovalRefused(f"{', '.join(unknown)} not in {rubric_version.ref} (its criteria: {', '.join(known)})")
    _refuse_measured_examples(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
    )
    report = calibration_report(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
    )
    marks = GatingMark.objects.for_instrument(rubric_version, judge_config)
    active = set(marks.values_list("criterion__key", flat=True))
    already = [k for k in keys if k in active]
    if already:
        raise ApprovalRefused(f"already gating with {judge_config.name}: {', '.join(already)}")
    rows = [report.row(k) for k in keys]
    refused = [r for r in rows if r.tier != "gate"]
    if refused and not override:
        detail = "; ".join(f"{r.criterion} is {r.tier} (kappa {_kappa(r.judge.kappa)}, n {r.judge.n})" for r in refused)
        raise ApprovalRefused(
            f"only gate-tier criteria can gate without an override: {detail}. "
            "Override only with a written reason that says why this judge may gate anyway."
        )
    reasons = [(k, robustness.unclean_reason(report.probes, k)) for k in keys] if require_clean_probes else []
    unclean = [f"{k}: {why}" for k, why in reasons if why]
    if unclean:
        raise ApprovalRefused(
            f"a clean probe run is required and {'; '.join(unclean)}. Run the probes "
            "(python manage.py probe_judge, or Judge › Probe runs) on this eval set, or leave the requirement off"
        )
    criteria = {c.key: c for c in rubric_version.criteria.all()}
    with transaction.atomic():
        made = [
            GatingMark.objects.create(
                rubric_version=rubric_version,
                judge_config=judge_config,
                criterion=criteria[row.criterion],
                rubric_content_hash=rubric_version.content_hash,
                judge_config_hash=judge_config.content_hash,
                calibration_eval_set=eval_set,
                calibration_agent_version=agent_version or "",
                tier=row.tier,
                override=row.tier != "gate",
                reason=reason,
                figures={**row.as_dict(), **report.meta()},
                probe_run_id=report.probes.probe_run if report.probes else None,
                probe_figures=robustness.snapshot(report.probes, row.criterion),
                require_clean_probes=require_clean_probes,
                **policy.as_dict(),
                marked_by=by,
            )
            for row in rows
        ]
        _record_marks(made, policy, by)
        return made


def _record_marks(marks: list[GatingMark], policy: GateThresholds, by: User) -> None:
    first = marks[0]
    keys = [mark.criterion.key for mark in marks]
    summary = (
        f"marked {', '.join(keys)} of {first.rubric_version.ref} gating with {first.judge_config.name}"
        f"{' (override)' if any(mark.override for mark in marks) else ''}, calibrated on {first.calibration_eval_set}"
    )
    detail = {
        "marks": [mark.pk for mark in marks],
        "criteria": keys,
        "policy": policy.as_dict(),
        "reason": first.reason,
    }
    record(first.rubric_version.rubric.workspace_id, by, AuditAction.GATING_MARKED, summary, **detail)


def revoke_gating(*, mark: GatingMark, by: User, reason: str) -> GatingMark:
    reason = _check_lead_and_reason(by, reason, mark.rubric_version)
    changed = (
        GatingMark.objects.active()
        .filter(pk=mark.pk)
        .update(revoked_at=timezone.now(), revoked_by=by, revoke_reason=reason)
    )
    if changed != 1:
        raise ApprovalRefused("this mark was already revoked")
    mark.refresh_from_db()
    summary = f"revoked gating of {mark.criterion.key} ({mark.rubric_version.ref}, {mark.judge_config.name})"
    record(
        mark.rubric_version.rubric.workspace_id, by, AuditAction.GATING_REVOKED, summary, mark=mark.pk, reason=reason
    )
    return mark


def record_review(
    *,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    eval_set: EvalSet,
    by: User,
    reason: str,
    agent_version: str | None = None,
) -> GatingReview:
    """Record that a lead read the calibration on `eval_set` and leaves gating as it is (nothing gates when no
    criterion did). Stores the report's figures and the criteria gating at that moment, like a mark does."""
    reason = _check_lead_and_reason(by, reason, rubric_version, eval_set, judge_config)
    # A review is a decision on the same figures as a mark: figures inflated by the judge's own examples are none.
    _refuse_measured_examples(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
    )
    report = calibration_report(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
    )
    gating = [row.criterion for row in report.rows if row.gating]
    review = GatingReview.objects.create(
        rubric_version=rubric_version,
        judge_config=judge_config,
        rubric_content_hash=rubric_version.content_hash,
        judge_config_hash=judge_config.content_hash,
        calibration_eval_set=eval_set,
        calibration_agent_version=agent_version or "",
        gating=gating,
        figures={**report.meta(), "criteria": [row.as_dict() for row in report.rows]},
        reason=reason,
        decided_by=by,
    )
    kept = ", ".join(gating) or "no criterion gating"
    summary = f"reviewed gating of {rubric_version.ref} with {judge_config.name} on {eval_set.name}: kept {kept}"
    record(eval_set.workspace_id, by, AuditAction.GATING_REVIEWED, summary, review=review.pk, reason=reason)
    return review


def _refuse_measured_examples(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None
) -> None:
    measured = measured_examples(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
    )
    if measured:
        # Examples are picked where the judge was wrong; measured on them, it looks better than it is.
        raise ApprovalRefused(
            f"{judge_config.name}'s examples came from output(s) {', '.join(map(str, measured[:10]))} of "
            f"{eval_set.name}, which this calibration measures it on; gate on the held-out split of the eval set the "
            "examples came from (judge_guidance split start before the first example) or on another eval set"
        )


def _kappa(k: float | None) -> str:
    return "undefined" if k is None else f"{k:.3f}"
