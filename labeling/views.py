"""Labeling, adjudication, queue and progress pages. Thin: fetch through guards, validate, call one domain function.

htmx requests get the partial named after their swap target ("labeling/annotate.html#criterion");
every page also works as a plain form post with a redirect, so most tests need no browser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evals.access import STAFF_ROLES, AuthenticatedHttpRequest, labeler_required, role_required
from evals.models import EvalSet, Role, Workspace
from evals.naming import output_names
from evals.transcript import Transcript
from evals.workspaces import in_workspace

from . import adjudicate as adj
from . import annotate as ann
from . import queue as q
from .forms import AdjudicationForm, LabelForm, QueueMoveForm, SubmitForm
from .guards import adjudicable_item, own_annotation
from .labeling_pages import adjudication_context, annotation_context, pick_scope
from .models import Annotation
from .my_queues import my_queues

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    from .guards import QueueVersion


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for scripts and load balancers: no login, no data."""
    return HttpResponse("ok", content_type="text/plain")


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page says; the file itself is a static file (whitenoise)."""
    return redirect(static("img/favicon.ico"))


# --- Queue -------------------------------------------------------------------------------------


@require_POST
@labeler_required
def next_output(request: AuthenticatedHttpRequest, eval_set_id: int) -> HttpResponse:
    queue = q.current_queue(eval_set_id, request.workspace)  # another workspace's eval set: as if it had none
    if queue is None:
        messages.error(request, "This eval set has no open labeling queue. A lead opens it on the Queues page.")
        return redirect("home")
    claim = q.claim_next(user=request.user, queue=queue)
    if claim is None:
        messages.success(request, f"Nothing left for you in {queue.eval_set.name}. Thank you!")
        return redirect("home")
    return redirect("labeling:annotate", pk=claim.annotation.pk)


@never_cache
@require_GET
@role_required(Role.LEAD)
def queues(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, "labeling/queues.html", _queues_context(request.workspace))


@require_POST
@role_required(Role.LEAD)
def queue_move(request: AuthenticatedHttpRequest, eval_set_id: int) -> HttpResponse:
    eval_set = get_object_or_404(in_workspace(EvalSet, request.workspace), pk=eval_set_id)
    form = QueueMoveForm(request.POST, versions=q.movable_versions(request.workspace))
    if form.is_valid():
        try:
            queue = q.move_queue(
                eval_set=eval_set,
                rubric_version=form.cleaned_data["rubric_version"],
                by=request.user,
                reason=form.cleaned_data["reason"],
            )
        except q.QueueError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{eval_set.name} is now labeled under {queue.rubric_version.ref}.")
            return redirect("labeling:queues")
    return render(request, "labeling/queues.html", _queues_context(request.workspace, eval_set.pk, form), status=422)


def _queues_context(
    workspace: Workspace, failed_eval_set_id: int | None = None, failed_form: QueueMoveForm | None = None
) -> dict:
    versions = q.movable_versions(workspace)
    current = {queue.eval_set_id: queue for queue in q.open_queues(workspace)}
    rows = []
    for eval_set in in_workspace(EvalSet, workspace).annotate(n_outputs=Count("cases__outputs")).order_by("name"):
        failed = eval_set.pk == failed_eval_set_id
        form = failed_form if failed else QueueMoveForm(versions=versions)
        rows.append({"eval_set": eval_set, "queue": current.get(eval_set.pk), "form": form})
    return {"rows": rows}


# --- Labeling ----------------------------------------------------------------------------------


@never_cache
@require_GET
@labeler_required
def annotate(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    annotation = own_annotation(request.user, request.workspace, pk)
    context = annotation_context(request, annotation, correcting=request.GET.get("correct") == "1")
    return render(request, "labeling/annotate.html", context)


@never_cache
@require_POST
@labeler_required
def save_label(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    try:
        with transaction.atomic():
            # Everything is read once, under the annotation's row lock: the annotation (a submit, a lapsed hold or
            # a moved queue cannot come in between), then its criteria with their current labels, which the save
            # then updates without reading them again. Each query is a round trip that waits for a CPU on a busy
            # server: reading the annotation and labels outside the lock and again inside cost a hundred
            # annotators at once two of a save's eleven (docs/labeling.md, Load). The form's checks (the quote
            # against the transcript) are in the transaction too: on SQLite that holds the write lock for them,
            # a millisecond for a usual transcript.
            annotation = own_annotation(request.user, request.workspace, pk, for_update=True)
            correcting = annotation.status == Annotation.Status.SUBMITTED
            context = annotation_context(request, annotation, correcting=correcting, partial=True)
            form = LabelForm(
                request.POST, criteria=context["criteria_by_key"], transcript=Transcript.of(annotation.output)
            )
            saved = ann.save_from_page(form=form, annotation=annotation, states_by_key=context["states_by_key"])
    except Http404:
        if not request.htmx:
            raise
        # Said in words on the criterion (htmx shows no error page): most often a lapsed hold.
        return HttpResponse(LOST_DRAFT, status=404, content_type="text/plain")
    if request.htmx:
        return _criterion_swap(request, context, saved, form)
    return _page_after_save(request, annotation, saved)


LOST_DRAFT = (
    "This case is no longer reserved for you: your reservation lapsed and someone else took the slot. "
    "Nothing was saved. Go to Home and press Next."
)


def _criterion_swap(request: HttpRequest, context: dict, saved: ann.CriterionSave, form: LabelForm) -> HttpResponse:
    """The htmx answer to a save: the criterion's partial, saved or with the refusal beside what was typed."""
    state, status = saved.state, saved.status
    if state is None:  # not even the criterion is known: no partial to swap, a message to show
        message = form.errors.get("criterion", ["Nothing was saved."])[0]
        return HttpResponse(message, status=400, content_type="text/plain")
    if state.stale:
        # The form is now made on the current revision, so pressing its button again confirms the change.
        context.update(submitted=True, correcting=True, locked=False)
    context["item"] = state
    response = render(request, "labeling/annotate.html#criterion", context, status=status)
    if status == 200 and context["annotation"].status == Annotation.Status.DRAFT:
        # The header says until when the case is held; a save may have moved that (out of band).
        context["oob"] = True
        response.content += render_to_string("labeling/annotate.html#reservation", context, request).encode()
    return response


def _page_after_save(
    request: AuthenticatedHttpRequest, annotation: WithAnnotations[Annotation, QueueVersion], saved: ann.CriterionSave
) -> HttpResponse:
    """A save posted without htmx: back to the page, with the refusal said as a message."""
    state, status = saved.state, saved.status
    if state is not None and state.stale:
        # The page again, with the current answer and the confirm button beside what was typed.
        page = annotation_context(request, annotation, correcting=True)
        page["states"] = [state if s.criterion.pk == state.criterion.pk else s for s in page["states"]]
        return render(request, "labeling/annotate.html", page, status=status)
    if status != 200:
        messages.error(request, state.error if state else "Nothing was saved.")
    return redirect("labeling:annotate", pk=annotation.pk)


@never_cache
@require_POST
@labeler_required
def submit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    form = SubmitForm(request.POST)
    try:
        with transaction.atomic():
            annotation = own_annotation(request.user, request.workspace, pk, for_update=True)
            if not form.is_valid():
                raise ann.LabelingError("The page did not say its rubric version; reload it. Nothing was submitted.")
            if annotation.status == Annotation.Status.DRAFT:
                ann.check_writable(annotation, form.cleaned_data["rubric_version"])
            ann.submit(annotation=annotation)
    except ann.LabelingError as exc:
        context = annotation_context(request, own_annotation(request.user, request.workspace, pk))
        context["submit_error"] = exc.message
        context["submit_problems"] = [(key, exc.reasons.get(key, "Needed before you submit.")) for key in exc.keys]
        for key in exc.keys:  # mark each criterion the refusal is about, where the person looks
            context["states_by_key"][key].error = exc.reasons.get(key, "Needed before you submit.")
        return render(request, "labeling/annotate.html", context, status=exc.status)
    # The output's own name: a case with two answers (two agent versions) names which one was submitted.
    messages.success(request, f"Submitted {output_names([annotation.output_id])[annotation.output_id]}.")
    return next_output(request, annotation.output.case.eval_set_id)


# Annotations per page of My work: newest first, so what one is working on is on page 1.
MY_WORK_PAGE_SIZE = 50


@never_cache
@require_GET
@labeler_required
def my_work(request: AuthenticatedHttpRequest) -> HttpResponse:
    mine = (
        in_workspace(Annotation, request.workspace)
        .filter(annotator=request.user)
        .select_related("output__case__eval_set", "rubric_version__rubric")
        .order_by("-created_at", "-pk")
    )
    page = Paginator(mine, MY_WORK_PAGE_SIZE).get_page(request.GET.get("page"))
    annotations = list(page.object_list)
    names = output_names(a.output_id for a in annotations)
    for a in annotations:
        a.output_name = names.get(a.output_id, a.output.case.case_id)  # type: ignore[attr-defined]  # the template's display name, not a field
    return render(
        request,
        "labeling/my_work.html",
        {"annotations": annotations, "page": page, "my_queues": my_queues(request.user, request.workspace)},
    )


# --- Adjudication ------------------------------------------------------------------------------


@never_cache
@require_GET
@role_required(*STAFF_ROLES)
def adjudication_queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    scope = pick_scope(request, request.workspace)
    context = {"scope": scope, "items": [], "recent": []}
    if scope.eval_set and scope.rubric_version:
        context["items"] = adj.pending_items(scope.eval_set, scope.rubric_version, request.user)
        context["recent"] = recent = list(adj.recent_decisions(scope.eval_set, scope.rubric_version))
        names = output_names(g.output_id for g in recent)
        for g in recent:
            g.output_name = names.get(g.output_id, g.output.case.case_id)  # type: ignore[attr-defined]  # the template's display name, not a field
    return render(request, "labeling/adjudication_queue.html", context)


@never_cache
@require_http_methods(["GET", "POST"])
@role_required(*STAFF_ROLES)
def adjudicate(request: AuthenticatedHttpRequest, output_id: int, criterion_id: int) -> HttpResponse:
    output, criterion = adjudicable_item(request.user, request.workspace, output_id, criterion_id)
    if request.method != "POST":
        context = adjudication_context(request, output, criterion)
        return render(request, "labeling/adjudicate.html", context, status=200 if context["view"].ready else 409)
    form = AdjudicationForm(request.POST)
    error, status, confirm = "", 422, None
    if form.is_valid():
        try:
            gold = adj.decide(output=output, criterion=criterion, by=request.user, **form.cleaned_data)
        except adj.StaleGold as exc:
            error, status = exc.message, exc.status
            if exc.current is not None:
                # The same answer, offered again on top of the revision now current: one press confirms it.
                confirm = {"current": exc.current, "outcome": form.cleaned_data["outcome"]}
                form = AdjudicationForm({**form.cleaned_data, "based_on": exc.current.revision})
        except adj.AdjudicationError as exc:
            error, status = exc.message, exc.status
        else:
            messages.success(
                request, f"Gold for {criterion.key} on {output.case.case_id}: {gold.get_outcome_display()}."
            )
            return redirect(_after_decision(request, output, criterion))
    context = adjudication_context(request, output, criterion, form=form, error=error)
    context["confirm"] = confirm
    return render(request, "labeling/adjudicate.html", context, status=status)


def _after_decision(request: AuthenticatedHttpRequest, output, criterion) -> str:
    """The next disagreement: on the same output first (its transcript is fresh in mind), then the queue."""
    view = adj.item_view(output, criterion)
    if view.others_pending:
        return reverse("labeling:adjudicate", args=[output.pk, view.others_pending[0].pk])
    items = adj.pending_items(output.case.eval_set, criterion.rubric_version, request.user)
    if items:
        return reverse("labeling:adjudicate", args=[items[0].output_id, items[0].criterion_id])
    return (
        reverse("labeling:adjudication_queue")
        + f"?eval_set={output.case.eval_set_id}&rubric_version={criterion.rubric_version_id}"
    )
