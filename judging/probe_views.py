"""Probe run pages: start one (leads), follow it, read its results and the flipped examples (leads and reviewers).

Annotators get 403 everywhere here, as on every judge page: they label blind to the judge.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Criterion, Role

from . import runner
from .backends import Misconfigured
from .forms import StartProbeRunForm
from .models import JudgeRun, ProbeRun
from .probes import choose, probe_pages
from .probes import runs as probe_runs


def _probe_run(probe_run_id: int) -> ProbeRun:
    runs = ProbeRun.objects.select_related("eval_set", "rubric_version__rubric", "judge_config", "started_by")
    return get_object_or_404(runs, pk=probe_run_id)


@role_required(*STAFF_ROLES)
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(
        request, "judging/probes.html", probe_pages.index_context(request.user, request.workspace, StartProbeRunForm())
    )


@role_required(Role.LEAD)
@require_POST
def start(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = StartProbeRunForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        scope = runner.Scope(d["eval_set"], d["rubric_version"], d["judge_config"], d["agent_version"].strip())
        try:
            probes = choose(d["probes"])
            # The key lives where the workers run, not necessarily in the web server: the lanes check it.
            probe_run = probe_runs.start_probe_run(
                scope, probes, sample=d["sample"], started_by=request.user, check_api_key=False
            )
        except Misconfigured as exc:
            form.add_error(None, str(exc))
        else:
            progress = probe_runs.progress_of(probe_run)
            if progress.status == JudgeRun.Status.FAILED:  # the broker was unreachable: the page says why
                messages.error(request, f"Probe run {probe_run.pk} could not start: {'; '.join(progress.errors)}")
            else:
                planned = f"{probe_run.outputs} outputs, {len(probes)} probes"
                messages.success(request, f"Probe run {probe_run.pk} queued: {planned}.")
            return redirect("judging:probe_run", probe_run_id=probe_run.pk)
    return render(
        request, "judging/probes.html", probe_pages.index_context(request.user, request.workspace, form), status=400
    )


@role_required(*STAFF_ROLES)
def detail(request: AuthenticatedHttpRequest, probe_run_id: int) -> HttpResponse:
    probe_run = _probe_run(probe_run_id)
    context = {**probe_pages.status_context(probe_run), "is_lead": has_role(request.user, request.workspace, Role.LEAD)}
    return render(request, "judging/probe_run.html", context)


@role_required(*STAFF_ROLES)
def status(request: AuthenticatedHttpRequest, probe_run_id: int) -> HttpResponse:
    """The status panel alone (htmx polls it); 286 with the results once every arm has ended."""
    probe_run = _probe_run(probe_run_id)
    context = probe_pages.status_context(probe_run)
    response = render(request, "judging/probe_run.html#probe-status", context)
    if context["progress"].finished:
        return HttpResponseStopPolling(response.content, content_type=response["Content-Type"])
    return response


@role_required(Role.LEAD)
@require_POST
def cancel(request: AuthenticatedHttpRequest, probe_run_id: int) -> HttpResponse:
    probe_run = get_object_or_404(ProbeRun, pk=probe_run_id)
    if probe_runs.cancel_probe_run(probe_run):
        messages.success(request, f"Probe run {probe_run.pk} cancelled; verdicts already written are kept.")
    else:
        messages.warning(request, f"Probe run {probe_run.pk} had already ended.")
    return redirect("judging:probe_run", probe_run_id=probe_run.pk)


@role_required(*STAFF_ROLES)
def examples(request: AuthenticatedHttpRequest, probe_run_id: int, probe: str, key: str) -> HttpResponse:
    probe_run = _probe_run(probe_run_id)
    if probe not in [p["name"] for p in probe_run.plan]:
        raise Http404("this probe run has no such probe")
    criterion = get_object_or_404(Criterion, rubric_version=probe_run.rubric_version, key=key)
    show = request.GET.get("show", "flips")
    if show not in probe_pages.SHOW:
        show = "flips"
    found = probe_pages.examples_context(probe_run, probe, criterion, show, request.GET.get("page"))
    entry = next(p for p in probe_run.plan if p["name"] == probe)
    context = {"probe_run": probe_run, "probe": entry, "criterion": criterion, "show": show, **found}
    context.update(shows=probe_pages.SHOW, show_label=probe_pages.SHOW[show][1])
    return render(request, "judging/probe_examples.html", context)
