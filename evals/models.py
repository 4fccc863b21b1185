"""The shared domain every app reads: accounts and roles, eval sets, cases, outputs, rubrics and criteria.

Each model keeps the table it was created with (db_table "labeling_..."), so its rows and every foreign key
to it stay as they are.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from evals.validators import UnknownName, known_names, rubric_part_problem, split_rubric_ref, validate_name


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer"
    LEAD = "lead", "Lead"


class User(AbstractUser):
    """An Icewater account. Its role in each workspace (a Membership) decides what the server lets it see and do
    there; a superuser administers the site and counts as a lead in every workspace."""

    class Meta(AbstractUser.Meta):
        db_table = "labeling_user"  # the table it had in labeling: rows and foreign keys stay

    def role_in(self, workspace: Workspace | int | None) -> str | None:
        """This person's role in `workspace` (None: not a member, or inactive). Read once per user object.

        A request loads its user afresh, so a membership removed or changed counts from the next request on.
        """
        if workspace is None or not self.is_active:
            return None
        if self.is_superuser:
            return Role.LEAD
        workspace_id = workspace if isinstance(workspace, int) else workspace.pk
        return self.workspace_roles().get(workspace_id)

    def workspace_roles(self) -> dict[int, str]:
        """{workspace id: role} of this person's memberships, read from the database once per user object."""
        cached: dict[int, str] | None = self.__dict__.get("_workspace_roles")
        if cached is None:
            cached = dict(Membership.objects.filter(user=self).values_list("workspace_id", "role"))
            self.__dict__["_workspace_roles"] = cached
        return cached

    def remember_workspace_roles(self, roles: dict[int, str]) -> None:
        """What workspace_roles() would read, when the caller has just read the memberships anyway."""
        self.__dict__["_workspace_roles"] = roles

    def forget_workspace_roles(self) -> None:
        """After changing this person's memberships in the same request or command."""
        self.__dict__.pop("_workspace_roles", None)


class Workspace(models.Model):
    """One team's space: its eval sets, rubrics, judge configs and everything made from them, and its members.

    Everything the product stores belongs to exactly one workspace, directly (a `workspace` field on eval sets,
    rubrics, judge configs, API tokens, import jobs and gate results) or through them (`workspace_path` on each
    model says how); names are unique within a workspace. docs/security.md, "Workspaces", has the rule.
    """

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = ""  # the workspace itself

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class MembershipSource(models.TextChoices):
    """Who keeps a membership: the site (a lead, the admin, add_user) or the identity provider's groups claim,
    which replaces the provider's memberships at each sign-in and leaves the others alone."""

    LOCAL = "local", "Icewater"
    OIDC = "oidc", "Identity provider"


class Membership(models.Model):
    """A person's role in one workspace. Removing it ends their access there at once; their labels stay."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    source = models.CharField(max_length=8, choices=MembershipSource.choices, default=MembershipSource.LOCAL)
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="one_membership_per_workspace")]
        ordering = ["workspace", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.workspace}"


class HumanOutcome(models.TextChoices):
    """What a person may say about one criterion of one output."""

    PASS = "PASS", "PASS"
    FAIL = "FAIL", "FAIL"
    NOT_APPLICABLE = "NOT_APPLICABLE", "N/A"
    ABSTAIN = "ABSTAIN", "Can't tell"


class EvalSet(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="eval_sets")
    name = models.CharField(max_length=200, validators=[validate_name])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "workspace"

    class Meta:
        db_table = "labeling_evalset"  # the table it had in labeling: rows and foreign keys stay
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="eval_set_name_unique_in_workspace")]
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

    workspace_path = "eval_set__workspace"

    class Meta:
        db_table = "labeling_case"  # the table it had in labeling: rows and foreign keys stay
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

    workspace_path = "case__eval_set__workspace"

    class Meta:
        db_table = "labeling_output"  # the table it had in labeling: rows and foreign keys stay
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
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="rubrics")
    name = models.CharField(max_length=200, validators=[validate_name])
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "workspace"

    class Meta:
        db_table = "labeling_rubric"  # the table it had in labeling: rows and foreign keys stay
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="rubric_name_unique_in_workspace")]
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


class RubricVersionQuerySet(models.QuerySet["RubricVersion"]):
    def by_ref(self, ref: str, workspace: Workspace | int, *, say_known: bool = True) -> RubricVersion:
        """The rubric version NAME@VERSION names in `workspace` (evals/validators.py has the rule); UnknownName
        otherwise.

        The message says whether the rubric or only the version is unknown, and what exists in that workspace;
        with `say_known=False` (the HTTP gate) it names nothing else: a token holder must not learn other names.
        """
        name, version = split_rubric_ref(ref)
        workspace_id = workspace if isinstance(workspace, int) else workspace.pk
        mine = self.filter(rubric__workspace_id=workspace_id)
        found = mine.select_related("rubric").filter(rubric__name=name, version=version).first()
        if found is not None:
            return found
        if not say_known:
            raise UnknownName(f"unknown rubric version {ref!r}")
        rubrics = Rubric.objects.filter(workspace_id=workspace_id)
        if not rubrics.filter(name=name).exists():
            raise UnknownName(f"there is no rubric {name!r} ({known_names(rubrics.values_list('name', flat=True))})")
        versions = mine.filter(rubric__name=name).values_list("version", flat=True)
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

    workspace_path = "rubric__workspace"

    class Meta:
        db_table = "labeling_rubricversion"  # the table it had in labeling: rows and foreign keys stay
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

    workspace_path = "rubric_version__rubric__workspace"

    class Meta:
        db_table = "labeling_criterion"  # the table it had in labeling: rows and foreign keys stay
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


class AuditAction(models.TextChoices):
    """The decisions of a workspace that its leads must be able to trace (evals/audit_log.py records them)."""

    WORKSPACE_CREATED = "workspace_created", "Workspace created"
    RUBRIC_APPROVED = "rubric_approved", "Rubric version approved"
    GATING_MARKED = "gating_marked", "Criteria marked gating"
    GATING_REVOKED = "gating_revoked", "Gating mark revoked"
    GATING_REVIEWED = "gating_reviewed", "Gating reviewed"
    TOKEN_CREATED = "token_created", "API token created"
    TOKEN_REVOKED = "token_revoked", "API token revoked"
    MEMBER_ADDED = "member_added", "Member added"
    MEMBER_ROLE_CHANGED = "member_role_changed", "Member's role changed"
    MEMBER_REMOVED = "member_removed", "Member removed"
    WATCH_STARTED = "watch_started", "Watch started"
    WATCH_STOPPED = "watch_stopped", "Watch stopped"
    ALERT_DESTINATION_ADDED = "alert_destination_added", "Alert destination added"
    ALERT_DESTINATION_CHANGED = "alert_destination_changed", "Alert destination changed"
    ALERT_DESTINATION_REMOVED = "alert_destination_removed", "Alert destination removed"


class AuditEvent(models.Model):
    """One decision that matters, in the workspace it was made in: who, what, when, and its particulars.

    Rows are only added. The actor's username is kept as well as the link, so an event still says who decided
    after the account is gone; `actor` is None for a command run on the server (add_user, add_workspace).
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    summary = models.CharField(max_length=500)
    detail = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "workspace"

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="audit_event_newest_first")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action}: {self.summary}"
