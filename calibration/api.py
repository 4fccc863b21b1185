"""The release gate over HTTP, for CI systems: POST JSON with a bearer token.

    curl -X POST https://icewater.example/calibration/api/gate \
         -H "Authorization: Bearer icw_..." -H "Content-Type: application/json" \
         -d '{"eval_set": "rc-42", "rubric": "refund@3", "judge": "gpt-judge"}'

200 with the gate's JSON (the same as `manage.py gate --format json`) when it decided (pass or fail:
read "passed"); 409 with {"passed": null, "error": ...} when it cannot decide; 400 for a bad body or a
threshold looser than the lead's policy (callers may only tighten it); 401 for a missing, unknown or
revoked token; 403 when the token has no gate scope, or the rubric version or eval set is outside its
scope. No message names anything the token holder did not name or cannot already gate on. Session
cookies are not accepted here, which is why the view needs no CSRF token.
"""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .forms import GateApiForm
from .gate import GateRequest, gate_and_record, undecided_dict
from .models import GateResult, GateToken, TokenScope, hash_token
from .policy import PolicyRefused


def _token(request: HttpRequest) -> GateToken | None:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    tokens = GateToken.objects.select_related("rubric_version__rubric")
    return tokens.filter(token_hash=hash_token(secret.strip())).first()


def _error(status: int, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


@csrf_exempt
@require_POST
def gate(request: HttpRequest) -> JsonResponse:
    token = _token(request)
    if token is None or not token.is_active:
        reason = "this token was revoked" if token else "send a valid gate token as 'Authorization: Bearer <token>'"
        return _error(401, reason)
    if not token.allows(TokenScope.GATE):
        return _error(
            403, f"this token may not gate (its scopes: {', '.join(token.scopes)}); a lead can add one that may"
        )
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return _error(400, "the body must be a JSON object")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    form = GateApiForm(body)
    if not form.is_valid():
        return _error(400, "bad parameters", fields={k: [str(e) for e in v] for k, v in form.errors.items()})
    d = form.cleaned_data
    refusal = token.scope_refusal(rubric_ref=d["rubric"], eval_set_name=d["eval_set"])
    if refusal:
        return _error(403, refusal)
    GateToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    request_ = GateRequest(d["eval_set"], d["rubric"], d["judge"], d["agent_version"] or None, d["tightening"])
    try:
        outcome = gate_and_record(request_, source=GateResult.Source.HTTP, token=token)
    except PolicyRefused as exc:
        return _error(400, str(exc))
    if outcome.decision is None:
        return JsonResponse(undecided_dict(outcome.reason), status=409)
    return JsonResponse(outcome.decision.as_dict())
