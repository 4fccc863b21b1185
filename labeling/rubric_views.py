"""Rubric versions in the browser: a version with its diff against the one before, and (leads) a new
version made from it. Saving, the hash and immutability are evals.rubric_edit's (the importer's)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from evals import rubric_edit
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import EvalSet, GoldPolicy, Role, RubricVersion
from evals.problems import ImportFailed

from . import queue as q
from .forms import CriterionFormSet, RubricVersionForm


def _version(pk: int) -> RubricVersion:
    return get_object_or_404(RubricVersion.objects.select_related("rubric", "approved_by"), pk=pk)


@never_cache
@require_http_methods(["GET"])
@role_required(*STAFF_ROLES)
def rubric_version_page(request: AuthenticatedHttpRequest, rubric_version: int) -> HttpResponse:
    rv = _version(rubric_version)
    previous = rubric_edit.previous_version(rv)
    context = {
        "rv": rv,
        "previous": previous,
        "diff": rubric_edit.diff_lines(previous, rv),
        "criteria": rv.criteria.order_by("order", "id"),
        "queues": list(q.open_queues().order_by("eval_set__name")),
        "eval_sets": EvalSet.objects.order_by("name"),
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
    }
    return render(request, "labeling/rubric_version.html", context)


@never_cache
@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def rubric_edit_page(request: AuthenticatedHttpRequest, rubric_version: int) -> HttpResponse:
    base = _version(rubric_version)
    if request.method == "GET":
        criteria = [{**c.as_dict(), "order": i + 1} for i, c in enumerate(base.criteria.order_by("order", "id"))]
        form = RubricVersionForm(
            initial={"version": rubric_edit.suggested_version(base), "instruction": base.instruction}
        )
        return render(
            request,
            "labeling/rubric_edit.html",
            {"base": base, "form": form, "formset": CriterionFormSet(initial=criteria)},
        )
    form, formset = RubricVersionForm(request.POST), CriterionFormSet(request.POST)
    problems: list[str] = []
    if form.is_valid() and formset.is_valid():
        kept = [f.cleaned_data for f in formset.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        kept.sort(key=lambda c: c["order"])
        criteria = [
            {**{k: c[k] for k in ("key", "definition", "pass_example", "fail_example")},
             "gold_policy": c.get("gold_policy") or GoldPolicy.MAJORITY.value}
            for c in kept
        ]  # fmt: skip
        try:
            new = rubric_edit.save_new_version(
                base=base,
                version=form.cleaned_data["version"],
                instruction=form.cleaned_data["instruction"],
                criteria=criteria,
            )
        except ImportFailed as exc:
            problems = [p.message if not p.field else f"{p.field}: {p.message}" for p in exc.problems]
        else:
            messages.success(request, f"Saved {new.ref} as a draft. Approve it, then move a queue to it.")
            return redirect("labeling:rubric_version", new.pk)
    context = {"base": base, "form": form, "formset": formset, "problems": problems}
    return render(request, "labeling/rubric_edit.html", context, status=422)
