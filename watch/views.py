"""The watch pages: the workspace's watches, starting one, a watch's figures, stopping it.

Thin views over watch/starting.py and watch/figures.py, the same functions as `manage.py watch` and the API. Leads
start and stop; reviewers read. Annotators get 403: the figures come from gold and the judge's verdicts, which
they must not see. Another workspace's watch answers 404, as a missing one.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Role, Workspace
from evals.workspaces import in_workspace

from .figures import watch_figures
from .forms import WatchStartForm
from .models import Watch, WatchAlarm
from .picture import charts
from .starting import WatchError, start, stop
from .tasks import send_update


def _watches(workspace: Workspace):
    return in_workspace(
        Watch.objects.select_related(
            "eval_set", "rubric_version__rubric", "criterion", "judge_config", "started_by", "stopped_by", "gating_mark"
        ),
        workspace,
    )


@never_cache
@role_required(*STAFF_ROLES)
def watch_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    watches = list(_watches(request.workspace))
    context = {
        "active": [w for w in watches if w.is_active],
        "stopped": [w for w in watches if not w.is_active],
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "watch/list.html", context)


@never_cache
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def watch_start(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = WatchStartForm(request.POST or None, workspace=request.workspace)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            watch = start(by=request.user, **d)
        except WatchError as exc:
            form.add_error(None, f"{exc} Nothing was started.")
        else:
            send_update(watch.pk)
            messages.success(request, f"Watch {watch.pk} started: outputs that arrive from now on are watched.")
            return redirect("watch:detail", watch_id=watch.pk)
    return render(request, "watch/start.html", {"form": form}, status=422 if form.errors else 200)


@never_cache
@role_required(*STAFF_ROLES)
def watch_detail(request: AuthenticatedHttpRequest, watch_id: int) -> HttpResponse:
    watch = get_object_or_404(_watches(request.workspace), pk=watch_id)
    alarms = list(WatchAlarm.objects.filter(watch=watch).order_by("fired_at", "pk"))
    pass_chart, rates = charts(watch, alarms)
    context = {
        "watch": watch,
        "f": watch_figures(watch),
        "alarms": alarms,
        "pass_chart": pass_chart,
        "rates": rates,
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "watch/detail.html", context)


@role_required(Role.LEAD)
@require_POST
def watch_stop(request: AuthenticatedHttpRequest, watch_id: int) -> HttpResponse:
    watch = get_object_or_404(_watches(request.workspace), pk=watch_id)
    try:
        stop(watch=watch, by=request.user)
    except WatchError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Watch {watch.pk} stopped: it takes no more outputs; its alarms and bands stay.")
    return redirect("watch:detail", watch_id=watch.pk)
