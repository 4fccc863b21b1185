"""Calibration pages (leads and reviewers) and approvals (leads); the gate page and its tokens are api/views.py.

Annotators get 403 everywhere here: these pages show gold and judge verdicts, and annotators
label blind. Views stay thin: fetch, validate a form, call one domain function, render.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from calibration.nav import safe_next
from calibration.report import drilldown as dd
from calibration.report.annotator_agreement import MIN_ITEMS_TO_FLAG
from calibration.report.annotator_figures import shown_annotators
from calibration.report.cell_items import shown_cell
from calibration.report.compose import calibration_report
from calibration.report.files import to_csv, to_json
from calibration.report.forms import CompareForm, DisputeForm
from calibration.report.overview import comparison_params, overview_grids, run_instruments
from calibration.report.page import asked_agent_version, instrument_or_404, report_context
from calibration.report.stored_report import shown_report
from calibration.report.svg import kappa_chart
from calibration.workbench.holdout_looks import count_report_look, count_report_looks
from evals.access import (
    STAFF_ROLES,
    AuthenticatedHttpRequest,
    has_role,
    role_required,
)
from evals.downloads import attachment_header
from evals.models import Criterion, EvalSet, Output, Role, RubricVersion, User, Workspace
from evals.workspaces import in_workspace
from labeling.disputes import DisputeRefused, raise_dispute
from labeling.models import GoldDispute

DRILLDOWN_PAGE_SIZE = 10


@role_required(*STAFF_ROLES)
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    instruments = run_instruments(request.workspace)
    versions = RubricVersion.objects.select_related("rubric", "approved_by").order_by("rubric__name", "created_at")
    context = {
        "grids": overview_grids(instruments),
        "versions": in_workspace(versions, request.workspace),
        "form": CompareForm(
            initial=comparison_params({}, request.workspace, instruments) or {}, workspace=request.workspace
        ),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "calibration/index.html", context)


@never_cache
@role_required(*STAFF_ROLES)
def report_page(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int) -> HttpResponse:
    es, rv, jc = instrument_or_404(request.workspace, eval_set, rubric_version, judge)
    context = report_context(request, es, rv, jc)
    return render(request, "calibration/report.html", context)


@role_required(*STAFF_ROLES)
def report_export(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, fmt: str
) -> HttpResponse:
    if fmt not in ("json", "csv"):
        raise Http404("exports are .json or .csv")
    es, rv, jc = instrument_or_404(request.workspace, eval_set, rubric_version, judge)
    agent_version = asked_agent_version(request)
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


def cell_or_404(workspace: Workspace, eval_set: int, rubric_version: int, judge: int, key: str, cell: str):
    """The instrument, criterion and confusion cell of a drilldown URL; 404 for any part that does not exist in
    `workspace`."""
    if cell not in dd.CELLS:
        raise Http404("no such cell")
    es, rv, jc = instrument_or_404(workspace, eval_set, rubric_version, judge)
    return es, rv, jc, get_object_or_404(Criterion, rubric_version=rv, key=key)


@never_cache
@role_required(*STAFF_ROLES)
def drilldown(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, key: str, cell: str):
    es, rv, jc, criterion = cell_or_404(request.workspace, eval_set, rubric_version, judge, key, cell)
    shown = shown_cell((es, rv, jc), criterion, cell, asked_agent_version(request))
    ids = shown.ids or []
    # The cell's items and count on the held-out split are held-out figures: one counted look per page shown (none
    # while a worker computes a large set's first figures: the page shows none).
    if shown.ids is not None:
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
        "agent_version": asked_agent_version(request),
        "disputed": GoldDispute.objects.open().filter(criterion=criterion, output_id__in=ids).count(),
        "fresh": shown.fresh,
        "pending": shown.ids is None,
    }
    return render(request, "calibration/drilldown.html", context)


@role_required(*STAFF_ROLES)
def compare(request: AuthenticatedHttpRequest) -> HttpResponse:
    params = comparison_params(request.GET, request.workspace)
    form = (
        CompareForm(params, workspace=request.workspace)
        if params
        else CompareForm(initial=request.GET.dict(), workspace=request.workspace)
    )
    sides: list = []
    fresh: list[str] = []
    pending = False
    if form.is_valid():
        es = form.cleaned_data["eval_set"]
        shown = [
            (form.cleaned_data[f"{side}_rubric"], form.cleaned_data[f"{side}_judge"]) for side in ("left", "right")
        ]
        # A large eval set's sides are the rows a worker stored (stored_report.py), said with their freshness.
        reports = [shown_report(eval_set=es, rubric_version=rv, judge_config=jc) for rv, jc in shown]
        fresh = [r.fresh.words() for r in reports if r.fresh]
        pending = any(r.report is None for r in reports)
        sides = [] if pending else [r.report for r in reports]
        # A side measured on the held-out split shows its figures: one look per split (both sides on one split
        # are one look, recorded with both versions).
        count_report_looks(eval_set=es, shown=shown, by=request.user, via="compare")
    context = {
        "form": form,
        "sides": sides,
        "pairs": _pairs(sides) if sides else [],
        "nothing_to_compare": not params,
        "fresh": fresh if form.is_valid() else [],
        "pending": form.is_valid() and pending,
    }
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
        delta = (
            b.judge.kappa - a.judge.kappa
            if a and b and a.judge.kappa is not None and b.judge.kappa is not None
            else None
        )
        out.append({"key": key, "sides": [(r, kappa_chart(r) if r else None) for r in (a, b)], "delta": delta})
    return out


@never_cache
@require_POST
@role_required(*STAFF_ROLES)
def dispute_gold(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, key: str, cell: str
):
    """From a false-pass / false-fail drilldown: send one output's gold label back to adjudication."""
    es, rv, jc, criterion = cell_or_404(request.workspace, eval_set, rubric_version, judge, key, cell)
    back = safe_next(request, reverse("calibration:drilldown", args=[es.pk, rv.pk, jc.pk, key, cell]))
    form = DisputeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not disputed: " + " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect(back)
    output = get_object_or_404(Output.objects.select_related("case"), pk=form.cleaned_data["output"], case__eval_set=es)
    # Back to the item, not the top of a long drilldown: its dispute note (or why not) is there.
    back = f"{back.split('#', 1)[0]}#output-{output.pk}"
    title = dd.CELL_TITLES.get(cell, cell).split(":")[0].lower()
    try:
        raise_dispute(
            output=output,
            criterion=criterion,
            by=request.user,
            reason=form.cleaned_data["reason"],
            raised_from=f"{title} of judge {jc.name}",
            based_on=form.cleaned_data["gold_revision"],
        )
    except DisputeRefused as exc:
        messages.error(request, f"Not disputed: {exc}")
    else:
        messages.success(
            request, f"The gold label of {key} on {output.case.case_id} is back in the adjudication queue."
        )
    return redirect(back)


@never_cache
@role_required(*STAFF_ROLES)
def annotator_agreement_page(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int) -> HttpResponse:
    es = get_object_or_404(in_workspace(EvalSet, request.workspace), pk=eval_set)
    rv = get_object_or_404(
        in_workspace(RubricVersion.objects.select_related("rubric"), request.workspace), pk=rubric_version
    )
    # A large eval set's rows are the ones a worker stored with its report (annotator_figures.py), with their freshness.
    shown = shown_annotators(es, rv)
    rows, criteria = shown.rows or (), shown.criteria
    names = dict(User.objects.filter(pk__in={int(r.annotator) for r in rows}).values_list("pk", "username"))
    sections = [(c, [(names[int(r.annotator)], r) for r in rows if r.criterion == c.pk]) for c in criteria]
    flagged = [(c, name, r) for c, named in sections for name, r in named if r.flagged]
    context = {
        "es": es,
        "rv": rv,
        "sections": sections,
        "flagged": flagged,
        "min_items": MIN_ITEMS_TO_FLAG,
        "fresh": shown.fresh,
        "pending": shown.rows is None,
    }
    return render(request, "calibration/annotators.html", context)
