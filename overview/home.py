"""Home: an inbox per role. An annotator's queues (labeling.my_queues), what waits for a reviewer
(overview.review_inbox), and what waits for a lead's decision (overview.lead_inbox: rubric versions,
queues, judge runs, gating marks and gates).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from evals.access import (
    ALL_ROLES,
    STAFF_ROLES,
    AuthenticatedHttpRequest,
    gives_blind_labels,
    has_role,
    role_required,
)
from evals.models import EvalSet, Role, RubricVersion
from labeling.my_queues import my_queues
from labeling.queue import open_queues
from overview.lead_inbox import lead_inbox
from overview.review_inbox import adjudications_waiting


@never_cache
@role_required(*ALL_ROLES)
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Each role's next action first: an annotator's queues; a reviewer's adjudications; a lead's decisions
    and adjudications. Staff also see the open queues, eval sets and rubric versions."""
    user = request.user
    workspace = request.workspace
    staff, lead = has_role(user, workspace, *STAFF_ROLES), has_role(user, workspace, Role.LEAD)
    context: dict[str, Any] = {"staff": staff, "is_lead": lead}
    if gives_blind_labels(user, workspace):  # only annotators label (the blind rule per person, docs/labeling.md)
        context["my_queues"] = my_queues(user)
    if staff:
        context["adjudications"] = adjudications_waiting(user)
        context["eval_sets"] = EvalSet.objects.annotate(n_cases=Count("cases", distinct=True)).order_by("name")
        context["rubric_versions"] = RubricVersion.objects.select_related("rubric").annotate(
            n_criteria=Count("criteria")
        )
        context["queues"] = open_queues()
    if lead:
        context["decisions"] = lead_inbox()
    return render(request, "overview/home.html", context)
