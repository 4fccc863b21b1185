"""Calibration pages (leads and reviewers) and approvals (leads); the gate page and its tokens are api/views.py.

Annotators get 403 everywhere here: these pages show gold and judge verdicts, and annotators
label blind. Views stay thin: fetch, validate a form, call one domain function, render.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRefresh

from evals.access import (
    STAFF_ROLES,
    AuthenticatedHttpRequest,
    HtmxHttpRequest,
    checked_query,
    has_role,
    role_required,
)
from evals.downloads import attachment_header
from evals.models import Criterion, EvalSet, Output, Role, RubricVersion
from judging.models import JudgeConfig
from labeling.models import GoldDispute

from . import drilldown as dd
from .approvals import ApprovalRefused, approve_rubric_version, mark_gating, record_review, revoke_gating
from .candidate_evidence import ASSUMES_CALIBRATION
from .decision import CANNOT, GATING, MAY_GATE, MORE_LABELS, decide
from .forms import CompareForm, GatingForm, ReasonForm
from .holdout_looks import count_report_look, count_report_looks
from .metrics import MIN_N
from .models import GatingMark, GatingReview
from .overview import comparison_params, overview_grids, run_instruments
from .report import calibration_report
from .report_files import to_csv, to_json
from .svg import confusion_cells, kappa_chart, opacity
from .waiting import waiting_work

DRILLDOWN_PAGE_SIZE = 10


def instrument_or_404(eval_set: int, rubric_version: int, judge: int) -> tuple[EvalSet, RubricVersion, JudgeConfig]:
    return (
        get_object_or_404(EvalSet, pk=eval_set),
        get_object_or_404(RubricVersion.objects.select_related("rubric", "approved_by"), pk=rubric_version),
        get_object_or_404(JudgeConfig, pk=judge),
    )


def _agent_version(request: HttpRequest) -> str | None:
    return checked_query(request.GET).get("agent_version") or None


def _rows_for_page(report, criteria: dict[str, Criterion], marks) -> list[dict]:
    active = {m.criterion.key: m for m in marks if m.revoked_at is None}
    return [
        {
            "row": row,
            "mark": active.get(row.criterion) if row.gating else None,
            "criterion": criteria.get(row.criterion),
            "chart": kappa_chart(row),
            "cells": [{"cell": c, "opacity": opacity(c.share)} for c in confusion_cells(row)],
        }
        for row in report.rows
    ]


DECISION_TITLES = {
    GATING: "Gates now",
    MAY_GATE: "May gate now",
    MORE_LABELS: "Could gate with more labels",
    CANNOT: "Cannot gate",
}


def _decision_groups(decision, waiting) -> list[dict]:
    groups = []
    for answer, title in DECISION_TITLES.items():
        rows = [{"verdict": v, "waiting": waiting.of(v.criterion)} for v in decision.criteria if v.answer == answer]
        if rows:
            groups.append({"answer": answer, "title": title, "rows": rows})
    return groups


# Decisions to leave gating as it is, shown on the approval panel: the newest few (the admin has all).
REVIEWS_SHOWN = 5


def _report_context(request, es, rv, judge, gating_form=None, review_form=None) -> dict:
    agent_version = _agent_version(request)
    report = calibration_report(
        eval_set=es, rubric_version=rv, judge_config=judge, agent_version=agent_version, with_audit_plans=True
    )
    # Every render of the report (the page, and the page again after a refused gating decision) shows its
    # figures: for a version measured on the held-out split, that is one counted look.
    count_report_look(eval_set=es, rubric_version=rv, judge_config=judge, by=request.user, via="report page")
    criteria = {c.key: c for c in Criterion.objects.filter(rubric_version=rv)}
    marks = list(
        GatingMark.objects.filter(rubric_version=rv, judge_config=judge).select_related(
            "criterion", "marked_by", "revoked_by", "calibration_eval_set"
        )
    )
    versions = Output.objects.filter(case__eval_set=es).order_by().values_list("agent_version", flat=True).distinct()
    decision, waiting = decide(report.rows), waiting_work(es, rv)
    return {
        "es": es,
        "rv": rv,
        "judge": judge,
        "report": report,
        "decision": decision,
        "decision_groups": _decision_groups(decision, waiting),
        "min_n": MIN_N,
        "waiting": waiting,
        "disputed": sum(w.disputes for w in waiting.by_criterion.values()),
        "rows": _rows_for_page(report, criteria, marks),
        "marks": marks,
        "agent_version": agent_version,
        "agent_versions": sorted(versions),
        "gating_form": gating_form or GatingForm(rows=report.rows, probes=report.probes),
        "gating_now": [r.criterion for r in report.rows if r.gating],
        "reviews": list(
            GatingReview.objects.filter(rubric_version=rv, judge_config=judge).select_related(
                "decided_by", "calibration_eval_set"
            )[:REVIEWS_SHOWN]
        ),
        "review_form": review_form or ReasonForm(prefix="review"),
        "is_lead": has_role(request.user, Role.LEAD),
        "assumes": ASSUMES_CALIBRATION,
    }


@role_required(*STAFF_ROLES)
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    instruments = run_instruments()
    versions = RubricVersion.objects.select_related("rubric", "approved_by").order_by("rubric__name", "created_at")
    context = {
        "grids": overview_grids(instruments),
        "versions": versions,
        "form": CompareForm(initial=comparison_params({}, instruments) or {}),
        "is_lead": has_role(request.user, Role.LEAD),
    }
    return render(request, "calibration/index.html", context)


@never_cache
@role_required(*STAFF_ROLES)
def report_page(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int) -> HttpResponse:
    es, rv, jc = instrument_or_404(eval_set, rubric_version, judge)
    context = _report_context(request, es, rv, jc)
    return render(request, "calibration/report.html", context)


@role_required(*STAFF_ROLES)
def report_export(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, fmt: str
) -> HttpResponse:
    if fmt not in ("json", "csv"):
        raise Http404("exports are .json or .csv")
    es, rv, jc = instrument_or_404(eval_set, rubric_version, judge)
    agent_version = _agent_version(request)
    report = calibration_report(
        eval_set=es, rubric_version=rv, judge_config=jc, agent_version=agent_version, with_audit_plans=True
    )
    # The download holds the same figures as the page: held-out ones are a counted look here too.
    count_report_look(eval_set=es, rubric_version=rv, judge_config=jc, by=request.user, via=f"export {fmt}")
    body, content_type = (to_json(report), "application/json") if fmt == "json" else (to_csv(report), "text/csv")
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    name = f"calibration-{es.name}-{rv.rubric.name}@{rv.version}-{jc.name}.{fmt}"
    response["Content-Disposition"] = attachment_header(name)
    return response


def cell_or_404(eval_set: int, rubric_version: int, judge: int, key: str, cell: str):
    """The instrument, criterion and confusion cell of a drilldown URL; 404 for any part that does not exist."""
    if cell not in dd.CELLS:
        raise Http404("no such cell")
    es, rv, jc = instrument_or_404(eval_set, rubric_version, judge)
    return es, rv, jc, get_object_or_404(Criterion, rubric_version=rv, key=key)


@never_cache
@role_required(*STAFF_ROLES)
def drilldown(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, key: str, cell: str):
    es, rv, jc, criterion = cell_or_404(eval_set, rubric_version, judge, key, cell)
    ids = dd.cell_output_ids(
        eval_set=es,
        rubric_version=rv,
        judge_config=jc,
        criterion=criterion,
        cell=cell,
        agent_version=_agent_version(request),
    )
    # The cell's items and count on the held-out split are held-out figures: one counted look per page shown.
    count_report_look(eval_set=es, rubric_version=rv, judge_config=jc, by=request.user, via="drilldown")
    page = Paginator(ids, DRILLDOWN_PAGE_SIZE).get_page(request.GET.get("page"))
    items = dd.load_items(list(page.object_list), criterion, jc)
    disputes = GoldDispute.objects.open().filter(criterion=criterion, output_id__in=page.object_list)
    open_disputes = {d.output_id: d for d in disputes.select_related("raised_by")}
    for item in items:
        item.dispute = open_disputes.get(item.output.pk)
    context = {
        "es": es,
        "rv": rv,
        "judge": jc,
        "criterion": criterion,
        "cell": cell,
        "title": dd.CELL_TITLES[cell],
        "page": page,
        "items": items,
        "total": len(ids),
        "agent_version": _agent_version(request),
        "disputed": GoldDispute.objects.open().filter(criterion=criterion, output_id__in=ids).count(),
    }
    return render(request, "calibration/drilldown.html", context)


@role_required(*STAFF_ROLES)
def compare(request: AuthenticatedHttpRequest) -> HttpResponse:
    params = comparison_params(request.GET)
    form = CompareForm(params) if params else CompareForm(initial=request.GET.dict())
    sides = []
    if form.is_valid():
        es = form.cleaned_data["eval_set"]
        shown = [
            (form.cleaned_data[f"{side}_rubric"], form.cleaned_data[f"{side}_judge"]) for side in ("left", "right")
        ]
        sides = [calibration_report(eval_set=es, rubric_version=rv, judge_config=jc) for rv, jc in shown]
        # A side measured on the held-out split shows its figures: one look per split (both sides on one split
        # are one look, recorded with both versions).
        count_report_looks(eval_set=es, shown=shown, by=request.user, via="compare")
    context = {"form": form, "sides": sides, "pairs": _pairs(sides) if sides else [], "nothing_to_compare": not params}
    if request.htmx:
        return render(request, "calibration/compare.html#comparison", context)
    return render(request, "calibration/compare.html", context)


def _pairs(sides) -> list[dict]:
    """Rows matched by criterion key (two rubric versions may not share every criterion)."""
    left, right = ({r.criterion: r for r in s.rows} for s in sides)
    keys = list(left) + [k for k in right if k not in left]
    out = []
    for key in keys:
        a, b = left.get(key), right.get(key)
        delta = b.kappa - a.kappa if a and b and a.kappa is not None and b.kappa is not None else None
        out.append({"key": key, "sides": [(r, kappa_chart(r) if r else None) for r in (a, b)], "delta": delta})
    return out


@never_cache
@require_POST
@role_required(Role.LEAD)
def approve_rubric(request: AuthenticatedHttpRequest, rubric_version: int) -> HttpResponse:
    rv = get_object_or_404(RubricVersion.objects.select_related("rubric", "approved_by"), pk=rubric_version)
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
    es, rv, jc = instrument_or_404(eval_set, rubric_version, judge)
    report = calibration_report(eval_set=es, rubric_version=rv, judge_config=jc, agent_version=_agent_version(request))
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
                agent_version=_agent_version(request),
                policy=form.cleaned_data["policy"],
                require_clean_probes=form.cleaned_data["require_clean_probes"],
            )
            messages.success(request, f"{form.cleaned_data['criterion']} now gates releases with {jc.name}.")
            return _decided(request, es, rv, jc)
        except ApprovalRefused as exc:
            form.add_error(None, str(exc))
    return _refused_on_panel(request, _report_context(request, es, rv, jc, gating_form=form))


@never_cache
@require_POST
@role_required(Role.LEAD)
def review_gating_view(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int
) -> HttpResponse:
    """Record that gating stays as it is (nothing gates, where nothing did) after reading this calibration."""
    es, rv, jc = instrument_or_404(eval_set, rubric_version, judge)
    form = ReasonForm(request.POST, prefix="review")
    if form.is_valid():
        try:
            review = record_review(
                rubric_version=rv,
                judge_config=jc,
                eval_set=es,
                by=request.user,
                reason=form.cleaned_data["reason"],
                agent_version=_agent_version(request),
            )
            messages.success(request, f"Recorded for {jc.name} on {rv.ref}: {review.summary}.")
            return _decided(request, es, rv, jc)
        except ApprovalRefused as exc:
            form.add_error(None, str(exc))
    return _refused_on_panel(request, _report_context(request, es, rv, jc, review_form=form))


def _decided(request: HtmxHttpRequest, es: EvalSet, rv: RubricVersion, jc: JudgeConfig) -> HttpResponse:
    """A recorded decision: the report again, with its message (htmx reloads the page, the rest is redirected)."""
    if request.htmx:
        return HttpResponseClientRefresh()
    return redirect(_report_url(es, rv, jc, _agent_version(request)))


def _refused_on_panel(request: HtmxHttpRequest, context: dict) -> HttpResponse:
    """A refused decision: the approval panel again with the form's errors, or the whole page without htmx."""
    if request.htmx:  # htmx swaps only 2xx answers, and the errors must be seen
        return render(request, "calibration/report.html#approval-panel", context)
    return render(request, "calibration/report.html", context, status=422)


@never_cache
@require_POST
@role_required(Role.LEAD)
def revoke_gating_view(request: AuthenticatedHttpRequest, mark: int) -> HttpResponse:
    mark_obj = get_object_or_404(GatingMark.objects.select_related("criterion"), pk=mark)
    form = ReasonForm(request.POST)
    try:
        if not form.is_valid():
            raise ApprovalRefused("write why the criterion should stop gating")
        revoke_gating(mark=mark_obj, by=request.user, reason=form.cleaned_data["reason"])
        messages.success(request, f"{mark_obj.criterion.key} no longer gates releases.")
    except ApprovalRefused as exc:
        messages.error(request, f"Not revoked: {exc}")
    return redirect(safe_next(request, reverse("calibration:index")))


def _report_url(es: EvalSet, rv: RubricVersion, jc: JudgeConfig, agent_version: str | None) -> str:
    url = reverse("calibration:report", args=[es.pk, rv.pk, jc.pk])
    return f"{url}?{urlencode({'agent_version': agent_version})}" if agent_version else url


def safe_next(request: HttpRequest, default: str) -> str:
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next", "")
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if ok else default
