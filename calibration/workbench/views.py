"""The judge workbench's comparison page: two judge config versions side by side on the same gold items.

Leads and reviewers may read the development split (annotators get 403: it shows gold and verdicts). The
held-out split's figures are shown only on a lead's explicit request, which is counted as a look
(judging/gold_splits.record_look) before anything is computed. Views stay thin: validate the form, call
version_comparison, render.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from calibration.stats.judge_compare import DELTA_REPLICATES
from calibration.workbench.forms import ExampleFormSet, GuidanceForm, VersionCompareForm
from calibration.workbench.guidance_editor import (
    EXAMPLE_FIELDS,
    document,
    document_examples,
    edited_guidance,
    guidance_diff,
)
from calibration.workbench.suggested_examples import Suggestions, suggest_examples
from calibration.workbench.version_comparison import compare_versions, comparison_scope
from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, has_role, role_required
from evals.current_workspace import QUERY_PARAMETER
from evals.models import Criterion, EvalSet, Output, Role, RubricVersion, Workspace
from evals.workspaces import in_workspace
from judging import runner
from judging.backends import Misconfigured
from judging.gold_splits import SplitRefused, look_count, part_outputs, record_look, split_for, start_split
from judging.guidance import GuidanceRefused, derive_config
from judging.models import GoldSplit, JudgeConfig, JudgeRun

TEMPLATE = "calibration/version_compare.html"


def _render(request: AuthenticatedHttpRequest, form: VersionCompareForm, *, held_out: bool = False) -> HttpResponse:
    context: dict = {"form": form, "rows": None, "replicates": DELTA_REPLICATES}
    context["is_lead"] = has_role(request.user, request.workspace, Role.LEAD)
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
    # A shared link may carry ?workspace= (evals/current_workspace.py): that alone asks no comparison.
    asked = request.GET.copy()
    asked.pop(QUERY_PARAMETER, None)
    return _render(request, VersionCompareForm(asked or None, workspace=request.workspace))


@never_cache
@require_POST
@role_required(Role.LEAD)
def version_compare_held_out(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The held-out split's figures: each request is one more look, recorded with the versions it compared."""
    form = VersionCompareForm(request.POST, workspace=request.workspace)
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


@dataclass(frozen=True)
class _Target:
    """What the editor edits: one criterion's guidance of a judge version, for one eval set's gold."""

    base: JudgeConfig
    es: EvalSet
    rv: RubricVersion
    criterion: Criterion


def _target(workspace: Workspace, judge: int, eval_set: int, rubric_version: int, key: str) -> _Target:
    """The editor's objects, each from `workspace`: another workspace's id answers as a missing one (404)."""
    rv = get_object_or_404(in_workspace(RubricVersion.objects.select_related("rubric"), workspace), pk=rubric_version)
    judges = JudgeConfig.objects.select_related("guidance_rubric_version")
    return _Target(
        get_object_or_404(in_workspace(judges, workspace), pk=judge),
        get_object_or_404(in_workspace(EvalSet, workspace), pk=eval_set),
        rv,
        get_object_or_404(Criterion, rubric_version=rv, key=key),
    )


def _suggestions(t: _Target, split: GoldSplit | None) -> Suggestions | None:
    """Suggested examples from the development split (none before a split is fixed)."""
    if split is None:
        return None
    development = part_outputs(split, GoldSplit.DEVELOPMENT)
    return suggest_examples(
        eval_set=t.es, rubric_version=t.rv, judge_config=t.base, criterion=t.criterion, outputs=development
    )


def _editor(request, t: _Target, instructions: str, examples: list[dict], **bound) -> HttpResponse:
    """The editor page; `bound`: the posted form and formset, an error from derive_config, the status."""
    split = split_for(t.es, t.rv)
    suggestions = _suggestions(t, split)
    chosen = {int(e["output_id"]) for e in examples}
    proposed = edited_guidance(t.base, t.criterion.key, instructions, examples)
    context = {
        "base": t.base,
        "es": t.es,
        "rv": t.rv,
        "criterion": t.criterion,
        "split": split,
        "form": bound.get("form") or GuidanceForm(initial={"instructions": instructions}),
        "formset": bound.get("formset") or ExampleFormSet(initial=examples),
        "suggestions": [x for x in suggestions.items if x.output.pk not in chosen] if suggestions else [],
        "suggested": suggestions,
        "diff": guidance_diff(t.base, proposed, "(this edit)"),
        "error": bound.get("error", ""),
    }
    return render(request, "calibration/guidance_edit.html", context, status=bound.get("status", 200))


@never_cache
@role_required(Role.LEAD)
def guidance_edit(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int, key: str):
    """Edit one criterion's guidance of a judge version; saving derives a new version (the base never changes)."""
    t = _target(request.workspace, judge, eval_set, rubric_version, key)
    stored = t.base.guidance.get(key, {})
    stored_examples = document_examples(stored.get("examples", []))
    if request.method != "POST":
        return _editor(request, t, stored.get("instructions", ""), stored_examples)
    action = request.POST.get("action", "")
    if action == "start":
        try:
            start_split(eval_set=t.es, rubric_version=t.rv, by=request.user)
        except SplitRefused as exc:
            messages.error(request, f"No split: {exc}")
        return redirect(request.path)
    form, formset = GuidanceForm(request.POST), ExampleFormSet(request.POST)
    if not (form.is_valid() and formset.is_valid()):
        stored_instructions = stored.get("instructions", "")
        return _editor(request, t, stored_instructions, stored_examples, form=form, formset=formset, status=422)
    instructions, examples = form.cleaned_data["instructions"], _posted_examples(formset)
    if action.startswith("add:"):
        found = _suggestions(t, split_for(t.es, t.rv))
        wanted = action.removeprefix("add:")
        examples += [x.as_example() for x in (found.items if found else []) if str(x.output.pk) == wanted]
        return _editor(request, t, instructions, examples)
    if action != "save":  # "preview": the diff of what is in the form
        return _editor(request, t, instructions, examples, form=form, formset=formset)
    missing = _not_in_workspace(request.workspace, key, examples)
    if missing:
        return _editor(request, t, instructions, examples, form=form, formset=formset, error=missing, status=422)
    guidance = document(t.rv, edited_guidance(t.base, key, instructions, examples))
    try:
        version = derive_config(base=t.base, guidance=guidance, by=request.user, rubric_version=t.rv)
    except GuidanceRefused as exc:
        return _editor(request, t, instructions, examples, form=form, formset=formset, error=str(exc), status=422)
    messages.success(request, f"Saved as {version.name}; {t.base.name} is unchanged.")
    return redirect(reverse("calibration:workbench_version", args=[version.pk, t.es.pk, t.rv.pk]))


def _not_in_workspace(workspace: Workspace, key: str, examples: list[dict]) -> str:
    """The refusal of the first example whose output is not this workspace's, in derive_config's words for an
    output that does not exist (judging/guidance.py _check_example, which looks outputs up by id alone): checked
    here first, a missing id and another workspace's read the same."""
    ids = [int(e["output_id"]) for e in examples]
    known = set(in_workspace(Output, workspace).filter(pk__in=ids).values_list("pk", flat=True))
    unknown = ((n, i) for n, i in enumerate(ids) if i not in known)
    return next((f"criteria.{key}.examples[{n}].output_id: there is no output {i}" for n, i in unknown), "")


# -- a version's workbench: its diff, a re-run on development, the comparison, promotion ---------------------


def _version_objects(workspace: Workspace, judge: int, eval_set: int, rubric_version: int):
    """A version's workbench objects, each from `workspace` (another workspace's id: 404, as a missing one)."""
    versions = JudgeConfig.objects.select_related("derived_from")
    version = get_object_or_404(in_workspace(versions, workspace), pk=judge)
    es = get_object_or_404(in_workspace(EvalSet, workspace), pk=eval_set)
    rv = get_object_or_404(in_workspace(RubricVersion.objects.select_related("rubric"), workspace), pk=rubric_version)
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
        "is_lead": has_role(request.user, request.workspace, Role.LEAD),
        "error": error,
    }
    return render(request, "calibration/workbench_version.html", context, status=status)


@never_cache
@role_required(*STAFF_ROLES)
def workbench_version(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int):
    return _version_page(request, *_version_objects(request.workspace, judge, eval_set, rubric_version))


@never_cache
@require_POST
@role_required(Role.LEAD)
def workbench_run(request: AuthenticatedHttpRequest, judge: int, eval_set: int, rubric_version: int, part: str):
    """Re-run a version on the development split, or promote it: run it on the held-out split, one look."""
    version, es, rv = _version_objects(request.workspace, judge, eval_set, rubric_version)
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
    what = "the development split" if part == GoldSplit.DEVELOPMENT else "the held-out split (one look counted)"
    messages.success(request, f"Run {run.pk} of {version.name} on {what} started.")
    # Back to the workbench, where the run's progress panel (the run page's own, over htmx) follows it.
    return redirect(reverse("calibration:workbench_version", args=[version.pk, es.pk, rv.pk]))
