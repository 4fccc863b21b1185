"""The members page (/members/): a workspace's leads see who can do what there and manage the memberships.

Every address is a lead's of the request's workspace (role_required checks the role in request.workspace); a
membership of another workspace answers 404, as a missing one does. The actions are overview/members.py's.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evals.access import AuthenticatedHttpRequest, role_required
from evals.models import Membership, Role
from evals.workspaces import in_workspace

from . import members
from .members_forms import MemberForm, RoleForm


def _page(request: AuthenticatedHttpRequest, status: int = 200, **extra) -> HttpResponse:
    context = {
        "rows": members.member_rows(request.workspace),
        "add_form": extra.pop("add_form", None) or MemberForm(),
        "create_form": extra.pop("create_form", None) or MemberForm(prefix="new"),
        "roles": Role.choices,
        **extra,
    }
    return render(request, "overview/members.html", context, status=status)


def _refused(request: AuthenticatedHttpRequest, exc: members.MemberRefused, **forms) -> HttpResponse:
    messages.error(request, str(exc))
    return _page(request, status=409, **forms)


def _membership(request: AuthenticatedHttpRequest, membership: int) -> Membership:
    return get_object_or_404(in_workspace(Membership, request.workspace).select_related("user"), pk=membership)


@never_cache
@require_GET
@role_required(Role.LEAD)
def members_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@role_required(Role.LEAD)
def add_member(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = MemberForm(request.POST)
    if not form.is_valid():
        return _page(request, status=422, add_form=form)
    try:
        added = members.add_member(workspace=request.workspace, by=request.user, **form.cleaned_data)
    except members.MemberRefused as exc:
        return _refused(request, exc, add_form=form)
    messages.success(request, f"{added.user.username} is now a member ({added.get_role_display().lower()}).")
    return redirect("overview:members")


@never_cache
@require_POST
@role_required(Role.LEAD)
def create_member(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = MemberForm(request.POST, prefix="new")
    if not form.is_valid():
        return _page(request, status=422, create_form=form)
    try:
        created, password = members.create_member(workspace=request.workspace, by=request.user, **form.cleaned_data)
    except members.MemberRefused as exc:
        return _refused(request, exc, create_form=form)
    response = _page(request, created=created, password=password)
    response["Cache-Control"] = "no-store"  # the page holds the only copy of the first password
    return response


@require_POST
@role_required(Role.LEAD)
def change_role(request: AuthenticatedHttpRequest, membership: int) -> HttpResponse:
    found = _membership(request, membership)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Choose a role for {found.user.username}: {', '.join(r for r, _ in Role.choices)}.")
        return _page(request, status=422)
    try:
        members.change_role(membership=found, by=request.user, role=form.cleaned_data["role"])
    except members.MemberRefused as exc:
        return _refused(request, exc)
    messages.success(request, f"{found.user.username} is now a {found.get_role_display().lower()} here.")
    return redirect("overview:members")


@require_POST
@role_required(Role.LEAD)
def remove_member(request: AuthenticatedHttpRequest, membership: int) -> HttpResponse:
    found = _membership(request, membership)
    try:
        members.remove_member(membership=found, by=request.user)
    except members.MemberRefused as exc:
        return _refused(request, exc)
    messages.success(
        request, f"{found.user.username} is no longer a member: their labels stay, their access here has ended."
    )
    if found.user_id == request.user.pk and not request.user.is_superuser:
        return redirect("home")  # they left: this page is no longer theirs
    return redirect("overview:members")
