"""The gate page (/api/gates/): every decision of the release gate, and the panel where leads create and revoke the
API's tokens. It reads calibration's gate results and the tokens, so it lives here, above both, at an address of
this room; its URL names stay in the calibration namespace (api/urls.py token_panel_patterns).

All of it is the request's workspace's (issue 36): its gate results and tokens only, a new token made in it, and
another workspace's token id as missing as one that never was."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from calibration.models import GateResult
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.audit_log import record
from evals.models import AuditAction, Role, Workspace
from evals.workspaces import in_workspace
from formats.models import TraceBinding

from .forms import TokenForm
from .models import GateToken, hash_token
from .token_examples import token_examples

# Gate results per page, newest first (GateResult's ordering): each carries a per-criterion table.
GATE_HISTORY_PAGE_SIZE = 50


def _results(workspace: Workspace, page_number) -> Page:
    results = in_workspace(GateResult, workspace).select_related("token", "asked_by")
    return Paginator(results, GATE_HISTORY_PAGE_SIZE).get_page(page_number)


def _tokens(workspace: Workspace):
    return in_workspace(GateToken, workspace).select_related(
        "rubric_version__rubric", "created_by", "revoked_by", "trace_binding__eval_set"
    )


@never_cache
@role_required(*STAFF_ROLES)
def gates(request: AuthenticatedHttpRequest) -> HttpResponse:
    page = _results(request.workspace, request.GET.get("page"))
    context = {
        "results": page.object_list,
        "page": page,
        "tokens": _tokens(request.workspace),
        "form": TokenForm(workspace=request.workspace),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "calibration/gates.html", context)


@require_POST
@role_required(Role.LEAD)
def create_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = TokenForm(request.POST, workspace=request.workspace)
    secret = created = None
    if form.is_valid():
        secret = GateToken.new_secret()
        with transaction.atomic():
            binding = form.trace_binding()
            if binding is not None:
                binding.save()
            created = _create_token(form, secret, binding, request)
            record(
                request.workspace,
                request.user,
                AuditAction.TOKEN_CREATED,
                f"created API token {created}",
                token=created.pk,
            )
        form = TokenForm(workspace=request.workspace)
    context = {
        "tokens": _tokens(request.workspace),
        "form": form,
        "secret": secret,
        "created": created,
        "is_lead": True,
    }
    if created is not None and secret is not None:  # both or neither: set together above
        base_url = request.build_absolute_uri("/").rstrip("/")
        context["examples"] = token_examples(token=created, secret=secret, base_url=base_url)
    if request.htmx:  # htmx swaps only 2xx answers, and the errors must be seen
        response = render(request, "calibration/gates.html#token-panel", context)
    else:
        context["page"] = _results(request.workspace, 1)
        context["results"] = context["page"].object_list
        response = render(request, "calibration/gates.html", context, status=200 if secret else 422)
    response["Cache-Control"] = "no-store"  # the page holds the only copy of the secret
    return response


def _create_token(
    form: TokenForm, secret: str, binding: TraceBinding | None, request: AuthenticatedHttpRequest
) -> GateToken:
    return GateToken.objects.create(
        workspace=request.workspace,  # the form offered this workspace's rubric versions and eval sets only
        project=form.cleaned_data["project"],
        rubric_version=form.cleaned_data["rubric_version"],
        eval_set_pattern=form.cleaned_data["eval_set_pattern"],
        scopes=form.cleaned_data["scopes"],
        judges=form.cleaned_data["judges"],
        trace_binding=binding,
        token_hash=hash_token(secret),
        hint=secret[:8],
        created_by=request.user,
    )


@require_POST
@role_required(Role.LEAD)
def revoke_token(request: AuthenticatedHttpRequest, token: int) -> HttpResponse:
    mine = in_workspace(GateToken, request.workspace)
    get_object_or_404(mine, pk=token)  # another workspace's token: the 404 of one that never was
    changed = mine.filter(pk=token, revoked_at__isnull=True).update(revoked_at=timezone.now(), revoked_by=request.user)
    if changed:
        record(request.workspace, request.user, AuditAction.TOKEN_REVOKED, f"revoked API token #{token}", token=token)
        messages.success(request, "Token revoked: it no longer opens the gate.")
    else:
        messages.error(request, "That token was revoked already.")
    return redirect("calibration:gates")
