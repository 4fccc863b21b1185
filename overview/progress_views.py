"""The labeling progress page: how far labeling has come per eval set and rubric version (staff only)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from calibration.stats.metrics import HUMAN_MIN_KAPPA, MIN_N
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, role_required
from labeling.labeling_pages import pick_scope
from labeling.my_queues import versions_with_work

from .labeling_progress import progress as labeling_progress


@require_GET
@role_required(*STAFF_ROLES)
def progress_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Labeling progress of one eval set and rubric version, with the human-human agreement so far."""
    scope = pick_scope(request)
    context: dict[str, Any] = {"scope": scope, "progress": None, "human_min_kappa": HUMAN_MIN_KAPPA, "min_n": MIN_N}
    if scope.eval_set and scope.rubric_version:
        context["progress"] = labeling_progress(scope.eval_set, scope.rubric_version)
        context["versions"] = versions_with_work(scope.eval_set, also=scope.rubric_version)
    return render(request, "overview/progress.html", context)
