"""Lead-only upload page: the importers of the management commands, with the same messages.

One page, three cards (rubric, cases, labels); each card posts its own form and
is the swap target of its htmx request (`upload.html#upload-card`). Without
htmx the whole page comes back with the card's result in place.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods

from .access import role_required
from .io import ImportFailed, Source, import_cases, import_labels, import_rubric
from .models import EvalSet, Role, RubricVersion


def upload_limit_mb() -> int:
    return settings.ICEWATER_UPLOAD_MAX_BYTES // (1024 * 1024)


class UploadLimit(FileUploadHandler):
    """Drops a file as soon as the request's files together stream past settings.ICEWATER_UPLOAD_MAX_BYTES.

    The files of one request count together, so extra file fields cannot add up to more than one allowed
    file (Django refuses more than DATA_UPLOAD_MAX_NUMBER_FILES of them anyway). Django reads the rest of a
    dropped file and throws it away (SkipFile), so the browser still gets the answer, and nothing of it is
    kept on disk.
    """

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.refused: dict[str, str] = {}  # form field name -> file name
        self.received = 0  # bytes of the request's files so far

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > settings.ICEWATER_UPLOAD_MAX_BYTES:
            self.refused[self.field_name] = self.file_name
            raise SkipFile
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler stores the file


class UploadForm(forms.Form):
    """A form with a file that UploadLimit may have dropped; the view says which (`too_large`)."""

    def __init__(self, *args, too_large: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.too_large = too_large

    def clean_file(self):
        if self.too_large:
            raise forms.ValidationError(
                f"{self.too_large} is larger than {upload_limit_mb()} MB, the most this page imports (a bigger "
                "file would outlast the web request). Import it from the command line, which has no such limit. "
                "Nothing was imported.",
                code="too_large",
            )
        if not self.cleaned_data.get("file"):
            raise forms.ValidationError(self.fields["file"].error_messages["required"], code="required")
        return self.cleaned_data["file"]


def file_field(label: str, help_text: str) -> forms.FileField:
    # Not required for Django (clean_file decides, so that a dropped file gets its own message), required
    # for the browser.
    return forms.FileField(
        label=label, help_text=help_text, required=False, widget=forms.FileInput(attrs={"required": True})
    )


class RubricUploadForm(UploadForm):
    file = file_field("Rubric file", "JSON or YAML: name, version, instruction, criteria.")


class CasesUploadForm(UploadForm):
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
    file = file_field("Cases file", "JSONL, CSV, ADK .evalset.json or .evalset_result.json, Inspect AI .eval or .json.")


class RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return obj.ref


class LabelsUploadForm(UploadForm):
    eval_set = forms.ModelChoiceField(label="Eval set", queryset=EvalSet.objects.order_by("name"), to_field_name="name")
    rubric = RubricVersionChoice(label="Rubric version", queryset=RubricVersion.objects.select_related("rubric"))
    agent_version = forms.CharField(
        label="Default agent version", max_length=200, initial="default", help_text="For lines without agent_version."
    )
    file = file_field("Labels file", "JSONL, CSV or a Label Studio JSON export.")


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
    result = {"ok": True, "messages": str(report).splitlines(), "counts": report.counts}
    # What the next step links need (upload.html): the eval set and rubric version the import was about.
    if kind == "cases":
        result["eval_set"] = EvalSet.objects.filter(name=data["eval_set"]).first()
    elif kind == "labels":
        result["eval_set"], result["rubric_version"] = data["eval_set"], data["rubric"]
    return result


def _card(kind: str, form: forms.Form | None = None, result: dict | None = None) -> dict:
    title, form_class = CARDS[kind]
    return {"kind": kind, "title": title, "form": form or form_class(prefix=kind), "result": result}


# Upload handlers must be in place before anything reads the body, and CsrfViewMiddleware reads it: so the view
# is exempt from the middleware and checks the token itself with csrf_protect once the handler is in place
# (the pattern of Django's "Modifying upload handlers on the fly").
@csrf_exempt
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    limit = UploadLimit(request)
    request.upload_handlers.insert(0, limit)
    return _upload(request, limit)


@csrf_protect
def _upload(request: HttpRequest, limit: UploadLimit) -> HttpResponse:
    cards = {kind: _card(kind) for kind in CARDS}
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in CARDS:
            return HttpResponseBadRequest("unknown kind of upload")
        too_large = limit.refused.get(f"{kind}-file", "")
        form = CARDS[kind][1](request.POST, request.FILES, prefix=kind, too_large=too_large)
        result = _import(kind, form.cleaned_data) if form.is_valid() else None
        cards[kind] = _card(kind, form, result)
        if request.htmx:
            return render(request, "labeling/upload.html#upload-card", {"card": cards[kind]})
    context = {"cards": cards.values(), "eval_sets": EvalSet.objects.order_by("name"), "limit_mb": upload_limit_mb()}
    return render(request, "labeling/upload.html", context)
