"""The judge workbench's comparison page: two judge config versions side by side on the same gold items.

Leads and reviewers may read the development split (annotators get 403: it shows gold and verdicts). The
held-out split's figures are shown only on a lead's explicit request, which is counted as a look
(judging/gold_splits.record_look) before anything is computed. Views stay thin: validate the form, call
version_comparison, render.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Role
from judging.gold_splits import record_look, split_for

from .forms import VersionCompareForm
from .judge_compare import DELTA_REPLICATES
from .version_comparison import compare_versions, comparison_scope

TEMPLATE = "calibration/version_compare.html"


def _render(request: AuthenticatedHttpRequest, form: VersionCompareForm, *, held_out: bool = False) -> HttpResponse:
    context: dict = {"form": form, "rows": None, "replicates": DELTA_REPLICATES}
    context["is_lead"] = has_role(request.user, Role.LEAD)
    if not form.is_valid():
        return render(request, TEMPLATE, context, status=422 if form.is_bound else 200)
    data = form.cleaned_data
    es, rv, a, b = data["eval_set"], data["rubric_version"], data["a"], data["b"]
    scope = comparison_scope(eval_set=es, rubric_version=rv, held_out=held_out)
    rows = compare_versions(eval_set=es, rubric_version=rv, judge_a=a, judge_b=b, outputs=scope.outputs)
    context.update({"rows": rows, "scope": scope, "es": es, "rv": rv, "a": a, "b": b})
    return render(request, TEMPLATE, context)


@never_cache
@role_required(*STAFF_ROLES)
def version_compare(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _render(request, VersionCompareForm(request.GET or None))


@never_cache
@require_POST
@role_required(Role.LEAD)
def version_compare_held_out(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The held-out split's figures: each request is one more look, recorded with the versions it compared."""
    form = VersionCompareForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        split = split_for(data["eval_set"], data["rubric_version"])
        if split is None:
            form.add_error(None, "There is no held-out split yet: it is fixed when the first example is written.")
        else:
            record_look(split=split, by=request.user, configs=[data["a"], data["b"]], via="page")
            return _render(request, form, held_out=True)
    return _render(request, form)
