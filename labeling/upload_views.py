"""Lead-only upload page: the importers of the management commands, with the same messages.

One page, three cards (rubric, cases, labels); each card posts its own form and
is the swap target of its htmx request (`upload.html#upload-card`). Without
htmx the whole page comes back with the card's result in place.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from .access import role_required
from .io import ImportFailed, Source, import_cases, import_labels, import_rubric
from .models import EvalSet, Role, RubricVersion


class RubricUploadForm(forms.Form):
    file = forms.FileField(label="Rubric file", help_text="JSON or YAML: name, version, instruction, criteria.")


class CasesUploadForm(forms.Form):
    eval_set = forms.CharField(
        label="Eval set",
        max_length=200,
        help_text="An existing eval set, or a new name to create one.",
        widget=forms.TextInput(attrs={"list": "eval-set-names"}),
    )
    agent_version = forms.CharField(
        label="Default agent version",
        max_length=200,
        required=False,
        help_text="For lines without agent_version and for ADK result files (empty: default); for an Inspect AI "
        "log's outputs (empty: the log's model name).",
    )
    file = forms.FileField(
        label="Cases file",
        help_text="JSONL, CSV, ADK .evalset.json or .evalset_result.json, Inspect AI .eval or .json.",
    )


class RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return obj.ref


class LabelsUploadForm(forms.Form):
    eval_set = forms.ModelChoiceField(label="Eval set", queryset=EvalSet.objects.order_by("name"), to_field_name="name")
    rubric = RubricVersionChoice(label="Rubric version", queryset=RubricVersion.objects.select_related("rubric"))
    agent_version = forms.CharField(
        label="Default agent version", max_length=200, initial="default", help_text="For lines without agent_version."
    )
    file = forms.FileField(label="Labels file", help_text="JSONL, CSV or a Label Studio JSON export.")


CARDS = {
    "rubric": ("Rubric", RubricUploadForm),
    "cases": ("Cases and outputs", CasesUploadForm),
    "labels": ("Labels and gold labels", LabelsUploadForm),
}


def _import(kind: str, data: dict) -> dict:
    upload = data["file"]
    upload.seek(0)
    source = Source(name=upload.name, stream=upload.file)
    try:
        if kind == "rubric":
            report = import_rubric(source=source)
        elif kind == "cases":
            report = import_cases(
                source=source, eval_set_name=data["eval_set"], default_agent_version=data["agent_version"] or None
            )
        else:
            report = import_labels(
                source=source,
                eval_set_name=data["eval_set"].name,
                rubric_ref=data["rubric"].ref,
                default_agent_version=data["agent_version"],
            )
    except ImportFailed as exc:
        return {"ok": False, "messages": str(exc).splitlines()}
    return {"ok": True, "messages": str(report).splitlines(), "counts": report.counts}


def _card(kind: str, form: forms.Form | None = None, result: dict | None = None) -> dict:
    title, form_class = CARDS[kind]
    return {"kind": kind, "title": title, "form": form or form_class(prefix=kind), "result": result}


@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    cards = {kind: _card(kind) for kind in CARDS}
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in CARDS:
            return HttpResponseBadRequest("unknown kind of upload")
        form = CARDS[kind][1](request.POST, request.FILES, prefix=kind)
        result = _import(kind, form.cleaned_data) if form.is_valid() else None
        cards[kind] = _card(kind, form, result)
        if request.htmx:
            return render(request, "labeling/upload.html#upload-card", {"card": cards[kind]})
    return render(
        request, "labeling/upload.html", {"cards": cards.values(), "eval_sets": EvalSet.objects.order_by("name")}
    )
