"""The judge workbench's comparison page: two judge config versions side by side on the same gold items.

Leads and reviewers may read the development split (annotators get 403: it shows gold and verdicts). The
held-out split's figures are shown only on a lead's explicit request, which is counted as a look
(judging/gold_splits.record_look) before anything is computed. Views stay thin: validate the form, call
version_comparison, render.
"""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.models import Criterion, EvalSet, Role, RubricVersion
from judging import runner
from judging.backends import Misconfigured
from judging.gold_splits import SplitRefused, look_count, part_outputs, record_look, split_for, start_split
from judging.guidance import GuidanceRefused, derive_config
from judging.models import GoldSplit, JudgeConfig, JudgeRun

from .forms import ExampleFormSet, GuidanceForm, VersionCompareForm
from .guidance_editor import EXAMPLE_FIELDS, document, document_examples, edited_guidance, guidance_diff
from .judge_compare import DELTA_REPLICATES
from .suggested_examples import suggest_examples
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


# -- the guidance editor ---------------------------------------------------------------------------------


def _posted_examples(formset) -> list[dict]:
    """The examples as the lead left them (rows marked for removal dropped), from a valid formset."""
    return [
        {k: f.cleaned_data[k] for k in EXAMPLE_FIELDS}
        for f in formset.forms
        if f.cleaned_data and not f.cleaned_data.get("DELETE")
    ]


def _editor(
    request,
    base,
    es,
    rv,
    criterion,
    *,
    instructions: str,
    examples: list[dict],
    form=None,
    formset=None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    split = split_for(es, rv)
    chosen = {int(e["output_id"]) for e in examples}
    suggestions = None
    if split is not None:
        suggestions = suggest_examples(
            eval_set=es,
            rubric_version=rv,
            judge_config=base,
            criterion=criterion,
            outputs=part_outputs(split, GoldSplit.DEVELOPMENT),
        )
    context = {
        "base": base,
        "es": es,
        "rv": rv,
        "criterion": criterion,
        "split": split,
        "form": form or GuidanceForm(initial={"instructions": instructions}),
        "formset": formset or ExampleFormSet(initial=examples),
        "suggestions": [x for x in suggestions.items if x.output.pk not in chosen] if suggestions else [],
        "suggested": suggestions,
        "diff": guidance_diff(base, edited_guidance(base, criterion.key, instructions, examples), "(this edit)"),
        "error": error,
    }
    return render(request, "calibration/guidance_edit.html", context, status=status)


def _editor_objects(judge: int, eval_set: int, rubric_version: int, key: str):
    base = get_object_or_404(JudgeConfig.objects.select_related("guidance_rubric_version"), pk=judge)
    es = get_object_or_404(EvalSet, pk=eval_set)
    rv = get_object_or_404(RubricVersion.objects.select_related("rubric"), pk=rubric_version)
    return base, es, rv, get_object_or_404(Criterion, rubric_version=rv, key=key)


@never_cache
@role_required(Role.LEAD)
def guidance_edit(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int, key: str):
    """Edit one criterion's guidance of a judge version; saving derives a new version (the base never changes)."""
    base, es, rv, criterion = _editor_objects(judge, eval_set, rubric_version, key)
    stored = base.guidance.get(key, {})
    if request.method != "POST":
        examples = document_examples(stored.get("examples", []))
        return _editor(request, base, es, rv, criterion, instructions=stored.get("instructions", ""), examples=examples)
    action = request.POST.get("action", "")
    if action == "start":
        try:
            start_split(eval_set=es, rubric_version=rv, by=request.user)
        except SplitRefused as exc:
            messages.error(request, f"No split: {exc}")
        return redirect(request.path)
    form, formset = GuidanceForm(request.POST), ExampleFormSet(request.POST)
    if not (form.is_valid() and formset.is_valid()):
        examples = document_examples(stored.get("examples", []))
        return _editor(
            request,
            base,
            es,
            rv,
            criterion,
            instructions=stored.get("instructions", ""),
            examples=examples,
            form=form,
            formset=formset,
            status=422,
        )
    instructions, examples = form.cleaned_data["instructions"], _posted_examples(formset)
    if action.startswith("add:"):
        split = split_for(es, rv)
        wanted = action.removeprefix("add:")
        found = suggest_examples(
            eval_set=es,
            rubric_version=rv,
            judge_config=base,
            criterion=criterion,
            outputs=part_outputs(split, GoldSplit.DEVELOPMENT) if split else [],
        )
        examples += [x.as_example() for x in found.items if str(x.output.pk) == wanted]
        return _editor(request, base, es, rv, criterion, instructions=instructions, examples=examples)
    if action != "save":  # "preview": the diff of what is in the form
        return _editor(
            request, base, es, rv, criterion, instructions=instructions, examples=examples, form=form, formset=formset
        )
    guidance = edited_guidance(base, key, instructions, examples)
    try:
        version = derive_config(base=base, guidance=document(rv, guidance), by=request.user, rubric_version=rv)
    except GuidanceRefused as exc:
        return _editor(
            request,
            base,
            es,
            rv,
            criterion,
            instructions=instructions,
            examples=examples,
            form=form,
            formset=formset,
            error=str(exc),
            status=422,
        )
    messages.success(request, f"Saved as {version.name}; {base.name} is unchanged.")
    return redirect(reverse("calibration:workbench_version", args=[version.pk, es.pk, rv.pk]))


# -- a version's workbench: its diff, a re-run on development, the comparison, promotion ---------------------


def _version_objects(judge: int, eval_set: int, rubric_version: int):
    version = get_object_or_404(JudgeConfig.objects.select_related("derived_from"), pk=judge)
    es = get_object_or_404(EvalSet, pk=eval_set)
    rv = get_object_or_404(RubricVersion.objects.select_related("rubric"), pk=rubric_version)
    return version, es, rv


def _version_page(request, version, es, rv, *, error: str = "", status: int = 200) -> HttpResponse:
    split = split_for(es, rv)
    development = part_outputs(split, GoldSplit.DEVELOPMENT) if split else []
    scope = runner.Scope(es, rv, version)
    runs = JudgeRun.objects.filter(eval_set=es, rubric_version=rv, judge_config=version).exclude(split_part="")
    context = {
        "version": version,
        "es": es,
        "rv": rv,
        "split": split,
        "looks": look_count(split) if split else 0,
        "criteria": rv.criteria.order_by("order", "id"),
        "diff": guidance_diff(version.derived_from, version.guidance, version.name),
        "calls": runner.planned_calls(scope, development) if development else None,
        "development": len(development),
        "runs": list(runs.order_by("-pk")[:5]),
        "is_lead": has_role(request.user, Role.LEAD),
        "error": error,
    }
    return render(request, "calibration/workbench_version.html", context, status=status)


@never_cache
@role_required(*STAFF_ROLES)
def workbench_version(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int):
    return _version_page(request, *_version_objects(judge, eval_set, rubric_version))


@never_cache
@require_POST
@role_required(Role.LEAD)
def workbench_run(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int, part: str):
    """Re-run a version on the development split, or promote it: run it on the held-out split, one look."""
    version, es, rv = _version_objects(judge, eval_set, rubric_version)
    split = split_for(es, rv)
    if part not in GoldSplit.PARTS or split is None:
        return _version_page(
            request, version, es, rv, error="Fix the split first (open the guidance editor).", status=422
        )
    try:
        with transaction.atomic():
            if part == GoldSplit.HELD_OUT:
                record_look(split=split, by=request.user, configs=[version], via="page: promote")
            run = runner.start_split_run(runner.Scope(es, rv, version), part=part, started_by=request.user)
    except Misconfigured as exc:
        return _version_page(request, version, es, rv, error=f"Not started: {exc}", status=422)
    return redirect(reverse("judging:run", args=[run.pk]))
