"""Saving, submitting and correcting one annotator's labels.

A draft's labels are updated in place while the annotator works (each save also
extends the reservation). Submitting locks the annotation; after that a change to
a criterion adds a new Label revision and the old row stays (is_current flips).
Every write refuses an annotation whose rubric version is no longer the one its
eval set's queue uses: labels stay pinned to the version they were made under.

Callers hold the annotation row lock (guards.own_annotation(for_update=True))
inside a transaction, so a save and a submit of one annotation never interleave.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from django.db.models import F, FilteredRelation, Q, QuerySet
from django.utils import timezone

from evals.models import Criterion, HumanOutcome
from evals.transcript import Transcript

from .compiled_query import CompiledQuery
from .models import Annotation, Label
from .queue import RESERVATION, RESERVATION_REFRESH, current_queue

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    from .forms import LabelForm
    from .guards import QueueVersion

# The outcomes in the order the page shows them, with the key that picks each one.
OUTCOME_KEYS = [
    (HumanOutcome.PASS.value, HumanOutcome.PASS.label, "p"),
    (HumanOutcome.FAIL.value, HumanOutcome.FAIL.label, "f"),
    (HumanOutcome.NOT_APPLICABLE.value, HumanOutcome.NOT_APPLICABLE.label, "n"),
    (HumanOutcome.ABSTAIN.value, HumanOutcome.ABSTAIN.label, "c"),
]

# Outcomes that assert something about the output, so they need a quote (or an explicit NONE).
NEEDS_EVIDENCE = (HumanOutcome.PASS, HumanOutcome.FAIL)


class LabelingError(Exception):
    """A write that is refused; `status` is the HTTP status the view answers with."""

    def __init__(
        self, message: str, status: int = 422, *, keys: list[str] | None = None, reasons: dict[str, str] | None = None
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.keys = keys or []
        self.reasons = reasons or {}  # per criterion key: what it still needs, said on the criterion


class StaleLabel(LabelingError):
    """A correction posted from a page that showed another answer than the current one (another tab, Back, or
    a page loaded before Submit): nothing is saved; the page shows the current answer and asks to confirm."""

    def __init__(self, current: Label | None, *, was_draft: bool):
        if was_draft:
            message = (
                "This case was submitted after this page was loaded, so a change now is a correction, kept as a "
                "new revision."
            )
        else:
            message = "This answer was corrected after this page was loaded."
        if current is not None:
            quote = f" with “{current.evidence}”" if current.evidence else ""
            message += f" It is now {current.get_outcome_display()}{quote} (revision {current.revision})."
        message += " Yours was not saved: to replace it with yours, press Replace it with mine."
        super().__init__(message, status=409)
        self.current = current


def label_base(annotation: Annotation, label: Label | None) -> str:
    """What a labeling page's criterion form says it was made on (its hidden `based_on`): "draft" while the
    annotation is a draft (saves update it in place), else the revision of the answer shown, or "none"."""
    if annotation.status == Annotation.Status.DRAFT:
        return "draft"
    return str(label.revision) if label is not None else "none"


# What a refused Submit says on each criterion it names.
NOT_ANSWERED = "Not answered yet: pick an outcome before you submit."
NEEDS_QUOTE = "Needs an evidence quote from the transcript, or NONE, before you submit."


@dataclass
class CriterionState:
    """What the page shows for one criterion: the saved label and, after a refused save, what was typed."""

    criterion: Criterion
    label: Label | None = None
    number: int = 0
    error: str = ""
    posted_outcome: str | None = None
    posted_evidence: str | None = None
    posted_more_evidence: str | None = None
    saved_now: bool = False
    stale: bool = False  # a correction refused because the page showed an older answer: the button confirms
    base: str = ""  # label_base of what the page shows, posted back as `based_on`
    quote_places: list[tuple[str, str]] = field(default_factory=list)  # after a save: (quote, where it is)
    extra: dict = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if self.posted_outcome is not None:
            return self.posted_outcome
        return self.label.outcome if self.label else ""

    @property
    def evidence(self) -> str:
        if self.posted_evidence is not None:
            return self.posted_evidence
        return self.label.evidence if self.label else ""

    @property
    def more_evidence(self) -> str:
        """The further quotes, one per line, as the box shows them."""
        if self.posted_more_evidence is not None:
            return self.posted_more_evidence
        return "\n".join(self.label.more_evidence or []) if self.label else ""

    @property
    def options(self) -> list[tuple[str, str, str, bool]]:
        """(value, label, key, checked) for each outcome, computed once for the template."""
        chosen = self.outcome
        return [(value, label, key, value == chosen) for value, label, key in OUTCOME_KEYS]

    @property
    def needs_evidence(self) -> bool:
        """Saved as PASS/FAIL without a quote: allowed in a draft, refused at submit."""
        return bool(self.label and self.label.outcome in NEEDS_EVIDENCE and not self.label.evidence)


def check_writable(annotation: WithAnnotations[Annotation, QueueVersion], posted_rubric_version_id: int | None) -> None:
    """Refuse writes from a stale page or under a rubric version the queue has moved away from.

    Reads `annotation.queue_rubric_version_id` (guards.own_annotation loads it); the queue row
    itself is read only to word the refusal.
    """
    ref = annotation.rubric_version.ref
    if posted_rubric_version_id != annotation.rubric_version_id:
        raise LabelingError(
            f"This page was made for another rubric version than the annotation's ({ref}). "
            "Reload the page; nothing was saved.",
            status=409,
        )
    if annotation.queue_rubric_version_id == annotation.rubric_version_id:
        return
    queue = current_queue(annotation.output.case.eval_set_id)
    if queue is None:
        raise LabelingError(
            f"Labeling of {annotation.output.case.eval_set.name} is closed; nothing was saved.", status=409
        )
    raise LabelingError(
        f"A lead moved this queue from {ref} to {queue.rubric_version.ref}. Your labels under {ref} are kept "
        f"as they are and can no longer be changed or submitted; nothing was saved. "
        f"Press Next to label under {queue.rubric_version.ref}.",
        status=409,
    )


def save_label(
    *,
    annotation: Annotation,
    criterion: Criterion,
    outcome: str,
    evidence: str,
    more_evidence: list[str] | None = None,
    transcript: Transcript | None = None,
    based_on: str | None = None,
    known_current: Label | None | Literal["read"] = "read",
) -> Label:
    """Store one criterion's answer (the first quote in `evidence`, any further ones in `more_evidence`): in
    place for a draft, as a new revision after submission. `transcript` is the output's (the page's form has
    it already); without it, it is read from the annotation's output.

    `based_on` is what the page's form was made on (label_base); a correction whose page showed another
    answer than the current one raises StaleLabel and saves nothing. None: no page (a direct domain call).

    `known_current`: the criterion's current label (or None) when the caller read it under the annotation's row lock
    (criterion_states after guards.own_annotation(for_update=True)); "read": read it here."""
    more_evidence = list(more_evidence or [])
    if transcript is None:
        transcript = Transcript.of(annotation.output)
    current = (
        Label.objects.current().filter(annotation=annotation, criterion=criterion).first()
        if isinstance(known_current, str)  # "read"
        else known_current
    )
    if annotation.status == Annotation.Status.DRAFT:
        hold = timezone.now() + RESERVATION
        if annotation.reserved_until is None or annotation.reserved_until < hold - RESERVATION_REFRESH:
            annotation.reserved_until = hold
            annotation.save(update_fields=["reserved_until"])
        if current is None:
            label = Label(
                annotation=annotation,
                criterion=criterion,
                outcome=outcome,
                evidence=evidence,
                more_evidence=more_evidence,
            )
            label.place_quotes(transcript).save(force_insert=True)
            return label
        current.outcome, current.evidence, current.more_evidence = outcome, evidence, more_evidence
        current.place_quotes(transcript).save(
            update_fields=["outcome", "evidence", "more_evidence", "quotes_outside_response"]
        )
        return current
    # A correction after submission: the old answer stays on record, and the record stays complete.
    if outcome in NEEDS_EVIDENCE and not evidence:
        raise LabelingError(
            "A submitted PASS or FAIL needs an evidence quote from the transcript, or NONE; nothing was saved."
        )
    if current is not None and (current.outcome, current.evidence, current.more_evidence) == (
        outcome,
        evidence,
        more_evidence,
    ):
        return current
    if based_on is not None and based_on != label_base(annotation, current):
        raise StaleLabel(current, was_draft=based_on == "draft")
    revision = 1
    if current is not None:
        current.is_current = False
        current.save(update_fields=["is_current"])
        revision = current.revision + 1
    label = Label(
        annotation=annotation,
        criterion=criterion,
        outcome=outcome,
        evidence=evidence,
        more_evidence=more_evidence,
        revision=revision,
    )
    label.place_quotes(transcript).save(force_insert=True)
    return label


@dataclass
class CriterionSave:
    """What one criterion's save from the labeling page came to: the state the page shows (None when the post
    named no criterion of the rubric version) and the HTTP status: 200 saved, else the refusal's (422 invalid,
    409 a stale page or an annotation that may no longer be written), said in `state.error` beside what was typed.
    """

    state: CriterionState | None
    status: int


def save_from_page(
    *,
    form: LabelForm,
    annotation: WithAnnotations[Annotation, QueueVersion],
    states_by_key: dict[str, CriterionState],
) -> CriterionSave:
    """Store one criterion of the locked `annotation` as the page posted it; `states_by_key` are its criteria
    with their current labels, read under the lock (criterion_states). A refusal comes back in the result,
    nothing stored."""
    state = states_by_key.get(form.data.get("criterion", ""))
    if state is not None:
        state.posted_more_evidence = form.data.get("more_evidence", "")
    if not form.is_valid():
        if state is not None:
            state.error = " ".join(str(e) for errors in form.errors.values() for e in errors)
            state.posted_outcome, state.posted_evidence = form.data.get("outcome", ""), form.data.get("evidence", "")
        return CriterionSave(state, 422)
    assert state is not None  # a valid form names a criterion of the annotation's rubric version
    data = form.cleaned_data
    try:
        check_writable(annotation, data["rubric_version"])
        state.label = save_label(
            annotation=annotation,
            criterion=data["criterion"],
            outcome=data["outcome"],
            evidence=data["evidence"],
            more_evidence=data["more_evidence"],
            transcript=form.transcript,
            based_on=data["based_on"],
            known_current=state.label,
        )
    except LabelingError as exc:
        state.error = exc.message
        state.posted_outcome, state.posted_evidence = data["outcome"], data["evidence"]
        if isinstance(exc, StaleLabel):
            # Show the answer now on record beside what was typed: the page confirms the change against it.
            state.label, state.stale, state.base = exc.current, True, label_base(annotation, exc.current)
        return CriterionSave(state, exc.status)
    state.saved_now = True
    state.base = label_base(annotation, state.label)
    state.posted_more_evidence = None
    state.quote_places = [(q, ", ".join(form.transcript.found_in(q))) for q in state.label.quotes]
    return CriterionSave(state, 200)


def submit(*, annotation: Annotation) -> None:
    """Lock the annotation once every criterion has an answer and PASS/FAIL answers have evidence."""
    if annotation.status == Annotation.Status.SUBMITTED:
        when = timezone.localtime(annotation.submitted_at).strftime("%Y-%m-%d %H:%M")
        raise LabelingError(
            f"This annotation was already submitted ({when}); nothing changed. "
            "To correct an answer, use Correct on the annotation page: it is saved as a new revision.",
            status=409,
        )
    criteria = list(annotation.rubric_version.criteria.order_by("order", "id"))
    labels = {label.criterion_id: label for label in Label.objects.current().filter(annotation=annotation)}
    missing = [c.key for c in criteria if c.pk not in labels]
    answered = [(c.key, labels[c.pk]) for c in criteria if c.pk in labels]
    unquoted = [key for key, label in answered if label.outcome in NEEDS_EVIDENCE and not label.evidence]
    # Every problem at once, each criterion named once with what it still needs, so one pass fixes them all.
    parts = []
    if missing:
        parts.append(f"Answer every criterion before submitting. Missing: {', '.join(missing)}.")
    if unquoted:
        parts.append(
            "PASS and FAIL need an evidence quote from the transcript, or NONE when there is nothing to quote. "
            f"Missing for: {', '.join(unquoted)}."
        )
    if parts:
        reasons = dict.fromkeys(missing, NOT_ANSWERED) | dict.fromkeys(unquoted, NEEDS_QUOTE)
        raise LabelingError(" ".join(parts), keys=missing + unquoted, reasons=reasons)
    annotation.status = Annotation.Status.SUBMITTED
    annotation.submitted_at = timezone.now()
    annotation.reserved_until = None
    annotation.save(update_fields=["status", "submitted_at", "reserved_until"])


def criterion_states(annotation: Annotation) -> list[CriterionState]:
    """One state per criterion of the annotation's rubric version, in order, with the annotator's
    current label where there is one: one query (criteria LEFT JOIN their current label)."""
    rows = _CRITERIA_WITH_LABELS.rows(rubric_version_id=annotation.rubric_version_id, annotation_id=annotation.pk)
    states = []
    for number, c in enumerate(rows, start=1):
        label = None
        if c.label_id is not None:
            label = Label(
                pk=c.label_id,
                annotation=annotation,
                criterion=c,
                outcome=c.label_outcome,
                evidence=c.label_evidence,
                more_evidence=c.label_more_evidence or [],
                revision=c.label_revision,
                is_current=True,
            )
        states.append(CriterionState(criterion=c, label=label, number=number, base=label_base(annotation, label)))
    return states


def _criteria_with_labels(*, rubric_version_id: int, annotation_id: int) -> QuerySet[Criterion]:
    return (
        Criterion.objects.filter(rubric_version_id=rubric_version_id)
        .annotate(
            current=FilteredRelation(
                "labels", condition=Q(labels__annotation_id=annotation_id, labels__is_current=True)
            )
        )
        .annotate(
            label_id=F("current__id"),
            label_outcome=F("current__outcome"),
            label_evidence=F("current__evidence"),
            label_more_evidence=F("current__more_evidence"),
            label_revision=F("current__revision"),
        )
        .order_by("order", "id")
    )


class CurrentLabelColumns(TypedDict):
    """The annotator's current label of a criterion, read beside it (all None where there is none: read the others
    only when `label_id` is not None)."""

    label_id: int | None
    label_outcome: str
    label_evidence: str
    label_more_evidence: list[str] | None
    label_revision: int


# Run by the labeling page and every save: compiled to SQL once (compiled_query.py).
_CRITERIA_WITH_LABELS: CompiledQuery[WithAnnotations[Criterion, CurrentLabelColumns]] = CompiledQuery(
    _criteria_with_labels, "rubric_version_id", "annotation_id"
)
