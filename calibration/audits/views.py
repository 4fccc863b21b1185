"""The audit plan pages (issue 22): the list of plans, starting one, a plan's figures as labels arrive,
"label these k next" and closing.

Thin views over calibration/audits/plans.py and stored_figures.py, the same functions as `manage.py audit_plan`. No
view computes a decision or a forecast (issue 37): a worker does, and the pages show its last figures with how fresh
they are, polling every 2 s while they are behind. Leads
start, release and close; reviewers may read (as they read the gate results). Annotators get 403: the figures come
from gold and the judge's verdicts, which they must not see.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from calibration.audits import plan_signals
from calibration.audits.design_words import design_and_predictor, predictor_short
from calibration.audits.figures import AuditFigures
from calibration.audits.forms import AuditPlanForm, AuditReleaseForm
from calibration.audits.plans import (
    AuditPlanError,
    close_plan,
    left_to_release,
    release_plan_next,
    released_words,
    start_plan,
)
from calibration.audits.stored_figures import Stored, stored_figures
from calibration.models import AuditPlan, GatingMark
from calibration.stats.audit_shared import side_levels
from calibration.stats.policy import AUDIT
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, plain, role_required
from evals.models import Output, Role, Workspace
from evals.workspaces import in_workspace
from labeling.audit_order import DEFAULT_RELEASE
from labeling.guards import may_adjudicate

# Labels arrive a few a minute; every 5 s shows each one soon enough and costs one read of the stored figures.
POLL = "every 5s"
# While a worker computes newer figures the page looks every 2 s (a read of one row).
POLL_UPDATING = "every 2s"
# The event a release sends, so the figures panel reads the new released count at once.
RELEASED_EVENT = "audit-released"


def _plans(workspace: Workspace):
    """The audit plans of `workspace`: another workspace's plan id answers as a missing one (404)."""
    return in_workspace(AuditPlan.objects.for_figures().select_related("created_by"), workspace)


@never_cache
@role_required(*STAFF_ROLES)
def audit_plans(request: AuthenticatedHttpRequest) -> HttpResponse:
    # The jury plans' extra configs by name (one query for all plans, without their signals' values).
    plans = list(_plans(request.workspace).prefetch_related(plan_signals.without_values()))
    methods = {p.pk: _method(p) for p in plans}
    # Where each open plan stands, as on its page: the figures a worker stored, one query for all of them. Closed
    # plans keep their figures on their own page.
    stored = stored_figures([p for p in plans if p.closed_at is None])
    sections = [
        (
            "Open",
            [(p, stored[p.pk].figures, stored[p.pk], methods[p.pk]) for p in plans if p.closed_at is None],
            "No open plan.",
        ),
        ("Closed", [(p, None, None, methods[p.pk]) for p in plans if p.closed_at is not None], "No closed plan."),
    ]
    context = {"sections": sections, "is_lead": has_role(request.user, request.workspace, Role.LEAD)}
    return render(request, "calibration/audit_plans.html", context)


def _method(plan: AuditPlan) -> tuple[str, str]:
    """A plan's predictor in a few words and its design and predictor in full (the list's compact column)."""
    extra = plan_signals.also_judges(plan)  # prefetched by the list
    return predictor_short(plan.design, plan.predictor, extra), design_and_predictor(plan.design, plan.predictor, extra)


@never_cache
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def audit_plan_start(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = AuditPlanForm(request.POST or None, workspace=request.workspace)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        mark: GatingMark = d["gating"]
        try:
            plan = start_plan(
                criterion=mark.criterion,
                eval_set=d["eval_set"],
                judge_config=mark.judge_config,
                by=request.user,
                agent_version=d["agent_version"] or None,
                seed=d["seed"],
                min_pass_rate=d["min_pass_rate"],
                confidence=d["confidence"],
                design=d["design"],
                extra_judges=list(d["extra_judges"]),
            )
        except AuditPlanError as exc:
            form.add_error(None, f"{exc} Nothing was started.")
        else:
            messages.success(request, f"Audit plan {plan.pk} started. Release the first outputs to label below.")
            return redirect("calibration:audit_plan", plan=plan.pk)
    marks = in_workspace(GatingMark.objects.active(), request.workspace).select_related(
        "criterion", "rubric_version__rubric", "judge_config", "calibration_eval_set"
    )
    context = {"form": form, "marks": marks}
    return render(request, "calibration/audit_start.html", context, status=422 if form.errors else 200)


def _k(request: AuthenticatedHttpRequest) -> int:
    """The k the forecast looks ahead by: the page's ?k= when it is a sensible whole number, else the default."""
    raw = request.GET.get("k", "")
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= 100_000 else DEFAULT_RELEASE


# The Can't tell items the plan page links to, at most (the rest are counted).
CANT_TELL_LINKS = 10


def gate_sides(plan: AuditPlan) -> str:
    """One line when the plan's criterion is one of k > 1 gating criteria decided by audits: the plan decides at its
    own alpha per side, the gate reads its FAIL side at alpha / k (calibration/stats/audit_shared.py). One query."""
    rubric_version, judge = plan.criterion.rubric_version, plan.judge_config
    audited = list(
        GatingMark.objects.for_instrument(rubric_version, judge)
        .filter(decide_on=AUDIT)
        .values_list("criterion_id", flat=True)
    )
    # A plan of an open audit group is read at the group's levels where they are stricter (candidate_gold.py).
    group = plan.group if plan.group is not None and plan.group.closed_at is None else None
    k = max(len(audited), group.k if group else 0)
    if k < 2 or plan.criterion_id not in audited:
        return ""
    alpha_pass, alpha_fail = side_levels(confidence=plan.confidence, k=k)
    among = (
        f"one of the {k} criteria of audit group {group.pk} (one sample)"
        if group and group.k >= len(audited)
        else f"one of {k} gating criteria decided by audits of the candidate"
    )
    return (
        f"{plan.criterion.key} is {among}: the gate reads this "
        f"plan's PASS at {alpha_pass:.4g} and its FAIL at {alpha_fail:.4g} (alpha / {k}), so that a release meeting "
        f"every minimum is failed at most {alpha_pass:.4g} of the time."
    )


def _context(request: AuthenticatedHttpRequest, plan: AuditPlan, k: int | None = None) -> dict:
    stored: Stored = stored_figures([plan])[plan.pk]
    figures = stored.figures
    left = left_to_release(plan)
    shown = figures.cant_tell_outputs[:CANT_TELL_LINKS] if figures else ()
    case_ids = dict(Output.objects.filter(pk__in=shown).values_list("pk", "case__case_id")) if shown else {}
    return {
        "plan": plan,
        "f": figures,
        "fresh": stored,
        # Gold Can't tell holds the decision back until a reviewer overrules it: where to do that.
        "cant_tell": [(output_id, case_ids.get(output_id, output_id)) for output_id in shown],
        "cant_tell_more": len(figures.cant_tell_outputs) - len(shown) if figures else 0,
        "may_adjudicate": may_adjudicate(request.user, request.workspace),
        "chart": interval_chart(figures) if figures else None,
        "per_side": f"{(1 - plan.confidence) / 2:.1%}",  # each one-sided test's error bound
        "left": left,
        "form": AuditReleaseForm(initial={"k": min(k or _k(request), left) or 1}, left=left),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
        "poll": POLL if stored.current else POLL_UPDATING,
        "released_event": RELEASED_EVENT,
    }


@never_cache
@role_required(*STAFF_ROLES)
def audit_plan(request: AuthenticatedHttpRequest, plan: int) -> HttpResponse:
    found = get_object_or_404(_plans(request.workspace), pk=plan)
    # The gate's levels for this criterion: on the page only, not in the panel that polls.
    return render(request, "calibration/audit_plan.html", _context(request, found) | {"gate_sides": gate_sides(found)})


@never_cache
@role_required(*STAFF_ROLES)
def audit_plan_figures(request: AuthenticatedHttpRequest, plan: int) -> HttpResponse:
    """The figures panel alone (htmx polls it: every 2 s while a worker computes newer figures, every 5 s while
    labels may come); 286 once the figures are current and the plan decided or closed, so polling stops. Once
    decided, a lead's "Label these next" control is swapped out of band for the words that no more labels are
    needed."""
    found = get_object_or_404(_plans(request.workspace), pk=plan)
    context = _context(request, found)
    decided = bool(context["f"] and context["f"].decided)
    context["oob"] = bool(decided and context["is_lead"] and found.closed_at is None)
    response = render(request, "calibration/audit_plan.html#audit-figures", context)
    if context["fresh"].current and (decided or found.closed_at is not None):
        return HttpResponseStopPolling(response.content, content_type=response["Content-Type"])
    return response


@never_cache
@require_POST
@role_required(Role.LEAD)
def audit_plan_release(request: AuthenticatedHttpRequest, plan: int) -> HttpResponse:
    """ "Label these k next": htmx swaps the control (#audit-release) and tells the figures panel to re-read."""
    found = get_object_or_404(_plans(request.workspace), pk=plan)
    form = AuditReleaseForm(request.POST, left=left_to_release(found))
    refused = ""
    if not form.is_valid():
        refused = " ".join(str(e) for errors in form.errors.values() for e in errors)
    else:
        try:
            release_plan_next(plan=found, by=request.user, k=form.cleaned_data["k"])
        except AuditPlanError as exc:
            refused = str(exc)
    if refused:
        # An htmx refusal is one sentence of text, shown beside the control (icewater.js); what was typed stays.
        if request.htmx:
            return plain(f"Nothing released: {refused}", 422)
        messages.error(request, f"Nothing released: {refused}")
        return redirect("calibration:audit_plan", plan=found.pk)
    done = released_words(found)
    if not request.htmx:
        messages.success(request, done)
        return redirect("calibration:audit_plan", plan=found.pk)
    context = _context(request, found, k=form.cleaned_data["k"]) | {"released_now": done}
    response = render(request, "calibration/audit_plan.html#audit-release", context)
    return trigger_client_event(response, RELEASED_EVENT)


@never_cache
@require_POST
@role_required(Role.LEAD)
def audit_plan_close(request: AuthenticatedHttpRequest, plan: int) -> HttpResponse:
    found = get_object_or_404(_plans(request.workspace), pk=plan)
    if found.closed_at is not None:
        messages.warning(request, f"Audit plan {found.pk} was already closed.")
    else:
        close_plan(plan=found, by=request.user)
        messages.success(request, f"Audit plan {found.pk} closed; its figures stay readable here.")
    return redirect("calibration:audit_plan", plan=found.pk)


# The interval chart: a 0-1 axis of this many units (the SVG scales to its box), with margins for the labels.
CHART_WIDTH, CHART_LEFT, CHART_RIGHT = 600, 12, 588


def interval_chart(f: AuditFigures) -> dict:
    """Where the anytime-valid interval, the estimate and the minimum sit on a 0-1 axis (SVG units)."""

    def x(value: float) -> float:
        return round(CHART_LEFT + value * (CHART_RIGHT - CHART_LEFT), 1)

    return {
        "width": CHART_WIDTH,
        "lower_x": x(f.lower),
        "upper_x": x(f.upper),
        "band_w": round(x(f.upper) - x(f.lower), 1),
        "min_x": x(f.min_pass_rate),
        "estimate_x": None if f.estimate is None else x(f.estimate),
        "ticks": [{"x": x(t / 4), "label": f"{t / 4:g}"} for t in range(5)],
        "label": (
            f"anytime-valid interval {f.lower:.3f} to {f.upper:.3f}, minimum pass rate {f.min_pass_rate:g}"
            + ("" if f.estimate is None else f", estimate {f.estimate:.3f}")
        ),
    }
