"""A watch on production traffic (issue 39) and what it keeps: each output's draw, the band after each audit label,
and the alarms. The statistics are calibration/stats/watch/ (pure); watch/feed.py feeds them from these rows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.models import GatingMark
from evals.models import Criterion, EvalSet, Output, RubricVersion
from judging.models import JudgeConfig, JudgeRun


class WatchQuerySet(models.QuerySet):
    def active(self) -> WatchQuerySet:
        """Watches not stopped: the ones the periodic job updates."""
        return self.filter(stopped_at__isnull=True)


class Watch(models.Model):
    """One production eval set x rubric version x criterion x judge config, watched from `started_at` on.

    The settings are fixed at the start (the statistics' alpha is spent over the watch's whole life): a lead who
    wants other ones stops it and starts a new watch. `tpr_lower`/`tnr_lower` are the calibration's lower bounds,
    taken from the gating mark's report row (its `tpr_ci`/`tnr_ci`) unless the lead gave them; `bounds_source` says
    which. `state` is the statistics' WatchState (to_json), `fed_position` the last output fed to it.
    """

    eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="watches")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="watches")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="watches")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="watches")
    gating_mark = models.ForeignKey(GatingMark, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    minimum = models.FloatField()  # the release's minimum pass rate
    minimum_source = models.CharField(max_length=300)
    audit_share = models.FloatField()  # p
    alpha = models.FloatField()
    tpr_lower = models.FloatField()
    tnr_lower = models.FloatField()
    bounds_source = models.CharField(max_length=300)
    # Outputs with an id above this are the ones that arrived after the start (Output ids come from one sequence).
    outputs_before = models.BigIntegerField(default=0)
    # The highest Output id drawn so far: an update reads only what lies above it (less a window, watch/feed.py).
    drawn_through = models.BigIntegerField(default=0)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    started_at = models.DateTimeField(auto_now_add=True)
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    stopped_at = models.DateTimeField(null=True, blank=True)
    state = models.JSONField(default=dict)
    # Counters of what the state has taken (the state holds them too; here for lists and queries).
    outputs_fed = models.PositiveIntegerField(default=0)
    labels_fed = models.PositiveIntegerField(default=0)
    fed_position = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(null=True, blank=True)  # the last update that ran (fed or not)
    # Why the last update could not do part of its work (the judge could not run, the queue moved); "" when fine.
    problem = models.TextField(blank=True)

    workspace_path = "eval_set__workspace"

    objects = WatchQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["eval_set", "criterion", "judge_config"],
                condition=Q(stopped_at__isnull=True),
                name="one_active_watch_per_instrument",
            ),
            models.CheckConstraint(condition=Q(audit_share__gt=0, audit_share__lte=1), name="watch_share_in_0_1"),
            models.CheckConstraint(condition=Q(alpha__gt=0, alpha__lt=1), name="watch_alpha_in_0_1"),
        ]
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"watch {self.pk} on {self.eval_set_id}"

    @property
    def is_active(self) -> bool:
        return self.stopped_at is None


class WatchOutput(models.Model):
    """One arrived output of a watched eval set, in arrival order (`position`), and whether it goes to the audit.

    `draw` is a uniform number from the operating system's CSPRNG, drawn when the output is first seen, before its
    verdict or gold exist; `audited` is draw < p, stored with it, so the audit share can be checked afterwards and
    nothing that happens later can change which outputs were audited.
    """

    class Verdict(models.TextChoices):
        PASS = "PASS", "PASS"
        FAIL = "FAIL", "FAIL"
        # ERROR, Can't tell, N/A, or no verdict at all from a finished run: never a FAIL.
        UNJUDGED = "unjudged", "no usable verdict"

    watch = models.ForeignKey(Watch, on_delete=models.CASCADE, related_name="outputs")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="watch_draws")
    position = models.PositiveIntegerField()
    draw = models.FloatField()
    audited = models.BooleanField()
    judge_run = models.ForeignKey(JudgeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)  # "" until read
    released = models.BooleanField(default=False)  # to the labeling queue (audited ones only)
    gold = models.CharField(max_length=16, blank=True)  # the settled gold the update fed ("" until then)
    fed = models.BooleanField(default=False)
    seen_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "watch__eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["watch", "output"], name="one_draw_per_watched_output"),
            models.UniqueConstraint(fields=["watch", "position"], name="one_output_per_watch_position"),
        ]
        indexes = [models.Index(fields=["watch", "fed", "position"])]
        ordering = ["watch", "position"]

    def __str__(self) -> str:
        return f"output {self.output_id} at {self.position} of watch {self.watch_id}"


class WatchPoint(models.Model):
    """The bands after one audit label, for the page's plot: the pass rate's, the judge's TPR's and TNR's."""

    watch = models.ForeignKey(Watch, on_delete=models.CASCADE, related_name="points")
    labels = models.PositiveIntegerField()
    outputs = models.PositiveIntegerField()
    estimate = models.FloatField(null=True)
    lower = models.FloatField()
    upper = models.FloatField()
    tpr_estimate = models.FloatField(null=True)
    tpr_lower = models.FloatField()
    tpr_upper = models.FloatField()
    tnr_estimate = models.FloatField(null=True)
    tnr_lower = models.FloatField()
    tnr_upper = models.FloatField()
    at = models.DateTimeField(auto_now_add=True)

    workspace_path = "watch__eval_set__workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["watch", "labels"], name="one_point_per_watch_label")]
        ordering = ["watch", "labels"]

    def __str__(self) -> str:
        return f"band of watch {self.watch_id} at {self.labels} audit labels"


class WatchAlarm(models.Model):
    """An alarm the statistics raised (calibration/stats/watch Alarm), with its words as they were shown."""

    watch = models.ForeignKey(Watch, on_delete=models.CASCADE, related_name="alarms")
    what = models.CharField(max_length=16)  # "pass rate", "TPR" or "TNR"
    bound = models.FloatField()
    estimate = models.FloatField(null=True)
    lower = models.FloatField()
    upper = models.FloatField()
    at_labels = models.PositiveIntegerField()
    at_outputs = models.PositiveIntegerField()
    since_labels = models.PositiveIntegerField()
    since_outputs = models.PositiveIntegerField()
    evidence = models.FloatField()
    advice = models.TextField()
    message = models.TextField()
    fired_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "watch__eval_set__workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["watch", "what"], name="one_alarm_per_watch_test")]
        ordering = ["watch", "fired_at", "id"]

    def __str__(self) -> str:
        return f"{self.what} alarm of watch {self.watch_id}"
