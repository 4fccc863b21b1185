"""Approvals and the release gate: which criteria may gate, on what evidence, and what the gate said.

An approval belongs to one rubric version and one judge config (by id and by content hash), so a
rubric edit or a judge change starts with no approvals: it is a new instrument.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from calibration.stats.policy import (
    DECIDE_ON,
    DEFAULT_CONFIDENCE,
    DEFAULT_DECIDE_ON,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    GateThresholds,
)
from evals.models import Criterion, EvalSet, RubricVersion
from judging.models import JudgeConfig
from labeling.models import AuditOrder


class GatingMarkQuerySet(models.QuerySet):
    def active(self) -> GatingMarkQuerySet:
        return self.filter(revoked_at__isnull=True)

    def for_instrument(self, rubric_version: RubricVersion, judge_config: JudgeConfig) -> GatingMarkQuerySet:
        """Active marks that still apply: same rubric version and judge config, contents unchanged,
        rubric version still approved."""
        return self.active().filter(
            rubric_version=rubric_version,
            judge_config=judge_config,
            judge_config_hash=judge_config.content_hash,
            rubric_content_hash=rubric_version.content_hash,
            rubric_version__status=RubricVersion.Status.APPROVED,
        )


class GatingMark(models.Model):
    """A lead's decision that one criterion, graded by one judge config, may gate releases.

    It keeps the calibration it relied on (eval set and the report row's figures, and the probe run's
    figures), who decided, when and why, and the gate policy the lead set for it (calibration/stats/policy.py:
    callers of the gate may only tighten it; optionally, a clean probe run is required). An override (the
    criterion was not in the `gate` tier) stays marked as one. Revoking keeps the row, so the history of
    what gated when is never lost.
    """

    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gating_marks")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="gating_marks")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="gating_marks")
    rubric_content_hash = models.CharField(max_length=64)
    judge_config_hash = models.CharField(max_length=64)
    calibration_eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="gating_marks")
    calibration_agent_version = models.CharField(max_length=200, blank=True)
    tier = models.CharField(max_length=16)
    override = models.BooleanField(default=False)
    reason = models.TextField()
    # The report row the decision was made on (the calibration_report JSON keys) plus computed_at.
    figures = models.JSONField(default=dict)
    # The lead's gate policy for this criterion. Marks made before it was stored got the defaults, which
    # is what the gate applied to a caller that asked for nothing.
    min_pass_rate = models.FloatField(default=DEFAULT_MIN_PASS_RATE)
    max_error_rate = models.FloatField(default=DEFAULT_MAX_ERROR_RATE)
    confidence = models.FloatField(default=DEFAULT_CONFIDENCE)
    # Which lower bound decides (policy.DECIDE_ON). The migration gave older marks the observed one, which
    # is what the gate applied when they were made; the corrected one uses `figures` (the calibration cells).
    decide_on = models.CharField(max_length=16, choices=list(DECIDE_ON.items()), default=DEFAULT_DECIDE_ON)
    # The probe results the decision relied on (calibration/report/robustness.py): the newest complete probe run on the
    # calibration eval set, and its figures for this criterion (empty when there was none).
    probe_run = models.ForeignKey(
        "judging.ProbeRun", null=True, blank=True, on_delete=models.PROTECT, related_name="gating_marks"
    )
    probe_figures = models.JSONField(default=dict, blank=True)
    # Part of the lead's policy: the criterion may gate only while its newest probe run is clean (the gate checks).
    require_clean_probes = models.BooleanField(default=False)
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    marked_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    revoke_reason = models.TextField(blank=True)

    workspace_path = "rubric_version__rubric__workspace"

    objects = GatingMarkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rubric_version", "judge_config", "criterion"],
                condition=Q(revoked_at__isnull=True),
                name="one_active_gating_mark",
            )
        ]
        ordering = ["criterion__order", "-marked_at"]

    def __str__(self) -> str:
        kind = "override" if self.override else self.tier
        return f"{self.criterion.key} gates {self.rubric_version_id}/{self.judge_config_id} ({kind})"

    @property
    def policy(self) -> GateThresholds:
        return GateThresholds(self.min_pass_rate, self.max_error_rate, self.confidence, self.decide_on)


class GatingReview(models.Model):
    """A lead's decision, after reading a calibration, that gating stays as it is: no new criterion gates with
    this judge config on this rubric version (and where none did, nothing gates). It answers "a finished run
    not yet decided on" as a mark or a revocation does, so a judge found unusable leaves no open question.

    It keeps what it was decided on: the calibration eval set, the contents' hashes, the criteria that gated
    at that moment and each criterion's report figures.
    """

    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gating_reviews")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="gating_reviews")
    rubric_content_hash = models.CharField(max_length=64)
    judge_config_hash = models.CharField(max_length=64)
    calibration_eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="gating_reviews")
    calibration_agent_version = models.CharField(max_length=200, blank=True)
    # The criterion keys that gated with this instrument when the decision was made; empty: nothing gates.
    gating = models.JSONField(default=list, blank=True)
    # Per criterion key, the report row the decision was made on (the calibration_report JSON keys).
    figures = models.JSONField(default=dict)
    reason = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "rubric_version__rubric__workspace"

    class Meta:
        ordering = ["-decided_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.summary} ({self.rubric_version_id}/{self.judge_config_id})"

    @property
    def summary(self) -> str:
        return f"gating stays: {', '.join(self.gating)}" if self.gating else "nothing gates"


class AuditPlanQuerySet(models.QuerySet):
    def open(self) -> AuditPlanQuerySet:
        return self.filter(closed_at__isnull=True)

    def for_figures(self) -> AuditPlanQuerySet:
        """With what `audits.figures.plan_figures` reads of the plan itself, its kept decision included."""
        return self.select_related(
            "criterion__rubric_version__rubric", "eval_set", "judge_config", "order", "kept_decision", "group"
        )


class AuditPlanGroup(models.Model):
    """One audit of several gating criteria of a candidate on one shared sample (issue 37 item 3): a plan per
    criterion (AuditPlan.group), started together on the eval set's one order, labeled together (annotators label
    every criterion of an output they open), read together by calibration/stats/audit_shared.py.

    The levels are stored at the start and never change: each criterion's PASS test at `alpha_pass` = alpha and its
    FAIL test at `alpha_fail` = alpha / k (the union bound keeps the conjunction's wrong FAILs at alpha), alpha =
    (1 - confidence) / 2, k the criteria started. A criterion added later would change k and so every level: the
    criteria are fixed at the start (to add one, close the group and start another on the same order).

    The shared decision is computed by a worker and stored here with the gold state it reflects (`figures`,
    `gold_state`, `wanted`/`done` as for AuditPlanFigures; calibration/audits/group_figures.py); no request computes
    it.
    """

    eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="audit_plan_groups")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="audit_plan_groups")
    agent_version = models.CharField(max_length=200, blank=True)
    k = models.PositiveSmallIntegerField()
    confidence = models.FloatField()
    alpha_pass = models.FloatField()
    alpha_fail = models.FloatField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The shared decision as the worker last stored it (group_figures.SharedFigures.as_dict()), null until then.
    wanted = models.PositiveBigIntegerField(default=1)
    done = models.PositiveBigIntegerField(default=0)
    gold_state = models.CharField(max_length=64, blank=True)
    figures = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    requested_at = models.DateTimeField(default=timezone.now)

    workspace_path = "eval_set__workspace"

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"audit of {self.k} criteria {self.pk} on {self.eval_set.name}"

    @property
    def is_current(self) -> bool:
        return self.figures is not None and self.done >= self.wanted


class AuditPlan(models.Model):
    """A lead's audit of one gating criterion on a release candidate (issue 22): gold on a random prefix of
    the candidate's own outputs, combined with the judge's verdicts on all of them (calibration/audits/).

    It follows the audit order of the candidate's labeling queue (labeling.AuditOrder; several plans on one
    eval set share it), restricted to `agent_version`'s outputs when one is set. The figures (estimate,
    interval, forecast) are computed from the labels by a worker and stored (AuditPlanFigures); the decision is
    kept once first reached (AuditPlanDecision). The
    thresholds default to the gating mark's policy and may only be stricter. One open plan per criterion,
    eval set, agent version and judge config; closing keeps the row.
    """

    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="audit_plans")
    eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="audit_plans")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="audit_plans")
    agent_version = models.CharField(max_length=200, blank=True)  # "": every output of the eval set
    order = models.ForeignKey(AuditOrder, on_delete=models.PROTECT, related_name="plans")

    class Design(models.TextChoices):
        STRATIFIED = "stratified", "Stratified by the judge's verdict"
        UNIFORM = "uniform", "One random order"

    # uniform: a random prefix of the order. stratified (stats/audit_strata.py): the same prefix (releases blind
    # to the judge, issue 41), tested as the judge's PASS outputs and the rest, each in the order's own sequence.
    design = models.CharField(max_length=16, choices=Design.choices, default=Design.UNIFORM)
    # stratified only, both frozen: the stratum of each output of the population in order position (one digit,
    # 0 judged PASS when the plan started, 1 the rest), and the stratum of each label released, in release order.
    strata = models.TextField(blank=True)
    path = models.TextField(blank=True)

    @property
    def released_of(self) -> tuple[int, int]:
        """(released, of): how many outputs the queue may hand out, of how many. A stratified plan releases through
        its path (the order's own count stays where it was), so the order's count alone said "0 of 150" on the plans
        list beside 36 labeled."""
        if self.design == self.Design.STRATIFIED:
            return len(self.path), len(self.strata)
        return self.order.released, self.order.size

    class Predictor(models.TextChoices):
        VERDICT = "verdict", "The judge's verdict (one bit per output)"
        JURY = "jury", "The jury: the vote share of the judge's samples, and any extra judge configs"

    # What the uniform design's tests read beside gold, chosen at the start and never changed: plans started before
    # the jury predictor (issue 38) keep "verdict", so their decisions do not move. A jury plan's signals are frozen
    # in AuditPlanSignal rows (the plan's own judge first, then the extra configs the lead picked). A stratified
    # plan reads the verdict (its two strata).
    predictor = models.CharField(max_length=16, choices=Predictor.choices, default=Predictor.VERDICT)
    min_pass_rate = models.FloatField()
    confidence = models.FloatField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The shared audit it was started in (issue 37 item 3), whose stored levels the gate reads it at; null alone.
    group = models.ForeignKey(AuditPlanGroup, null=True, blank=True, on_delete=models.PROTECT, related_name="plans")

    workspace_path = "eval_set__workspace"

    objects = AuditPlanQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["criterion", "eval_set", "agent_version", "judge_config"],
                condition=Q(closed_at__isnull=True),
                name="one_open_audit_plan",
            )
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        agent = f" ({self.agent_version})" if self.agent_version else ""
        return f"audit plan {self.pk}: {self.criterion.key} on {self.eval_set.name}{agent}"


class AuditPlanSignal(models.Model):
    """One signal of a jury audit plan (issue 38), frozen when the plan started: one judge config's vote share on
    each output of the plan's population, in order position (calibration/audits/plan_signals.py).

    Read once at the start, before the first label, from that config's own verdicts only (the provenance rule), so
    a re-run of a judge after the start never moves the plan's tests. Stored compactly: `values` holds N float64
    (little-endian; NaN where the config has no usable sample), 800 kB per signal on 100,000 outputs, out of the
    plan's row so that lists of plans never read it. Position 0 is the plan's own judge config; the extra configs
    the lead picked follow in the lead's order.
    """

    plan = models.ForeignKey(AuditPlan, on_delete=models.CASCADE, related_name="signals")
    position = models.PositiveSmallIntegerField()
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="+")
    values = models.BinaryField()
    missing = models.PositiveIntegerField()  # outputs without a usable sample (NaN in `values`)
    samples = models.PositiveIntegerField()  # the config's usable samples over every output, for the page

    workspace_path = "plan__eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["plan", "position"], name="one_signal_per_position"),
            models.UniqueConstraint(fields=["plan", "judge_config"], name="one_signal_per_judge_config"),
        ]
        ordering = ["plan", "position"]

    def __str__(self) -> str:
        return f"audit plan {self.plan_id}'s signal {self.position}"


class AuditPlanDecision(models.Model):
    """An audit plan's decision, kept when its figures first read decided at the plan's own thresholds (issue 41).

    From then on it is the plan's decision: a later gold change (a dispute, a reviewer's overrule) is shown beside
    it, with what today's gold reads, and never moves it. Written once: the plan is the primary key, so a second
    writer's insert fails and the first decision stands (calibration/audits/kept.py). It keeps what it was reached
    on: the label it came at, the labeled outputs' gold then, in the plan's order, and its digest, the figures, and
    the plan's thresholds and design.
    """

    class Outcome(models.TextChoices):
        PASS = "PASS", "PASS"
        FAIL = "FAIL", "FAIL"

    plan = models.OneToOneField(AuditPlan, primary_key=True, on_delete=models.PROTECT, related_name="kept_decision")
    decided = models.CharField(max_length=4, choices=Outcome.choices)
    decided_by = models.CharField(max_length=8)  # "exact" or "test" (audit_stats)
    at_label = models.PositiveIntegerField()  # the label of the plan's order the decision came at
    n_labeled = models.PositiveIntegerField()  # the labeled prefix read when it was kept (at_label or more)
    # [output id, gold or null while pending] of each output of that prefix, in the plan's order; and a sha256 of
    # the pairs sorted by output id, so an unchanged gold state is recognised without reading them.
    gold = models.JSONField(default=list)
    gold_digest = models.CharField(max_length=64)
    # The figures when it was kept: lower, upper, estimate, n_labeled, n_gold, n_pending, n_not_applicable, N.
    figures = models.JSONField(default=dict)
    # The policy it was decided on: the plan's thresholds and design (a plan's never change; kept with it anyway).
    min_pass_rate = models.FloatField()
    confidence = models.FloatField()
    design = models.CharField(max_length=16, choices=AuditPlan.Design.choices)
    decided_at = models.DateTimeField(default=timezone.now)

    workspace_path = "plan__eval_set__workspace"

    def __str__(self) -> str:
        return f"audit plan {self.plan_id} decided {self.decided} at label {self.at_label}"


class AuditPlanFigures(models.Model):
    """An audit plan's figures as a Celery worker last computed them (issue 37), at one pair of thresholds: the
    plan's own (the row the pages, Home, the API and `audit_plan show` read) or a gate's stricter ones.

    Nothing on the request path computes a decision or a forecast: readers show this row and how fresh it is.
    `wanted` counts the gold and label changes seen for the plan (bumped after each commit that touched them,
    never decreasing); `done` is the `wanted` a computation started from, so the row is behind while
    done < wanted. `gold_state` is the content digest of everything the figures were computed from
    (calibration/data/content_cache.py's digest of the gold, the verdicts, the thresholds and the order): the gate
    decides only when it equals the digest of what it reads now. One UPDATE writes figures, state and times
    together, so a worker killed mid-computation leaves the previous figures whole (calibration/audits/
    stored_figures.py).
    """

    plan = models.ForeignKey(AuditPlan, on_delete=models.CASCADE, related_name="stored_figures")
    min_pass_rate = models.FloatField()
    confidence = models.FloatField()
    wanted = models.PositiveBigIntegerField(default=1)
    done = models.PositiveBigIntegerField(default=0)
    gold_state = models.CharField(max_length=64, blank=True)
    n_gold = models.PositiveIntegerField(default=0)  # settled gold items (PASS, FAIL, N/A) the figures read
    figures = models.JSONField(null=True, blank=True)  # AuditFigures.as_dict(); null until first computed
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)  # the last computation's time in the worker
    computations = models.PositiveIntegerField(default=0)  # how many ran: a burst of changes should cost a few
    requested_at = models.DateTimeField(default=timezone.now)  # the last time a computation was asked for

    workspace_path = "plan__eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["plan", "min_pass_rate", "confidence"], name="one_figures_per_thresholds")
        ]

    def __str__(self) -> str:
        return f"audit plan {self.plan_id}'s figures at {self.min_pass_rate:g}/{self.confidence:g}"

    @property
    def is_current(self) -> bool:
        """Computed from every change seen so far (the gate checks the content digest besides)."""
        return self.figures is not None and self.done >= self.wanted


def gate_scope_only() -> list[str]:
    # Named by migration 0005, from when the token lived here (api.models.GateToken now): the scopes it gave.
    return ["gate"]


class ReportFigures(models.Model):
    """A calibration report's rows as a Celery worker last computed them (issue 37), for one eval set x rubric
    version x judge config x agent version ("" for all): what the report's pages show on a large eval set, where
    loading the labels and computing the intervals takes seconds (calibration/report/stored_report.py).

    `wanted` and `done` count changes as AuditPlanFigures' do (calibration/data/worker_figures.py); `core` is the
    pickled compose.ReportCore, written with its state, code digest and times by one UPDATE, so a worker killed
    mid-computation leaves the previous rows whole. `code` is the digest of the code that computed them
    (content_cache.code_digest): rows of another version of the code are never shown.
    """

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="+")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="+")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="+")
    agent_version = models.CharField(max_length=200, blank=True)  # "" : every agent version
    wanted = models.PositiveBigIntegerField(default=1)
    done = models.PositiveBigIntegerField(default=0)
    core = models.BinaryField(null=True, blank=True)  # pickled compose.ReportCore; null until first computed
    code = models.CharField(max_length=64, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    computations = models.PositiveIntegerField(default=0)
    requested_at = models.DateTimeField(default=timezone.now)

    workspace_path = "eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["eval_set", "rubric_version", "judge_config", "agent_version"], name="one_report_figures"
            )
        ]

    def __str__(self) -> str:
        return f"report figures of eval set {self.eval_set_id} x {self.rubric_version_id} x {self.judge_config_id}"


class GateResult(models.Model):
    """One decision of the release gate, from the command line, over HTTP or from the gate page, kept for the
    record."""

    class Decision(models.TextChoices):
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        UNDECIDED = "undecided", "Cannot decide"

    class Source(models.TextChoices):
        CLI = "cli", "Command line"
        HTTP = "http", "HTTP API"
        WEB = "web", "Gate page"

    # Whose gate it was: set even when nothing the caller named exists (its names are kept below).
    workspace = models.ForeignKey("evals.Workspace", on_delete=models.PROTECT, related_name="gate_results")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    source = models.CharField(max_length=8, choices=Source.choices)
    # Names as they were asked for, kept even if an object is later renamed or was unknown.
    eval_set_name = models.CharField(max_length=200)
    rubric_ref = models.CharField(max_length=310)
    judge_name = models.CharField(max_length=200)
    agent_version = models.CharField(max_length=200, blank=True)
    eval_set = models.ForeignKey(EvalSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rubric_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="gate_results"
    )
    judge_config = models.ForeignKey(
        JudgeConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="gate_results"
    )
    # What the caller asked for, to tighten the lead's policy (null: nothing, the lead's values applied).
    # Results from before the policy was stored hold the thresholds the caller chose then. The thresholds
    # that applied to each criterion are in `result`.
    min_pass_rate = models.FloatField(null=True, blank=True)
    max_error_rate = models.FloatField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    binding_criterion = models.CharField(max_length=100, blank=True)
    met_count = models.PositiveIntegerField(default=0)
    gating_count = models.PositiveIntegerField(default=0)
    # The gate's JSON answer exactly as it was given.
    result = models.JSONField(default=dict)
    reason = models.TextField(blank=True)
    # The API token that asked over HTTP; by name, since the API sits above calibration.
    token = models.ForeignKey("api.GateToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    # Who ran it on the gate page (the web source); the command line and HTTP leave it empty.
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "workspace"

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["-created_at"])]

    def __str__(self) -> str:
        return f"gate {self.decision} for {self.rubric_ref} on {self.eval_set_name}"

    @property
    def exit_code(self) -> int:
        codes: dict[str, int] = {self.Decision.PASSED: 0, self.Decision.FAILED: 1}
        return codes.get(self.decision, 2)

    @property
    def undecided_because(self) -> str:
        """The reason as a page shows it after "Cannot decide:": the stored reason keeps the answer's own
        "undecided: " (what CI and the API read), which beside the label would say it twice."""
        return self.reason.removeprefix("undecided: ")
