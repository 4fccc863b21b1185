"""The lead's decision pages: the release gate run from the browser, one gate result, and disputing a gold
label from a drilldown.

The gate page calls the same domain function as `manage.py gate` and the HTTP API (gate.gate_and_record),
so it decides and records exactly as they do (source "web", with who asked). Thin views: validate a form,
call one domain function, redirect or render.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from calibration.audits.design_words import design_and_predictor
from calibration.gate.approvals import (
    ApprovalRefused,
    approve_rubric_version,
    mark_gating,
    record_review,
    revoke_gating,
)
from calibration.gate.forms import GateRunForm, GatingForm, ReasonForm
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import GateResult, GatingMark
from calibration.nav import safe_next
from calibration.report.compose import calibration_report
from calibration.report.page import asked_agent_version, instrument_or_404, report_context, report_url
from calibration.report.svg import gate_rows
from calibration.stats.candidate_evidence import ASSUMES_CALIBRATION, POWER_MOVES
from calibration.stats.policy import PolicyRefused
from evals.access import (
    STAFF_ROLES,
    AuthenticatedHttpRequest,
    HtmxHttpRequest,
    has_role,
    role_required,
)
from evals.models import EvalSet, Role, RubricVersion, Workspace
from evals.workspaces import in_workspace
from judging.models import JudgeConfig, JudgeRun


def gate_initial(query, workspace: Workspace) -> dict:
    """What the gate form starts with: what the link asked for, else the newest gating instrument (or the newest
    run's, before anything gates) and the newest eval set its judge ran on (the release candidate most likely
    next), all of `workspace`."""
    initial = {k: query[k] for k in ("eval_set", "rubric_version", "judge_config", "agent_version") if query.get(k)}
    if "rubric_version" not in initial or "judge_config" not in initial:
        runs = in_workspace(JudgeRun, workspace).filter(probe_run__isnull=True)  # a probe arm is no candidate
        newest = in_workspace(GatingMark.objects.active(), workspace).order_by("-marked_at").first() or runs.first()
        if newest is None:
            return initial
        initial.setdefault("rubric_version", newest.rubric_version_id)
        initial.setdefault("judge_config", newest.judge_config_id)
    if "eval_set" not in initial:
        run = (
            in_workspace(JudgeRun, workspace)
            .filter(
                rubric_version_id=initial["rubric_version"],
                judge_config_id=initial["judge_config"],
                probe_run__isnull=True,
            )
            .first()
        )  # newest first (the model's ordering)
        if run is not None:
            initial["eval_set"] = run.eval_set_id
    return initial


@never_cache
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def gate_run(request: AuthenticatedHttpRequest) -> HttpResponse:
    initial = gate_initial(request.GET, request.workspace)
    form = GateRunForm(request.POST or None, initial=initial, workspace=request.workspace)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        asked = GateRequest(
            d["eval_set"].name,
            d["rubric_version"].ref,
            d["judge_config"].name,
            d["agent_version"] or None,
            d["tightening"],
        )
        try:
            outcome = gate_and_record(
                asked, workspace=request.workspace, source=GateResult.Source.WEB, asked_by=request.user
            )
        except PolicyRefused as exc:
            form.add_error(None, f"{exc}. Nothing was stored.")
        else:
            return redirect("calibration:gate_result", result=outcome.record.pk)
    return render(request, "calibration/gate_run.html", {"form": form}, status=422 if form.errors else 200)


@role_required(*STAFF_ROLES)
def gate_result(request: AuthenticatedHttpRequest, result: int) -> HttpResponse:
    results = in_workspace(GateResult.objects.select_related("token", "asked_by", "workspace"), request.workspace)
    record = get_object_or_404(results, pk=result)
    criteria = record.result.get("criteria", []) if isinstance(record.result, dict) else []
    context = {
        "g": record,
        "rows": zip(criteria, gate_rows(criteria), strict=True),
        "command": _command(record),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
        "has_criteria": bool(criteria),
        # What the candidate's gold says (results from before issue 40 have no "transport" and show none of it).
        "evidence": [c for c in criteria if "transport" in c],
        "transports": [_with_power(c) for c in criteria if c.get("transport") and c["transport"]["candidate_gold_n"]],
        "assumes": ASSUMES_CALIBRATION,
        # The levels each audited criterion was read at (results from before issue 37 item 3 have no audit_k).
        "audited": [
            (c, f"{c['audit_alpha_pass']:.4g}", f"{c['audit_alpha_fail']:.4g}", _audit_words(c))
            for c in criteria
            if c.get("audit_k")
        ],
    }
    return render(request, "calibration/gate_result.html", context)


def _audit_words(criterion: dict) -> str:
    """The audit's design and predictor in a lead's words: as the gate stored them, or, in a result stored before
    it stored the words, from its design and predictor alone (empty in one stored before either)."""
    if criterion.get("audit_in_words"):
        return criterion["audit_in_words"]
    return design_and_predictor(criterion.get("audit_design"), criterion.get("audit_predictor"))


def _with_power(criterion: dict) -> tuple[dict, float | None, float | None]:
    """A criterion with its transport test's power to catch a drop of 0.10 in TNR and in TPR."""
    move = f"{POWER_MOVES[0]:.2f}"
    t = criterion["transport"]
    return criterion, t["tnr"]["power"].get(move), t["tpr"]["power"].get(move)


def _command(record: GateResult) -> str:
    """The same question as a command line (what CI would run)."""
    parts = [
        "python manage.py gate",
        f"--workspace {record.workspace.slug}",
        f"--eval-set {record.eval_set_name}",
        f"--rubric {record.rubric_ref}",
    ]
    parts.append(f"--judge {record.judge_name}")
    if record.agent_version:
        parts.append(f"--agent-version {record.agent_version}")
    for name in ("min_pass_rate", "max_error_rate", "confidence"):
        value = getattr(record, name)
        if value is not None:
            parts.append(f"--{name.replace('_', '-')} {value:g}")
    return " ".join(parts)


@never_cache
@require_POST
@role_required(Role.LEAD)
def approve_rubric(request: AuthenticatedHttpRequest, rubric_version: int) -> HttpResponse:
    versions = RubricVersion.objects.select_related("rubric", "approved_by")
    rv = get_object_or_404(in_workspace(versions, request.workspace), pk=rubric_version)
    form = ReasonForm(request.POST)
    try:
        if not form.is_valid():
            raise ApprovalRefused("write a reason: say why this rubric version is fit to use")
        approve_rubric_version(rubric_version=rv, by=request.user, reason=form.cleaned_data["reason"])
        messages.success(request, f"Approved {rv.ref}.")
    except ApprovalRefused as exc:
        messages.error(request, f"Not approved: {exc}")
    return redirect(safe_next(request, reverse("calibration:index")))


@never_cache
@require_POST
@role_required(Role.LEAD)
def mark_gating_view(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int) -> HttpResponse:
    es, rv, jc = instrument_or_404(request.workspace, eval_set, rubric_version, judge)
    report = calibration_report(
        eval_set=es, rubric_version=rv, judge_config=jc, agent_version=asked_agent_version(request)
    )
    form = GatingForm(request.POST, rows=report.rows, probes=report.probes)
    if form.is_valid():
        try:
            mark_gating(
                rubric_version=rv,
                judge_config=jc,
                eval_set=es,
                keys=[form.cleaned_data["criterion"]],
                by=request.user,
                reason=form.cleaned_data["reason"],
                override=form.cleaned_data["override"],
                agent_version=asked_agent_version(request),
                policy=form.cleaned_data["policy"],
                require_clean_probes=form.cleaned_data["require_clean_probes"],
            )
            messages.success(request, f"{form.cleaned_data['criterion']} now gates releases with {jc.name}.")
            return _decided(request, es, rv, jc)
        except ApprovalRefused as exc:
            form.add_error(None, str(exc))
    return _refused_on_panel(request, report_context(request, es, rv, jc, gating_form=form))


@never_cache
@require_POST
@role_required(Role.LEAD)
def review_gating_view(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int
) -> HttpResponse:
    """Record that gating stays as it is (nothing gates, where nothing did) after reading this calibration."""
    es, rv, jc = instrument_or_404(request.workspace, eval_set, rubric_version, judge)
    form = ReasonForm(request.POST, prefix="review")
    if form.is_valid():
        try:
            review = record_review(
                rubric_version=rv,
                judge_config=jc,
                eval_set=es,
                by=request.user,
                reason=form.cleaned_data["reason"],
                agent_version=asked_agent_version(request),
            )
            messages.success(request, f"Recorded for {jc.name} on {rv.ref}: {review.summary}.")
            return _decided(request, es, rv, jc)
        except ApprovalRefused as exc:
            form.add_error(None, str(exc))
    return _refused_on_panel(request, report_context(request, es, rv, jc, review_form=form))


def _decided(request: HtmxHttpRequest, es: EvalSet, rv: RubricVersion, jc: JudgeConfig) -> HttpResponse:
    """A recorded decision: the report again, with its message (htmx reloads the page, the rest is redirected)."""
    if request.htmx:
        return HttpResponseClientRefresh()
    return redirect(report_url(es, rv, jc, asked_agent_version(request)))


def _refused_on_panel(request: HtmxHttpRequest, context: dict) -> HttpResponse:
    """A refused decision: the approval panel again with the form's errors, or the whole page without htmx."""
    if request.htmx:  # htmx swaps only 2xx answers, and the errors must be seen
        return render(request, "calibration/report.html#approval-panel", context)
    return render(request, "calibration/report.html", context, status=422)


@never_cache
@require_POST
@role_required(Role.LEAD)
def revoke_gating_view(request: AuthenticatedHttpRequest, mark: int) -> HttpResponse:
    mark_obj = get_object_or_404(
        in_workspace(GatingMark.objects.select_related("criterion"), request.workspace), pk=mark
    )
    form = ReasonForm(request.POST)
    try:
        if not form.is_valid():
            raise ApprovalRefused("write why the criterion should stop gating")
        revoke_gating(mark=mark_obj, by=request.user, reason=form.cleaned_data["reason"])
        messages.success(request, f"{mark_obj.criterion.key} no longer gates releases.")
    except ApprovalRefused as exc:
        messages.error(request, f"Not revoked: {exc}")
    return redirect(safe_next(request, reverse("calibration:index")))
