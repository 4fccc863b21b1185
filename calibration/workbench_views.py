"""The judge workbench's comparison page: two judge config versions side by side on the same gold items.

Leads and reviewers may read it (annotators get 403: it shows gold and verdicts). Views stay thin: validate
the form, call version_comparison.compare_versions, render.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, role_required

from .forms import VersionCompareForm
from .judge_compare import DELTA_REPLICATES
from .version_comparison import compare_versions


@never_cache
@role_required(*STAFF_ROLES)
def version_compare(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = VersionCompareForm(request.GET or None)
    context: dict = {"form": form, "rows": None, "replicates": DELTA_REPLICATES}
    if form.is_valid():
        data = form.cleaned_data
        context["rows"] = compare_versions(
            eval_set=data["eval_set"], rubric_version=data["rubric_version"], judge_a=data["a"], judge_b=data["b"]
        )
        context.update({"es": data["eval_set"], "rv": data["rubric_version"], "a": data["a"], "b": data["b"]})
    status = 422 if form.is_bound and not form.is_valid() else 200
    return render(request, "calibration/version_compare.html", context, status=status)
