"""Forms of an audit plan: starting one on a candidate, and releasing its next outputs to annotators."""

from __future__ import annotations

from typing import cast

from django import forms
from django.db.models import Exists, OuterRef

from calibration.fields import RateField, WorkspaceForm
from calibration.models import AuditPlan, GatingMark
from evals.models import EvalSet, Output
from evals.workspaces import in_workspace
from judging.models import JudgeConfig, Verdict


class _MarkChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: GatingMark) -> str:
        return (
            f"{obj.criterion.key} of {obj.rubric_version.ref}, judged by {obj.judge_config.name} "
            f"(minimum {obj.min_pass_rate:g} at {obj.confidence:g})"
        )


class AuditPlanForm(WorkspaceForm):
    """Start an audit plan (calibration/audits/plans.py start_plan, which re-checks everything): a gating mark names
    the criterion and the judge config it gates with, and its policy is where the thresholds start."""

    gating = _MarkChoice(
        GatingMark.objects.active().select_related("criterion", "rubric_version__rubric", "judge_config"),
        label="Gating criterion and judge",
        error_messages={"invalid_choice": "Choose a criterion that gates (its gating mark not revoked)."},
    )
    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Release candidate (eval set)",
        error_messages={"invalid_choice": "Choose an eval set that exists."},
    )
    agent_version = forms.ChoiceField(
        required=False,
        label="Agent version",
        help_text="Audit only this agent version's outputs (it must be the candidate's).",
        error_messages={"invalid_choice": "Choose an agent version that has outputs."},
    )
    design = forms.ChoiceField(
        required=False,
        choices=AuditPlan.Design.choices,
        initial=AuditPlan.Design.UNIFORM,
        label="Design",
        help_text=(
            "Uniform (the default): a prefix of one random order. Stratified: the same releases, counted per "
            "side of the judge's verdict (needs its verdicts; measured to cost more labels on most sets)."
        ),
    )
    extra_judges = forms.ModelMultipleChoiceField(
        JudgeConfig.objects.order_by("name"),
        required=False,
        label="Extra judge configs (the jury)",
        help_text=(
            "Uniform only, optional: configs whose vote share joins the judge's as the audit's predictor. Listed: "
            "configs with verdicts of a gating criterion; each needs verdicts of the chosen criterion on the "
            "candidate; read once, now, and frozen."
        ),
        error_messages={"invalid_choice": "Choose judge configs of this workspace."},
    )
    min_pass_rate = RateField(required=False, label="Minimum pass rate", help_text="Empty: the mark's; only stricter.")
    confidence = RateField(required=False, label="Confidence", help_text="Empty: the mark's; only stricter.")

    def clean_design(self) -> str:
        return self.cleaned_data["design"] or AuditPlan.Design.UNIFORM

    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        label="Seed of the order",
        help_text="Empty: a random one, kept with the order. The candidate's queue reuses an existing order.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Grouped by eval set, so the lead picks a version the candidate has; start_plan checks it is.
        pairs = (
            in_workspace(Output, self.workspace)
            .order_by("case__eval_set__name", "agent_version")
            .values_list("case__eval_set__name", "agent_version")
            .distinct()
        )
        groups: dict[str, list[tuple[str, str]]] = {}
        for eval_set, version in pairs:
            groups.setdefault(eval_set, []).append((version, version))
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + list(
            groups.items()
        )
        # The jury's choices: only configs with verdicts of a criterion that gates here (the plan's criterion always
        # does), one query. The eval set and criterion are picked on the same page, so the finer rule (verdicts of
        # that criterion on that candidate) stays start_plan's, with its own words; validation still accepts any
        # config of the workspace, so a config outside the list is refused there and not as "invalid".
        extra = cast(forms.ModelMultipleChoiceField, self.fields["extra_judges"])
        gating = in_workspace(GatingMark.objects.active(), self.workspace).values("criterion")
        with_verdicts = Verdict.objects.filter(judge_config=OuterRef("pk"), criterion__in=gating)
        listed = in_workspace(JudgeConfig.objects.order_by("name"), self.workspace).filter(Exists(with_verdicts))
        extra.widget.choices = [(jc.pk, jc.name) for jc in listed]


class AuditReleaseForm(forms.Form):
    """ "Label these k next": how many more positions of the plan's order the labeling queue may hand out."""

    k = forms.IntegerField(
        min_value=1,
        label="Label these next",
        error_messages={"min_value": "Release at least one output.", "invalid": "Enter a whole number of outputs."},
    )

    def __init__(self, *args, left: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.left = left

    def clean_k(self) -> int:
        k = self.cleaned_data["k"]
        if k > self.left:
            raise forms.ValidationError(
                f"Only {self.left} outputs of the order are not yet released; release at most {self.left}."
                if self.left
                else "Every output of the order is already released."
            )
        return k


class _MarksChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: GatingMark) -> str:
        return _MarkChoice.label_from_instance(self, obj)  # type: ignore[arg-type]


class AuditGroupForm(AuditPlanForm):
    """Audit every gating criterion of a candidate on one sample (groups.start_group, which re-checks everything):
    the gating marks to audit together, every current one of the workspace ticked to start with (a lead unticks
    the ones of other rubric versions or judges, or a criterion not to audit now). No stricter thresholds: each plan
    takes its mark's minimum, and the group the strictest of their confidences."""

    gating = None  # type: ignore[assignment]  # replaced by `marks`: several criteria, one judge
    min_pass_rate = None  # type: ignore[assignment]
    confidence = None  # type: ignore[assignment]
    marks = _MarksChoice(
        GatingMark.objects.active().select_related("criterion", "rubric_version__rubric", "judge_config"),
        widget=forms.CheckboxSelectMultiple,
        label="Gating criteria to audit together",
        error_messages={
            "required": "Tick at least one gating criterion.",
            "invalid_choice": "Choose criteria that gate (their gating marks not revoked).",
            "invalid_pk_value": "Choose criteria that gate (their gating marks not revoked).",
        },
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = cast(forms.ModelMultipleChoiceField, self.fields["marks"])
        # Narrowed to the workspace by WorkspaceForm already; grouped here by rubric version and judge.
        field.queryset = field.queryset.order_by(  # type: ignore[union-attr]
            "rubric_version_id", "judge_config__name", "criterion__order", "criterion__key"
        )
        if not self.is_bound:
            self.initial["marks"] = [m.pk for m in field.queryset]

    def clean_marks(self) -> list[GatingMark]:
        marks = list(self.cleaned_data["marks"])
        if len({(m.rubric_version_id, m.judge_config_id) for m in marks}) > 1:
            raise forms.ValidationError(
                "One audit reads one rubric version's labels with one judge: tick criteria of a single rubric version "
                "and judge."
            )
        return marks
