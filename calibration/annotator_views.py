"""Each annotator's agreement with gold and with the others: leads and reviewers only (annotators label blind,
and one annotator's figures are never shown to another)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.cache import never_cache

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, role_required
from evals.models import EvalSet, RubricVersion, User

from . import frames as data
from .annotator_agreement import MIN_ITEMS_TO_FLAG, annotator_agreement


@never_cache
@role_required(*STAFF_ROLES)
def annotator_agreement_page(request: AuthenticatedHttpRequest, eval_set: int, rubric_version: int) -> HttpResponse:
    es = get_object_or_404(EvalSet, pk=eval_set)
    rv = get_object_or_404(RubricVersion.objects.select_related("rubric"), pk=rubric_version)
    scope, criteria = data.Scope(es, rv), data.criteria_of(rv)
    rows = annotator_agreement(
        data.load_labels(scope),
        data.load_adjudicated(scope, with_decider=True),
        {c.pk: c.gold_policy for c in criteria},
    )
    names = dict(User.objects.filter(pk__in={int(r.annotator) for r in rows}).values_list("pk", "username"))
    sections = [(c, [(names[int(r.annotator)], r) for r in rows if r.criterion == c.pk]) for c in criteria]
    flagged = [(c, name, r) for c, named in sections for name, r in named if r.flagged]
    context = {"es": es, "rv": rv, "sections": sections, "flagged": flagged, "min_items": MIN_ITEMS_TO_FLAG}
    return render(request, "calibration/annotators.html", context)
