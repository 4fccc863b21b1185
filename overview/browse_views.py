"""The eval set page and the output page (what they show: overview.browse). Reviewers and leads only:
they show other people's labels and the judge, and annotators label blind (403)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, role_required
from evals.models import EvalSet, Output, RubricVersion
from evals.naming import output_names
from formats.models import TraceBinding
from formats.trace_outputs import trace_summary
from judging.models import JudgeConfig
from labeling.labeling_pages import full_url, transcript_parts
from labeling.queue import current_queue
from overview.browse_forms import CaseFilterForm

from . import browse

# Rows per page of the eval set page: a screen or two, and the per-page lookups stay small.
CASES_PAGE_SIZE = 50


@require_GET
@role_required(*STAFF_ROLES)
def eval_set_page(request: AuthenticatedHttpRequest, eval_set: int) -> HttpResponse:
    # Whether a traces token feeds it, in the same query: the summary's queries run only when one does.
    traced = Exists(TraceBinding.objects.filter(eval_set=OuterRef("pk")))
    es = get_object_or_404(EvalSet.objects.annotate(traced=traced), pk=eval_set)
    versions = RubricVersion.objects.select_related("rubric").order_by("rubric__name", "created_at")
    agent_versions = sorted(set(Output.objects.filter(case__eval_set=es).values_list("agent_version", flat=True)))
    form = CaseFilterForm(
        request.GET or None,
        agent_versions=agent_versions,
        rubric_versions=versions,
        judges=JudgeConfig.objects.filter(runs__eval_set=es).distinct().order_by("name"),
        show_choices=browse.SHOW_CHOICES,
    )
    filters = form.cleaned_data if form.is_bound and form.is_valid() else {}
    queue = current_queue(es.pk)
    rv = filters.get("rubric_version") or (queue.rubric_version if queue else None)
    keep = browse.matching_outputs(es, rubric_version=rv, show=filters.get("show", ""), judge=filters.get("judge"))
    outputs = browse.search_outputs(
        es, q=filters.get("q", ""), agent_version=filters.get("agent_version", ""), keep=keep
    )
    page = Paginator(outputs, CASES_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "es": es,
        "form": form,
        "rv": rv,
        "queue": queue,
        "page": page,
        "rows": _rows(page.object_list, rv),
        "query": query.urlencode(),
        "traces": trace_summary(es) if getattr(es, "traced", False) else None,  # the annotation above
    }
    return render(request, "overview/eval_set.html", context)


def _rows(outputs, rv: RubricVersion | None) -> list[dict]:
    ids = [o.pk for o in outputs]
    names, counts = output_names(ids), browse.label_counts(ids, rv)
    return [{"output": o, "name": names.get(o.pk, o.case.case_id), "annotations": counts.get(o.pk, 0)} for o in outputs]


@require_GET
@role_required(*STAFF_ROLES)
def output_page(request: AuthenticatedHttpRequest, output: int) -> HttpResponse:
    out = get_object_or_404(Output.objects.select_related("case__eval_set"), pk=output)
    wanted = request.GET.get("rubric_version", "")
    rv = None
    if wanted.isdigit():
        rv = RubricVersion.objects.select_related("rubric").filter(pk=int(wanted)).first()
    rv = rv or browse.default_rubric_version(out)
    view = browse.output_view(out, rv) if rv else None
    quotes = view.quotes() if view else {}
    context = {
        "output": out,
        "case": out.case,
        "es": out.case.eval_set,
        "rv": rv,
        "view": view,
        "output_name": output_names([out.pk])[out.pk],
        "transcript": transcript_parts(out, quotes, full=request.GET.get("full") == "1"),
        "full_url": full_url(request),
        "bad_version": bool(wanted) and (rv is None or str(rv.pk) != wanted),
    }
    return render(request, "overview/output.html", context)
