"""The API tokens page (leads): create a token with its scopes (the secret is shown once), revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from calibration.models import hash_token
from labeling.access import role_required
from labeling.models import Role

from .forms import ApiTokenForm
from .models import ApiToken


def _page(request: HttpRequest, form: ApiTokenForm, secret: str | None = None, status: int = 200) -> HttpResponse:
    tokens = ApiToken.objects.select_related("created_by", "revoked_by")
    response = render(request, "api/tokens.html", {"tokens": tokens, "form": form, "secret": secret}, status=status)
    response["Cache-Control"] = "no-store"  # the page may hold the only copy of a secret
    return response


@role_required(Role.LEAD)
def tokens(request: HttpRequest) -> HttpResponse:
    return _page(request, ApiTokenForm())


@require_POST
@role_required(Role.LEAD)
def create_token(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=422)
    secret = ApiToken.new_secret()
    ApiToken.objects.create(
        project=form.cleaned_data["project"],
        scopes=form.cleaned_data["scopes"],
        token_hash=hash_token(secret),
        hint=secret[:11],
        created_by=request.user,
    )
    return _page(request, ApiTokenForm(), secret=secret)


@require_POST
@role_required(Role.LEAD)
def revoke_token(request: HttpRequest, token: int) -> HttpResponse:
    changed = ApiToken.objects.filter(pk=token, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_by=request.user
    )
    if changed:
        messages.success(request, "Token revoked: the API no longer accepts it.")
    else:
        messages.error(request, "No such active token.")
    return redirect("api_tokens:tokens")
