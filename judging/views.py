"""Judge pages: configs, runs with live progress, verdicts with their raw output.

Reviewers and leads may look; only leads create configs, start and cancel runs.
Annotators see none of it (403 on every view): they label blind to the judge.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, checked_query, has_role, role_required
from evals.models import Role
from labeling.labeling_pages import full_url

from . import judge_pages, runner
from .backends import Misconfigured
from .forms import JudgeConfigForm, StartRunForm
from .models import JudgeConfig, JudgeRun, Verdict
from .run_progress import progress_of


@role_required(*STAFF_ROLES)
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    # A link from another page (an import, a report) may pick the eval set and rubric version to start with.
    initial = {k: request.GET[k] for k in ("eval_set", "rubric_version", "judge_config") if request.GET.get(k)}
    return render(
        request,
        "judging/index.html",
        judge_pages.index_context(request.user, request.workspace, StartRunForm(initial=initial)),
    )


@role_required(Role.LEAD)
@require_POST
def start_run(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = StartRunForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        scope = runner.Scope(d["eval_set"], d["rubric_version"], d["judge_config"], d["agent_version"].strip())
        try:
            # The key lives where the workers run, not necessarily in the web server: the lane checks it.
            run = runner.start_run(scope, started_by=request.user, check_api_key=False)
        except Misconfigured as exc:
            form.add_error(None, str(exc))
        else:
            run.refresh_from_db(fields=["status", "error"])
            if run.status == JudgeRun.Status.FAILED:  # the broker was unreachable: the run page says why
                messages.error(request, f"Judge run {run.pk} could not start: {run.error}")
            else:
                messages.success(request, f"Judge run {run.pk} queued: {run.total_items} items.")
            return redirect("judging:run", run_id=run.pk)
    return render(
        request, "judging/index.html", judge_pages.index_context(request.user, request.workspace, form), status=400
    )


@role_required(Role.LEAD)
def config_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = JudgeConfigForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        config = form.save(commit=False)
        config.created_by = request.user
        config.save()
        messages.success(request, f"Judge config {config.name} created.")
        return redirect("judging:config", config_id=config.pk)
    return render(request, "judging/config_form.html", {"form": form}, status=400 if form.errors else 200)


@role_required(*STAFF_ROLES)
def config_detail(request: AuthenticatedHttpRequest, config_id: int) -> HttpResponse:
    config = get_object_or_404(JudgeConfig, pk=config_id)
    runs = config.runs.select_related("eval_set", "rubric_version__rubric")[:20]
    return render(request, "judging/config_detail.html", {"config": config, "runs": runs})


@role_required(*STAFF_ROLES)
def run_detail(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        JudgeRun.objects.select_related("eval_set", "rubric_version__rubric", "judge_config"), pk=run_id
    )
    context = {
        "run": run,
        "progress": progress_of(run),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "judging/run.html", context)


@role_required(*STAFF_ROLES)
def run_progress(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    """The progress panel alone (htmx polls it); 286 once the run has ended, so polling stops."""
    run = get_object_or_404(
        JudgeRun.objects.select_related("eval_set", "rubric_version__rubric", "judge_config"), pk=run_id
    )
    progress = progress_of(run)
    context = {"run": run, "progress": progress, "is_lead": has_role(request.user, request.workspace, Role.LEAD)}
    response = render(request, "judging/run.html#run-progress", context)
    if progress.finished:
        return HttpResponseStopPolling(response.content, content_type=response["Content-Type"])
    return response


@role_required(Role.LEAD)
@require_POST
def run_cancel(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(JudgeRun, pk=run_id)
    if runner.cancel_run(run):
        messages.success(request, f"Judge run {run.pk} cancelled; verdicts already written are kept.")
    else:
        messages.warning(request, f"Judge run {run.pk} had already ended ({run.get_status_display()}).")
    return redirect("judging:run", run_id=run.pk)


@role_required(*STAFF_ROLES)
def run_verdicts(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        JudgeRun.objects.select_related("eval_set", "rubric_version__rubric", "judge_config"), pk=run_id
    )
    filters = judge_pages.VerdictFilters.from_query(checked_query(request.GET), run)
    rows = filters.apply(judge_pages.verdict_rows(run))
    page = Paginator(rows, judge_pages.VERDICTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"run": run, "page": page, "filters": filters, **judge_pages.filter_choices(run)}
    return render(request, "judging/verdicts.html", context)


@role_required(*STAFF_ROLES)
def verdict_detail(request: AuthenticatedHttpRequest, verdict_id: int) -> HttpResponse:
    verdict = get_object_or_404(
        Verdict.objects.select_related("run", "output__case", "criterion", "judge_config", "rubric_version__rubric"),
        pk=verdict_id,
    )
    context = judge_pages.verdict_context(verdict, full=request.GET.get("full") == "1")
    context["full_url"] = full_url(request)
    return render(request, "judging/verdict.html", context)
