"""The alerts page (/alerts/): a lead's destinations (add, change, switch off, remove, send a test) and the
delivery log, which reviewers may read too; annotators get 403. Another workspace's destination answers 404, as
a missing one does. The actions are alerts/destinations.py's and alerts/delivery.py's; htmx posts get the page's
#alerts-main part back, plain posts a redirect (or the page with the form's errors).
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Role
from evals.workspaces import in_workspace

from . import destinations
from .delivery import send_test
from .destinations import DestinationRefused
from .forms import DestinationForm
from .log import alert_rows
from .models import AlertDestination, DeliveryStatus


def _destination(request: AuthenticatedHttpRequest, pk: int) -> AlertDestination:
    return get_object_or_404(in_workspace(AlertDestination, request.workspace), pk=pk)


def _page(request: AuthenticatedHttpRequest, status: int = 200, **extra) -> HttpResponse:
    rows = alert_rows(request.workspace)
    pending = any(d.status in (DeliveryStatus.QUEUED, DeliveryStatus.SENDING) for row in rows for d in row.deliveries)
    items = in_workspace(AlertDestination, request.workspace).order_by("name")
    context = {
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
        "destinations": [(d, destinations.shown_url(d)) for d in items],
        "rows": rows,
        "pending": pending,
        "form": extra.pop("form", None) or DestinationForm(),
        **extra,
    }
    template = "alerts/alerts.html#alerts-main" if request.htmx else "alerts/alerts.html"
    return render(request, template, context, status=status)


def _done(request: AuthenticatedHttpRequest, notice: str) -> HttpResponse:
    if request.htmx:
        return _page(request, notice=notice)
    return redirect("alerts:page")


def _refused(form: DestinationForm, exc: DestinationRefused) -> None:
    for field, message in exc.problems:
        form.add_error(field if field in form.fields else None, message)


@never_cache
@require_GET
@role_required(*STAFF_ROLES)
def alerts_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@role_required(Role.LEAD)
def add_destination(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = DestinationForm(request.POST)
    if form.is_valid():
        try:
            made = destinations.add_destination(workspace=request.workspace, by=request.user, **form.cleaned_data)
        except DestinationRefused as exc:
            _refused(form, exc)
        else:
            return _done(request, f"Destination {made.name} added.")
    return _page(request, status=422, form=form)


@never_cache
@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def edit_destination(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    destination = _destination(request, pk)
    initial = {f: getattr(destination, f) for f in ("name", "kind", "url", "addresses", "secret_env")}
    form = DestinationForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            destinations.change_destination(destination, by=request.user, **form.cleaned_data)
        except DestinationRefused as exc:
            _refused(form, exc)
        else:
            return redirect("alerts:page")
    status = 422 if request.method == "POST" else 200
    return render(request, "alerts/edit.html", {"destination": destination, "form": form}, status=status)


@require_POST
@role_required(Role.LEAD)
def enable_destination(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    destination = _destination(request, pk)
    enabled = request.POST.get("enabled") == "1"
    destinations.set_enabled(destination, enabled, by=request.user)
    return _done(request, f"Destination {destination.name} {'switched on' if enabled else 'switched off'}.")


@require_POST
@role_required(Role.LEAD)
def remove_destination(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    destination = _destination(request, pk)
    destinations.remove_destination(destination, by=request.user)
    return _done(request, f"Destination {destination.name} removed; its deliveries stay in the log.")


@require_POST
@role_required(Role.LEAD)
def test_destination(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    destination = _destination(request, pk)
    send_test(destination, sent_by=request.user.username, url=request.build_absolute_uri(reverse("alerts:page")))
    return _done(request, f"A test alert to {destination.name} is on its way; its delivery is in the log below.")


@never_cache
@require_GET
@role_required(*STAFF_ROLES)
def delivery_log(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The log alone, which the page polls while a delivery is under way."""
    rows = alert_rows(request.workspace)
    pending = any(d.status in (DeliveryStatus.QUEUED, DeliveryStatus.SENDING) for row in rows for d in row.deliveries)
    return render(request, "alerts/alerts.html#delivery-log", {"rows": rows, "pending": pending})
