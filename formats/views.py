"""Lead-only upload page: the importers of the management commands, with the same messages.

One page, four cards (rubric, cases, labels, verdicts); each card posts its own form, and its htmx request
swaps only the card's result region (`upload.html#upload-result`), which sits above the form where
it is seen, so the form and the file chosen in it stay. Without htmx the whole page comes back with
the card's result in place. A file above ICEWATER_UPLOAD_INLINE_MB is imported by a Celery worker
(formats/import_jobs.py) and the region polls its progress until it ends.
"""

from __future__ import annotations

from typing import BinaryIO, cast

from django import forms
from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseStopPolling

from evals.access import AuthenticatedHttpRequest, role_required
from evals.models import EvalSet, Role, RubricVersion, Workspace
from evals.workspaces import in_workspace
from formats.readers import Source
from judging.models import JudgeConfig

from . import import_jobs
from .inspect_scores import ScoreMapping
from .models import ImportJob
from .tasks import run_import_job


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
            self.refused[self.field_name] = self.file_name or ""  # set by new_file before any chunk
            raise SkipFile
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler stores the file


class UploadForm(forms.Form):
    """A form with a file that UploadLimit may have dropped; the view says which (`too_large`).

    Its eval set and rubric version choices are `workspace`'s only: another workspace's name is an invalid
    choice, said as for a name that does not exist."""

    OPTIONAL_GROUP: tuple[str, ...] = ()  # fields the page folds away (see VerdictsUploadForm)

    def __init__(self, *args, workspace: Workspace, too_large: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.too_large = too_large
        if "eval_set" in self.fields and isinstance(self.fields["eval_set"], forms.ModelChoiceField):
            self.fields["eval_set"].queryset = in_workspace(EvalSet, workspace).order_by("name")
        if "rubric" in self.fields:
            rubric = cast(forms.ModelChoiceField, self.fields["rubric"])
            rubric.queryset = in_workspace(RubricVersion, workspace).select_related("rubric")

    def clean_file(self):
        if self.too_large:
            raise forms.ValidationError(
                f"{self.too_large} is larger than {upload_limit_mb()} MB, the most this page imports. Import it "
                "from the command line, which has no such limit. Nothing was imported.",
                code="too_large",
            )
        if not self.cleaned_data.get("file"):
            raise forms.ValidationError(self.fields["file"].error_messages["required"], code="required")
        return self.cleaned_data["file"]

    def options(self) -> dict:
        """The fields other than the file, as names (what an import job keeps)."""
        return {}


def file_field(label: str, help_text: str) -> forms.FileField:
    # Not required for Django (clean_file decides, so that a dropped file gets its own message), required
    # for the browser.
    return forms.FileField(
        label=label, help_text=help_text, required=False, widget=forms.FileInput(attrs={"required": True})
    )


def agent_version_field(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(label=label, max_length=200, required=False, help_text=help_text)


class RubricUploadForm(UploadForm):
    file = file_field("Rubric file", "JSON or YAML: name, version, instruction, criteria.")


class CasesUploadForm(UploadForm):
    eval_set = forms.CharField(
        label="Eval set",
        max_length=200,
        help_text="An existing eval set, or a new name to create one.",
        widget=forms.TextInput(attrs={"list": "eval-set-names"}),
    )
    agent_version = agent_version_field(
        "Default agent version",
        "For lines without agent_version and for ADK result files (empty: default); for an Inspect AI "
        "log's outputs (empty: the log's model name).",
    )
    file = file_field("Cases file", "JSONL, CSV, ADK .evalset.json or .evalset_result.json, Inspect AI .eval or .json.")

    def options(self) -> dict:
        return {"eval_set": self.cleaned_data["eval_set"], "agent_version": self.cleaned_data["agent_version"]}


class RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return obj.ref


class LabelsUploadForm(UploadForm):
    eval_set = forms.ModelChoiceField(label="Eval set", queryset=EvalSet.objects.none(), to_field_name="name")
    rubric = RubricVersionChoice(label="Rubric version", queryset=RubricVersion.objects.none())
    # As on the cases card: empty by default, and empty means "default".
    agent_version = agent_version_field(
        "Default agent version",
        "For lines without agent_version (empty: default).",
    )
    file = file_field("Labels file", "JSONL, CSV or a Label Studio JSON export.")

    def options(self) -> dict:
        data = self.cleaned_data
        return {"eval_set": data["eval_set"].name, "rubric": data["rubric"].ref, "agent_version": data["agent_version"]}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class VerdictsUploadForm(UploadForm):
    """Verdicts judged elsewhere, into an imported judge config: the provenance rule of import_verdicts
    (verdicts.imported_only, docs/security.md) refuses a config that runs, before the file is read."""

    eval_set = forms.ModelChoiceField(label="Eval set", queryset=EvalSet.objects.none(), to_field_name="name")
    rubric = RubricVersionChoice(label="Rubric version", queryset=RubricVersion.objects.none())
    judge = forms.CharField(
        label="Judge config",
        max_length=200,
        help_text="An imported judge config, or a new name to create one (backend imported).",
        widget=forms.TextInput(attrs={"list": "imported-judge-names"}),
    )
    agent_version = agent_version_field(
        "Agent version",
        "For records without agent_version when a case has outputs of several versions; for an "
        "Inspect AI log's outputs (empty: the log's model name).",
    )
    new_run = forms.CharField(
        label="New run",
        max_length=200,
        required=False,
        help_text="Empty: a verdict already there with other content is an error. A name: the file becomes a run "
        "of that name, superseding earlier verdicts item by item.",
    )
    file = file_field(
        "Verdicts file", "JSONL or CSV (as export_data writes), ADK .evalset_result.json, Inspect AI .eval or .json."
    )
    scorers = forms.CharField(
        label="Inspect AI scorers",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One NAME=CRITERION a line (empty: each scorer grades the criterion of its own name).",
    )
    scores = forms.CharField(
        label="Inspect AI score values",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One VALUE=OUTCOME a line, beside C=PASS and I=FAIL (any other value is an ERROR verdict).",
    )
    skip = forms.CharField(
        label="Inspect AI scorers to leave out", required=False, help_text="Scorer names, separated by commas."
    )

    # Only an Inspect AI log needs these: the page folds them away unless one is filled in or refused.
    OPTIONAL_GROUP = ("scorers", "scores", "skip")
    OPTIONAL_GROUP_TITLE = "Inspect AI log options: scorers and score values"

    @property
    def optional_group_used(self) -> bool:
        return any(self[name].value() or self[name].errors for name in self.OPTIONAL_GROUP)

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        data["skip"] = [name.strip() for name in data.get("skip", "").split(",") if name.strip()]
        try:
            ScoreMapping.parse(
                _lines(data.get("scorers", "")), _lines(data.get("scores", "")), data["skip"], via_api=True
            )
        except ValueError as exc:
            self.add_error("scorers", str(exc))
        return data

    def options(self) -> dict:
        data = self.cleaned_data
        return {
            "eval_set": data["eval_set"].name,
            "rubric": data["rubric"].ref,
            "judge": data["judge"],
            "agent_version": data["agent_version"],
            "new_run": data["new_run"],
            "scorers": _lines(data["scorers"]),
            "scores": _lines(data["scores"]),
            "skip": data["skip"],
        }


CARDS = {
    "rubric": ("Rubric", RubricUploadForm),
    "cases": ("Cases and outputs", CasesUploadForm),
    "labels": ("Labels and gold labels", LabelsUploadForm),
    "verdicts": ("Judge verdicts", VerdictsUploadForm),
}


def _card(
    kind: str,
    workspace: Workspace,
    form: forms.Form | None = None,
    result: dict | None = None,
    job: ImportJob | None = None,
) -> dict:
    title, form_class = CARDS[kind]
    read = import_jobs.bytes_read(job) if job else 0
    return {
        "kind": kind,
        "title": title,
        "form": form or form_class(prefix=kind, workspace=workspace),
        "result": result,
        "job": job,
        "read": read,
    }


def _start_job(*, kind: str, file_name: str, stream: BinaryIO, options: dict, user, workspace: Workspace) -> ImportJob:
    """Keep the file in a job of `workspace` and queue it for a worker (once the row is committed)."""
    stream.seek(0)
    content = stream.read()
    job = ImportJob.objects.create(
        workspace=workspace,
        kind=kind,
        file_name=file_name,
        content=content,
        size=len(content),
        options=options,
        created_by=user,
    )
    transaction.on_commit(lambda: run_import_job.delay(job.pk))
    return job


def _submit(request: AuthenticatedHttpRequest, kind: str, form: UploadForm) -> dict:
    """Import a valid form's file now, or queue it as a job when it is large (import_jobs)."""
    upload = form.cleaned_data["file"]
    workspace = request.workspace
    if upload.size > settings.ICEWATER_UPLOAD_INLINE_BYTES:
        job = _start_job(
            kind=kind,
            file_name=upload.name,
            stream=upload.file,
            options=form.options(),
            user=request.user,
            workspace=workspace,
        )
        return _card(kind, workspace, form, job=job)
    upload.seek(0)
    source = Source(name=upload.name, stream=upload.file)
    return _card(
        kind,
        workspace,
        form,
        import_jobs.import_file(kind=kind, source=source, workspace=workspace, options=form.options()),
    )


def _page(request: AuthenticatedHttpRequest, cards: dict) -> HttpResponse:
    workspace = request.workspace
    imported = in_workspace(JudgeConfig, workspace).filter(backend=JudgeConfig.Backend.IMPORTED)
    context = {
        "cards": cards.values(),
        "eval_sets": in_workspace(EvalSet, workspace).order_by("name"),
        "imported_judges": imported.order_by("name"),
        "limit_mb": upload_limit_mb(),
        "inline_mb": settings.ICEWATER_UPLOAD_INLINE_BYTES / (1024 * 1024),
    }
    return render(request, "formats/upload.html", context)


# Upload handlers must be in place before anything reads the body, and CsrfViewMiddleware reads it: so the view
# is exempt from the middleware and checks the token itself with csrf_protect once the handler is in place
# (the pattern of Django's "Modifying upload handlers on the fly").
@csrf_exempt
@role_required(Role.LEAD)
@require_http_methods(["GET", "POST"])
def upload(request: AuthenticatedHttpRequest) -> HttpResponse:
    limit = UploadLimit(request)
    request.upload_handlers.insert(0, limit)
    return _upload(request, limit)


@csrf_protect
def _upload(request: AuthenticatedHttpRequest, limit: UploadLimit) -> HttpResponse:
    cards = {kind: _card(kind, request.workspace) for kind in CARDS}
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in CARDS:
            return HttpResponseBadRequest("unknown kind of upload")
        too_large = limit.refused.get(f"{kind}-file", "")
        form = CARDS[kind][1](
            request.POST, request.FILES, prefix=kind, too_large=too_large, workspace=request.workspace
        )
        cards[kind] = _submit(request, kind, form) if form.is_valid() else _card(kind, request.workspace, form)
        if request.htmx:
            # Only the result region: the form, and the file chosen in it, stay as they are.
            return render(request, "formats/upload.html#upload-result", {"card": cards[kind]})
    return _page(request, cards)


@role_required(Role.LEAD)
@require_GET
def import_job(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """How far a background import has got: the card's result region (htmx polls it), or the whole page."""
    job = get_object_or_404(in_workspace(ImportJob, request.workspace), pk=pk)  # another workspace's: 404
    card = _card(job.kind, request.workspace, job=job)
    if not request.htmx:
        return _page(request, {kind: card if kind == job.kind else _card(kind, request.workspace) for kind in CARDS})
    response = render(request, "formats/upload.html#upload-result", {"card": card})
    if job.finished:
        return HttpResponseStopPolling(response.content, content_type=response["Content-Type"])
    return response
