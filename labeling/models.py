"""The human side: annotations, labels, adjudicated gold, labeling queues, audit orders and gold disputes.

Store the parts, aggregate when reading: every label row keeps who made it, under
which rubric version, and its revision; gold and agreement are computed later.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from evals.models import Criterion, EvalSet, HumanOutcome, Output, RubricVersion
from evals.transcript import Transcript, quotes_of


class AnnotationQuerySet(models.QuerySet):
    def submitted(self) -> AnnotationQuerySet:
        """Annotations their annotator handed in: a draft is work in progress and counts nowhere."""
        return self.filter(status=Annotation.Status.SUBMITTED)


class Annotation(models.Model):
    """One annotator's pass over one output under one rubric version.

    `slot` is the order in which annotations of an output were made or imported
    (1 = annotator A, 2 = annotator B, more only from imports). A draft holds its
    slot until `reserved_until`; after that the slot may be given to someone else.
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"

    class Source(models.TextChoices):
        APP = "app", "Labeled in the app"
        IMPORT = "import", "Imported"

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="annotations")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations")
    slot = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.APP)
    reserved_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    workspace_path = "output__case__eval_set__workspace"

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["output", "rubric_version", "annotator"], name="one_annotation_per_annotator"
            ),
            models.UniqueConstraint(fields=["output", "rubric_version", "slot"], name="one_annotation_per_slot"),
        ]
        indexes = [models.Index(fields=["rubric_version", "status"])]

    def __str__(self) -> str:
        return f"annotation {self.slot} of output {self.output_id} ({self.status})"


class CurrentQuerySet(models.QuerySet):
    """For models that keep their history as rows: a change adds a row and marks the old one not current."""

    def current(self):
        return self.filter(is_current=True)


class LabelQuerySet(CurrentQuerySet):
    def submitted(self) -> LabelQuerySet:
        """The labels that count: the current revision of each label in a submitted annotation."""
        return self.current().filter(annotation__status=Annotation.Status.SUBMITTED)


class Label(models.Model):
    """One outcome for one criterion inside an annotation.

    While the annotation is a draft the current row is updated in place; after
    submission a correction adds a new revision and the old row stays.
    """

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="labels")
    outcome = models.CharField(max_length=16, choices=HumanOutcome.choices)
    # A verbatim quote from the transcript, or the word NONE.
    evidence = models.TextField(blank=True)
    # Further quotes after `evidence` (a label may rest on several spans), each verbatim in the transcript.
    more_evidence = models.JSONField(default=list, blank=True)
    # How many of the quotes are in the transcript only outside the response: in the input or a tool call,
    # what the agent was given rather than what it said. Set when the label is written (`place_quotes`); an
    # output never changes once imported, so it stays true, and the calibration report sums it per criterion
    # without reading a single transcript.
    quotes_outside_response = models.PositiveSmallIntegerField(default=0)
    revision = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "annotation__output__case__eval_set__workspace"

    objects = LabelQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotation", "criterion", "revision"], name="label_revision_unique"),
            models.UniqueConstraint(
                fields=["annotation", "criterion"], condition=Q(is_current=True), name="one_current_label"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} (rev {self.revision})"

    @property
    def quotes(self) -> list[str]:
        """Every quote of the label, in order (NONE is no quote)."""
        return quotes_of(self.evidence, self.more_evidence)

    def place_quotes(self, transcript: Transcript) -> Label:
        """Set `quotes_outside_response` from the output's transcript; every writer of a label calls this."""
        self.quotes_outside_response = transcript.outside_response_only(self.quotes)
        return self


class GoldLabel(models.Model):
    """An adjudicated outcome: who decided it, when and why. Changing it adds a revision.

    Where the annotators agree, gold is their shared outcome and is derived when
    reading; only adjudications (in the app or imported) are stored here.
    """

    class Source(models.TextChoices):
        ADJUDICATION = "adjudication", "Adjudicated in the app"
        IMPORT = "import", "Imported"

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="gold_labels")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gold_labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="gold_labels")
    outcome = models.CharField(max_length=16, choices=HumanOutcome.choices)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_labels")
    rationale = models.TextField(blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ADJUDICATION)
    revision = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    decided_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "output__case__eval_set__workspace"

    objects = CurrentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["output", "criterion", "revision"], name="gold_revision_unique"),
            models.UniqueConstraint(
                fields=["output", "criterion"], condition=Q(is_current=True), name="one_current_gold"
            ),
        ]

    def __str__(self) -> str:
        return f"gold {self.outcome} (rev {self.revision})"


class LabelingQueue(models.Model):
    """Which rubric version an eval set is being labeled under, and who decided it.

    One row per opening: moving the queue to another rubric version marks the old
    row not current and adds a new one, so the history says who moved it and when.
    Only a lead moves it (labeling.queue.move_queue); labels already made stay with
    the version they were made under.
    """

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="labeling_queues")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="labeling_queues")
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    opened_at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField(blank=True)
    is_current = models.BooleanField(default=True)

    workspace_path = "eval_set__workspace"

    objects = CurrentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["eval_set"], condition=Q(is_current=True), name="one_current_queue")
        ]
        ordering = ["eval_set", "-opened_at"]

    def __str__(self) -> str:
        return f"{self.eval_set} under {self.rubric_version_id}"


class AuditOrder(models.Model):
    """The seeded random order a queue hands its outputs out in, for an audit of the candidate (issue 22).

    Made once, when a lead starts the first audit plan on the eval set (calibration/audits/plans.py): the
    outputs of the eval set sorted by id, permuted by numpy's default_rng(seed), so the same outputs and
    seed give the same order. While a queue has one, Next hands out only its first `released` positions,
    in position order, never skipping (labeling/queue.py): an audit's statistics assume that the labeled
    items are a uniformly random prefix. "Label these k next" raises `released` (never beyond `size`).
    """

    queue = models.OneToOneField(LabelingQueue, on_delete=models.CASCADE, related_name="audit_order")
    seed = models.PositiveBigIntegerField()
    size = models.PositiveIntegerField()  # N: the outputs in the order
    released = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "queue__eval_set__workspace"

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(released__lte=models.F("size")), name="released_within_order")
        ]

    def __str__(self) -> str:
        return f"audit order of queue {self.queue_id} (seed {self.seed}, {self.released} of {self.size} released)"


class AuditOrderItem(models.Model):
    """One output's place in an audit order; position 1 is handed out first.

    `released`: Next may hand it out. The order's first `released` positions are (a uniform audit's prefix), and
    so are the outputs a stratified audit released on its own (its next ones in the order, whatever their strata;
    plans started before issue 41 released the next ones of a stratum they chose)."""

    order = models.ForeignKey(AuditOrder, on_delete=models.CASCADE, related_name="items")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="audit_positions")
    position = models.PositiveIntegerField()
    released = models.BooleanField(default=False)

    workspace_path = "output__case__eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["order", "position"], name="one_output_per_audit_position"),
            models.UniqueConstraint(fields=["order", "output"], name="one_position_per_audit_output"),
        ]
        ordering = ["order", "position"]

    def __str__(self) -> str:
        return f"output {self.output_id} at {self.position} of order {self.order_id}"


class GoldDisputeQuerySet(models.QuerySet):
    def open(self) -> GoldDisputeQuerySet:
        """Disputes nobody has resolved yet (by deciding the item's gold again)."""
        return self.filter(resolved_at__isnull=True)


class GoldDispute(models.Model):
    """A lead's or reviewer's doubt about the gold label of one (output, criterion), with the reason.

    It sends the item back to adjudication: the adjudication queue lists it, with the reason, until someone
    decides its gold again (a new GoldLabel revision, so the history keeps the old gold), which resolves the
    dispute. Raised from a calibration drilldown (`raised_from` says which). Kept, never deleted.
    """

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="gold_disputes")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gold_disputes")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="gold_disputes")
    # The gold that was disputed: its outcome, and its adjudicated revision (0: the annotators' majority).
    disputed_outcome = models.CharField(max_length=16, choices=HumanOutcome.choices)
    disputed_revision = models.PositiveIntegerField(default=0)
    reason = models.TextField()
    raised_from = models.CharField(max_length=300, blank=True)
    raised_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    raised_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resolution = models.ForeignKey(GoldLabel, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    workspace_path = "output__case__eval_set__workspace"

    objects = GoldDisputeQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["output", "criterion"], condition=Q(resolved_at__isnull=True), name="one_open_gold_dispute"
            )
        ]
        ordering = ["raised_at", "id"]

    def __str__(self) -> str:
        state = "resolved" if self.resolved_at else "open"
        return f"dispute of gold {self.disputed_outcome} on output {self.output_id} ({state})"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None
