"""The release gate (POST /api/gate, also at its first address /calibration/api/gate, api/urls.py): the decision
as `manage.py gate --format json` gives it, recorded."""

from __future__ import annotations

from django.http import JsonResponse
from ninja import Router

from api.auth import ApiError, TokenAuth, TokenHttpRequest
from api.models import TokenScope
from api.schemas import ERRORS, ErrorOut, GateIn, GateOut
from calibration.audits.stored_figures import FIGURES_UPDATING
from calibration.gate.answers import GateOutcome
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import GateResult
from calibration.stats.policy import PolicyRefused, Tightening

router = Router()
GATE = TokenAuth(TokenScope.GATE)


def _unknown_name(outcome: GateOutcome) -> bool:
    """The gate could not decide because a name matched nothing (the record then lacks what it names)."""
    record = outcome.record
    return None in (record.eval_set_id, record.rubric_version_id, record.judge_config_id)


@router.post(
    "/gate", auth=GATE, response={200: GateOut, 409: ErrorOut, 411: ErrorOut, 413: ErrorOut, 503: ErrorOut, **ERRORS}
)
def gate(request: TokenHttpRequest, payload: GateIn):
    """The release gate, as `manage.py gate --format json` (the token's rubric version, eval set pattern and the
    policy of its workspace's lead, which the thresholds may only tighten; names are looked up in the token's
    workspace only). Also answers at /calibration/api/gate.

    200 with the decision (read "passed"), 409 when it cannot decide, 404 for a name that matches nothing, 503
    when an audit plan's figures of today's gold were not computed within ICEWATER_GATE_FIGURES_WAIT_SECONDS
    ("undecided: figures updating": ask again shortly; all with "passed": null); every decision is recorded.
    """
    token = request.auth
    refusal = token.scope_refusal(rubric_ref=payload.rubric, eval_set_name=payload.eval_set)
    if refusal:
        raise ApiError(403, refusal)
    tightening = Tightening(payload.min_pass_rate, payload.max_error_rate, payload.confidence)  # GateIn checked
    asked = GateRequest(payload.eval_set, payload.rubric, payload.judge, payload.agent_version or None, tightening)
    try:
        outcome = gate_and_record(asked, workspace=request.workspace, source=GateResult.Source.HTTP, token=token)
    except PolicyRefused as exc:
        raise ApiError(400, str(exc)) from None
    if outcome.decision is None:
        if outcome.reason.startswith(FIGURES_UPDATING):  # not a refusal: the same question succeeds shortly
            raise ApiError(503, outcome.reason, passed=None, figures_updating=True)
        raise ApiError(404 if _unknown_name(outcome) else 409, outcome.reason, passed=None)
    if outcome.decision.undecided:  # held back by the candidate's own gold: the criteria say why
        raise ApiError(409, outcome.reason, **{k: v for k, v in outcome.decision.as_dict().items() if k != "error"})
    return JsonResponse(outcome.decision.as_dict())
