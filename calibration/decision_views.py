"""The lead's decision pages: the release gate run from the browser, one gate result, and disputing a gold
label from a drilldown.

The gate page calls the same domain function as `manage.py gate` and the HTTP API (gate.gate_and_record),
so it decides and records exactly as they do (source "web", with who asked). Thin views: validate a form,
call one domain function, redirect or render.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Output, Role
from judging.models import JudgeRun
from labeling.disputes import DisputeRefused, raise_dispute

from . import drilldown as dd
from .candidate_evidence import ASSUMES_CALIBRATION, POWER_MOVES
from .forms import DisputeForm, GateRunForm
from .gate import GateRequest, gate_and_record
from .models import GateResult, GatingMark
from .policy import PolicyRefused
from .svg import gate_rows
from .views import cell_or_404, safe_next


def gate_initial(query) -> dict:
    """What the gate form starts with: what the link asked for, else the newest gating instrument (or the newest
    run's, before anything gates) and the newest eval set its judge ran on (the release candidate most likely
    next)."""
    initial = {k: query[k] for k in ("eval_set", "rubric_version", "judge_config", "agent_version") if query.get(k)}
    if "rubric_version" not in initial or "judge_config" not in initial:
        runs = JudgeRun.objects.filter(probe_run__isnull=True)  # a probe arm is no release candidate
        newest = GatingMark.objects.active().order_by("-marked_at").first() or runs.first()
        if newest is None:
            return initial
        initial.setdefault("rubric_version", newest.rubric_version_id)
        initial.setdefault("judge_config", newest.judge_config_id)
    if "eval_set" not in initial:
        run = JudgeRun.objects.filter(
            rubric_version_id=initial["rubric_version"], judge_config_id=initial["judge_config"], probe_run__isnull=True
        ).first()  # newest first (the model's ordering)
        if run is not None:
            initial["eval_set"] = run.eval_set_id
    return initial


@never_cache
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def gate_run(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = GateRunForm(request.POST or None, initial=gate_initial(request.GET))
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        asked = GateRequest(
            d["eval_set"].name,
            d["rubric_version"].ref,
            d["judge_config"].name,
            d["agent_version"] or None,
            d["tightening"],
        )
        try:
            outcome = gate_and_record(asked, source=GateResult.Source.WEB, asked_by=request.user)
        except PolicyRefused as exc:
            form.add_error(None, f"{exc}. Nothing was stored.")
        else:
            return redirect("calibration:gate_result", result=outcome.record.pk)
    return render(request, "calibration/gate_run.html", {"form": form}, status=422 if form.errors else 200)


@role_required(*STAFF_ROLES)
def gate_result(request: AuthenticatedHttpRequest, result: int) -> HttpResponse:
    record = get_object_or_404(GateResult.objects.select_related("token", "asked_by"), pk=result)
    criteria = record.result.get("criteria", []) if isinstance(record.result, dict) else []
    context = {
        "g": record,
        "rows": zip(criteria, gate_rows(criteria), strict=True),
        "command": _command(record),
        "is_lead": has_role(request.user, Role.LEAD),
        "has_criteria": bool(criteria),
        # What the candidate's gold says (results from before issue 40 have no "transport" and show none of it).
        "evidence": [c for c in criteria if "transport" in c],
        "transports": [_with_power(c) for c in criteria if c.get("transport") and c["transport"]["candidate_gold_n"]],
        "assumes": ASSUMES_CALIBRATION,
    }
    return render(request, "calibration/gate_result.html", context)


def _with_power(criterion: dict) -> tuple[dict, float | None, float | None]:
    """A criterion with its transport test's power to catch a drop of 0.10 in TNR and in TPR."""
    move = f"{POWER_MOVES[0]:.2f}"
    t = criterion["transport"]
    return criterion, t["tnr"]["power"].get(move), t["tpr"]["power"].get(move)


def _command(record: GateResult) -> str:
    """The same question as a command line (what CI would run)."""
    parts = ["python manage.py gate", f"--eval-set {record.eval_set_name}", f"--rubric {record.rubric_ref}"]
    parts.append(f"--judge {record.judge_name}")
    if record.agent_version:
        parts.append(f"--agent-version {record.agent_version}")
    for name in ("min_pass_rate", "max_error_rate", "confidence"):
        value = getattr(record, name)
        if value is not None:
            parts.append(f"--{name.replace('_', '-')} {value:g}")
    return " ".join(parts)


@never_cache
@require_POST
@role_required(*STAFF_ROLES)
def dispute_gold(
    request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int, judge: int, key: str, cell: str
):
    """From a false-pass / false-fail drilldown: send one output's gold label back to adjudication."""
    es, rv, jc, criterion = cell_or_404(eval_set, rubric_version, judge, key, cell)
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
