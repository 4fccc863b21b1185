"""The pages of an audit of several gating criteria on one sample (issue 37 item 3): starting one, its page (a row
per criterion, the release's line, the open criteria, each criterion's forecast), "label these k next" for all of
them, closing.

Thin views over groups.py and group_figures.py. No view computes a decision or a forecast: the shared decision is
the one a worker stored on the group, each criterion's forecast the one stored with its plan's figures. Leads start,
release and close; reviewers read; annotators get 403; another workspace's group answers 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from calibration.audits.forms import AuditGroupForm, AuditReleaseForm
from calibration.audits.group_figures import release_words, stored_group
from calibration.audits.groups import close_group, release_group_next, start_group
from calibration.audits.plans import AuditPlanError
from calibration.audits.stored_figures import stored_figures
from calibration.models import AuditPlanGroup
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Role, Workspace
from evals.workspaces import in_workspace
from labeling.audit_order import DEFAULT_RELEASE

POLL = "every 5s"
POLL_UPDATING = "every 2s"


def _groups(workspace: Workspace):
    """The groups of `workspace`: another workspace's group id answers as a missing one (404)."""
    return in_workspace(AuditPlanGroup.objects.select_related("eval_set", "judge_config", "created_by"), workspace)


@never_cache
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def audit_group_start(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = AuditGroupForm(request.POST or None, workspace=request.workspace)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        marks = d["marks"]
        try:
            group = start_group(
                criteria=[m.criterion for m in marks],
                eval_set=d["eval_set"],
                judge_config=marks[0].judge_config,
                by=request.user,
                agent_version=d["agent_version"] or None,
                seed=d["seed"],
                design=d["design"],
            )
        except AuditPlanError as exc:
            form.add_error(None, f"{exc} Nothing was started.")
        else:
            messages.success(request, f"Audit of {group.k} criteria started. Release the first outputs to label below.")
            return redirect("calibration:audit_group", group=group.pk)
    return render(request, "calibration/audit_group_start.html", {"form": form}, status=422 if form.errors else 200)


def _rows(group: AuditPlanGroup, figures: dict | None) -> tuple[list[dict], list]:
    """A row per criterion: the shared decision's, with the forecast stored with its plan's own figures (at its
    plan's levels, alpha per side: a criterion's own forecast, not the release's). One query for the plans, one for
    their stored figures."""
    plans = list(group.plans.for_figures().order_by("criterion__order", "criterion__key"))
    stored = stored_figures(plans)
    by_key = {row["criterion"]: row for row in (figures or {}).get("criteria", [])}
    rows = []
    for plan in plans:
        own = stored[plan.pk].figures
        rows.append(
            {
                "plan": plan,
                "shared": by_key.get(plan.criterion.key),
                "more": own.expected_more_labels if own and not own.decided else None,
                "p90": own.forecast.p90_labels if own and not own.decided else None,
            }
        )
    return rows, plans


def _context(request: AuthenticatedHttpRequest, group: AuditPlanGroup) -> dict:
    fresh = stored_group(group)
    rows, plans = _rows(group, fresh.figures)
    order = plans[0].order if plans else None
    left = (order.size - order.released) if order else 0
    waiting = [r["more"] for r in rows if r["shared"] and not r["shared"]["decided"] and r["more"] is not None]
    return {
        "group": group,
        "g": fresh.figures,
        "per_side": f"{group.alpha_pass:.1%}",
        "fresh": fresh,
        "line": release_words(fresh.figures) if fresh.figures else "",
        "rows": rows,
        "order": order,
        "left": left,
        # A PASS of the release needs its last open criterion's: no sooner than the largest open forecast (a FAIL of
        # any one criterion may come sooner).
        "at_least": max(waiting) if waiting else None,
        "form": AuditReleaseForm(initial={"k": min(DEFAULT_RELEASE, left) or 1}, left=left),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
        "poll": POLL if fresh.current else POLL_UPDATING,
    }


@never_cache
@role_required(*STAFF_ROLES)
def audit_group(request: AuthenticatedHttpRequest, group: int) -> HttpResponse:
    found = get_object_or_404(_groups(request.workspace), pk=group)
    return render(request, "calibration/audit_group.html", _context(request, found))


@never_cache
@role_required(*STAFF_ROLES)
def audit_group_figures(request: AuthenticatedHttpRequest, group: int) -> HttpResponse:
    """The shared figures panel alone (htmx polls it); 286 once current and decided or closed, with the release
    control swapped for "No more labels needed" then."""
    found = get_object_or_404(_groups(request.workspace), pk=group)
    context = _context(request, found)
    decided = bool(context["g"] and context["g"].get("decided"))
    # Once decided, a lead's "Label these next" gives way to "No more labels needed" on this poll (out of band).
    context["oob"] = bool(decided and context["is_lead"] and found.closed_at is None)
    response = render(request, "calibration/audit_group.html#group-figures", context)
    if context["fresh"].current and (decided or found.closed_at is not None):
        return HttpResponseStopPolling(response.content, content_type=response["Content-Type"])
    return response


@never_cache
@require_POST
@role_required(Role.LEAD)
def audit_group_release(request: AuthenticatedHttpRequest, group: int) -> HttpResponse:
    found = get_object_or_404(_groups(request.workspace), pk=group)
    plan = found.plans.select_related("order").first()
    left = plan.order.size - plan.order.released if plan else 0
    form = AuditReleaseForm(request.POST, left=left)
    if not form.is_valid():
        refused = " ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"Nothing released: {refused}")
        return redirect("calibration:audit_group", group=found.pk)
    try:
        released = release_group_next(group=found, by=request.user, k=form.cleaned_data["k"])
    except AuditPlanError as exc:
        messages.error(request, f"Nothing released: {exc}")
    else:
        messages.success(request, f"The labeling queue may now hand out the first {released} outputs of the order.")
    return redirect("calibration:audit_group", group=found.pk)


@never_cache
@require_POST
@role_required(Role.LEAD)
def audit_group_close(request: AuthenticatedHttpRequest, group: int) -> HttpResponse:
    found = get_object_or_404(_groups(request.workspace), pk=group)
    if found.closed_at is not None:
        messages.warning(request, f"Audit group {found.pk} was already closed.")
    else:
        close_group(group=found, by=request.user)
        messages.success(request, f"Audit group {found.pk} and its {found.k} plans closed.")
    return redirect("calibration:audit_group", group=found.pk)
