from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .access import ALL_ROLES, role_required
from .models import EvalSet, RubricVersion


@role_required(*ALL_ROLES)
def home(request: HttpRequest) -> HttpResponse:
    eval_sets = EvalSet.objects.annotate(n_cases=Count("cases", distinct=True)).order_by("name")
    rubric_versions = RubricVersion.objects.select_related("rubric").annotate(n_criteria=Count("criteria"))
    return render(request, "labeling/home.html", {"eval_sets": eval_sets, "rubric_versions": rubric_versions})


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for scripts and load balancers: no login, no data."""
    return HttpResponse("ok", content_type="text/plain")
