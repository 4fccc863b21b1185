"""The human side: annotations, labels, adjudicated gold, labeling queues and gold disputes.

Store the parts, aggregate when reading: every label row keeps who made it, under
which rubric version, and its revision; gold and agreement are computed later.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .transcript import Transcript, quotes_of
from .validators import UnknownName, known_names, rubric_part_problem, split_rubric_ref, validate_name


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer"
    LEAD = "lead", "Lead"


class User(AbstractUser):
    """An Icewater account. The role decides what the server lets it see and do."""

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)


class HumanOutcome(models.TextChoices):
    """What a person may say about one criterion of one output."""

    PASS = "PASS", "PASS"
    FAIL = "FAIL", "FAIL"
    NOT_APPLICABLE = "NOT_APPLICABLE", "N/A"
    ABSTAIN = "ABSTAIN", "Can't tell"


class EvalSet(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Case(models.Model):
    """One task given to the agent: the input and what a good answer contains."""

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="cases")
    case_id = models.CharField(max_length=300, validators=[validate_name])
    input = models.TextField()
    reference = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["eval_set", "case_id"], name="case_id_unique_in_eval_set")]
        ordering = ["eval_set", "case_id"]

    def __str__(self) -> str:
        return self.case_id


class Output(models.Model):
    """What one agent version answered for one case (one output per case and agent version)."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="outputs")
    agent_version = models.CharField(max_length=200, default="default", validators=[validate_name])
    response = models.TextField()
    # [{"name": str, "args": any JSON, "response": any JSON}, ...] in call order.
    tool_calls = models.JSONField(default=list, blank=True)
    latency_ms = models.IntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["case", "agent_version"], name="one_output_per_case_and_agent_version")
        ]
        ordering = ["case_id", "agent_version"]

    def __str__(self) -> str:
        return f"{self.case.case_id} @ {self.agent_version}"


class GoldPolicy(models.TextChoices):
    """How the labels of one item become gold when no reviewer decided (labeling/gold.py has the rule)."""

    MAJORITY = "majority", "Strict majority"
    ANY_FAIL = "any_fail", "Any FAIL makes it FAIL"
    UNANIMOUS = "unanimous", "Unanimous (else adjudication)"


class Rubric(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # Not a field validator (that would be a migration): forms and the admin call clean().
        problem = rubric_part_problem(self.name)
        if problem:
            raise ValidationError({"name": f"A rubric name {problem}."})


class RubricVersionLocked(Exception):
    """Raised when something tries to change a rubric version that labels, verdicts or approvals use."""


class RubricVersionQuerySet(models.QuerySet):
    def by_ref(self, ref: str, *, say_known: bool = True) -> RubricVersion:
        """The rubric version NAME@VERSION names (labeling/validators.py has the rule); UnknownName otherwise.

        The message says whether the rubric or only the version is unknown, and what exists; with
        `say_known=False` (the HTTP gate) it names nothing else: a token holder must not learn other names.
        """
        name, version = split_rubric_ref(ref)
        found = self.select_related("rubric").filter(rubric__name=name, version=version).first()
        if found is not None:
            return found
        if not say_known:
            raise UnknownName(f"unknown rubric version {ref!r}")
        if not Rubric.objects.filter(name=name).exists():
            raise UnknownName(
                f"there is no rubric {name!r} ({known_names(Rubric.objects.values_list('name', flat=True))})"
            )
        versions = self.filter(rubric__name=name).values_list("version", flat=True)
        raise UnknownName(f"rubric {name!r} has no version {version!r} ({known_names(versions)})")


class RubricVersion(models.Model):
    """An immutable instrument once used: a rubric edit is a new version, never an update."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        APPROVED = "approved", "Approved"
        RETIRED = "retired", "Retired"

    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="versions")
    version = models.CharField(max_length=100, validators=[validate_name])
    instruction = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approval_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RubricVersionQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rubric", "version"], name="rubric_version_unique")]
        ordering = ["rubric__name", "created_at"]

    def __str__(self) -> str:
        return self.ref

    def clean(self) -> None:
        problem = rubric_part_problem(self.version)
        if problem:
            raise ValidationError({"version": f"A rubric version {problem}."})

    @property
    def ref(self) -> str:
        """How rubrics are referred to everywhere: NAME@VERSION."""
        return f"{self.rubric.name}@{self.version}"

    def compute_hash(self, criteria: list[dict] | None = None) -> str:
        if criteria is None:
            criteria = [c.as_dict() for c in self.criteria.order_by("order")]
        return rubric_content_hash(self.instruction, criteria)

    def is_in_use(self) -> bool:
        """True once any label, verdict or approval refers to this version."""
        if self.status != self.Status.DRAFT:
            return True
        for rel in self._meta.related_objects:
            if rel.related_model in (Criterion,) or not rel.one_to_many:
                continue
            accessor = rel.get_accessor_name()  # None only for a symmetrical many-to-many, never one-to-many
            if accessor and getattr(self, accessor).exists():
                return True
        return False

    def save(self, *args, **kwargs):
        if self.pk:
            old = RubricVersion.objects.filter(pk=self.pk).values("instruction", "version", "rubric_id").first()
            changed = old and (
                old["instruction"] != self.instruction
                or old["version"] != self.version
                or old["rubric_id"] != self.rubric_id
            )
            if changed and RubricVersion.objects.get(pk=self.pk).is_in_use():
                raise RubricVersionLocked(f"{self.ref} is in use and cannot change; create a new version instead")
        super().save(*args, **kwargs)


def rubric_content_hash(instruction: str, criteria: list[dict]) -> str:
    """SHA-256 of the instruction and the criteria in order: what the instrument is."""
    payload = json.dumps(
        {
            "instruction": instruction,
            "criteria": [_hashed_criterion(c) for c in criteria],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _hashed_criterion(criterion: dict) -> dict:
    """What of a criterion is the instrument. The gold policy is, but only when it is not the default:
    a version made before policies existed (all majority) keeps its hash, and so its approvals."""
    out = {k: criterion.get(k, "") for k in ("key", "definition", "pass_example", "fail_example")}
    policy = criterion.get("gold_policy") or GoldPolicy.MAJORITY
    if policy != GoldPolicy.MAJORITY:
        out["gold_policy"] = str(policy)
    return out


class Criterion(models.Model):
    """One binary, narrow question of a rubric version."""

    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="criteria")
    key = models.SlugField(max_length=100)
    definition = models.TextField()
    pass_example = models.TextField(blank=True)
    fail_example = models.TextField(blank=True)
    # Part of the version's content (its hash): a different policy is a different instrument.
    gold_policy = models.CharField(max_length=16, choices=GoldPolicy.choices, default=GoldPolicy.MAJORITY)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rubric_version", "key"], name="criterion_key_unique")]
        ordering = ["rubric_version", "order"]

    def __str__(self) -> str:
        return self.key

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "definition": self.definition,
            "pass_example": self.pass_example,
            "fail_example": self.fail_example,
            "gold_policy": self.gold_policy,
        }

    def save(self, *args, **kwargs):
        version = RubricVersion.objects.get(pk=self.rubric_version_id)
        if version.is_in_use():
            raise RubricVersionLocked(f"{version.ref} is in use; its criteria cannot change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.rubric_version.is_in_use():
            raise RubricVersionLocked(f"{self.rubric_version.ref} is in use; its criteria cannot change")
        return super().delete(*args, **kwargs)


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

    Made once, when a lead starts the first audit plan on the eval set (calibration/audits.py): the
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

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(released__lte=models.F("size")), name="released_within_order")
        ]

    def __str__(self) -> str:
        return f"audit order of queue {self.queue_id} (seed {self.seed}, {self.released} of {self.size} released)"


class AuditOrderItem(models.Model):
    """One output's place in an audit order; position 1 is handed out first."""

    order = models.ForeignKey(AuditOrder, on_delete=models.CASCADE, related_name="items")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="audit_positions")
    position = models.PositiveIntegerField()

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
