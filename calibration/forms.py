"""Plain forms for the calibration pages; the domain functions re-check everything (the HTTP gate: GateIn)."""

from __future__ import annotations

import math
from typing import cast

from django import forms

from evals.models import EvalSet, Output, RubricVersion
from judging.models import JudgeConfig

from .models import AuditPlan, GatingMark
from .policy import (
    DECIDE_ON,
    DEFAULT_CONFIDENCE,
    DEFAULT_DECIDE_ON,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    FIELDS,
    GateThresholds,
    Tightening,
)
from .probes import status_label

REASON_HELP = "Why, in words someone can check later (this is kept with the approval)."


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text=REASON_HELP)

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Write a reason.")
        return reason


class _Rate(forms.FloatField):
    def to_python(self, value):
        value = super().to_python(value)
        if value is not None and (math.isnan(value) or math.isinf(value)):
            raise forms.ValidationError("Enter a finite number.")
        return value


class GatingForm(ReasonForm):
    """Mark one criterion as gating, with the gate policy it must meet. The choices carry each criterion's
    tier on this report."""

    criterion = forms.ChoiceField()
    override = forms.BooleanField(
        required=False, label="Override: gate on it although it is not in the gate tier (the reason must say why)"
    )
    min_pass_rate = _Rate(
        required=False,
        initial=DEFAULT_MIN_PASS_RATE,
        label="Minimum pass rate",
        help_text=f"The lower bound named in Decide on must reach it (default {DEFAULT_MIN_PASS_RATE:g}).",
    )
    max_error_rate = _Rate(
        required=False,
        initial=DEFAULT_MAX_ERROR_RATE,
        label="Maximum ERROR rate",
        help_text=f"Judge ERRORs among all verdicts (default {DEFAULT_MAX_ERROR_RATE:g}).",
    )
    confidence = _Rate(
        required=False,
        initial=DEFAULT_CONFIDENCE,
        label="Confidence",
        help_text=f"Of that lower bound (default {DEFAULT_CONFIDENCE:g}). CI may only tighten these three.",
    )

    decide_on = forms.ChoiceField(
        required=False,  # empty is the default, like the three thresholds
        choices=list(DECIDE_ON.items()),
        initial=DEFAULT_DECIDE_ON,
        label="Decide on",
        help_text="The audit (default) decides on gold from a random sample of each candidate (an audit plan) and "
        "waits until it has decided; it assumes nothing about the judge. The corrected bound accounts for the judge's "
        "own errors on this calibration and assumes they hold on each candidate.",
    )

    require_clean_probes = forms.BooleanField(
        required=False,
        label="Require a clean probe run",
        help_text="Refuse the mark, and later the gate, while the newest probe run on this eval set warns about "
        "the criterion or did not measure it.",
    )

    field_order = [
        "criterion",
        "override",
        "min_pass_rate",
        "max_error_rate",
        "confidence",
        "require_clean_probes",
        "reason",
    ]

    def __init__(self, *args, rows=(), probes=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tiers = {r.criterion: r.tier for r in rows if not r.gating}
        # Beside each tier, what the newest probe run says (calibration/probes.py).
        cast(forms.ChoiceField, self.fields["criterion"]).choices = [("", "choose a criterion")] + [
            (key, f"{key} ({tier}; {status_label(probes, key)})") for key, tier in self.tiers.items()
        ]

    def policy_fields(self) -> list:
        return [self[name] for name in (*FIELDS, "decide_on", "require_clean_probes")]

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        key = data.get("criterion")
        if key and self.tiers.get(key) != "gate" and not data.get("override"):
            self.add_error(
                "criterion",
                f"{key} is in the {self.tiers.get(key)} tier: only gate-tier criteria can gate. Tick override and "
                "write why if you must.",
            )
        if not set(FIELDS) & set(self.errors):
            try:  # a value left empty is the default
                given = {k: data[k] for k in FIELDS if data.get(k) is not None}
                data["policy"] = GateThresholds(**given, decide_on=data.get("decide_on") or DEFAULT_DECIDE_ON)
            except ValueError as exc:
                self.add_error(None, str(exc))
        return data


class CompareForm(forms.Form):
    eval_set = forms.ModelChoiceField(EvalSet.objects.all(), label="Calibration eval set")
    left_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    left_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")
    right_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    right_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        left = (data.get("left_rubric"), data.get("left_judge"))
        right = (data.get("right_rubric"), data.get("right_judge"))
        if None not in left and left == right:
            raise forms.ValidationError("Both sides are the same: pick another judge config or rubric version.")
        return data


class TighteningMixin(forms.Form):
    """cleaned_data["tightening"] from a form's three optional thresholds; whether they loosen the lead's policy
    is the gate's to check, since it knows the policy."""

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        if self.errors:
            return data
        try:
            data["tightening"] = Tightening(
                data.get("min_pass_rate"), data.get("max_error_rate"), data.get("confidence")
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc))
        return data


class _RefChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return f"{obj.ref} ({obj.get_status_display().lower()})"


class GateRunForm(TighteningMixin, forms.Form):
    """The gate page: the same parameters as `manage.py gate` and the HTTP API, picked from what exists.
    The thresholds are optional and may only tighten the lead's policy (the gate refuses a looser one)."""

    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Release candidate (eval set)",
        error_messages={"invalid_choice": "Choose an eval set that exists."},
    )
    rubric_version = _RefChoice(
        RubricVersion.objects.select_related("rubric").exclude(status=RubricVersion.Status.RETIRED),
        label="Rubric version",
        error_messages={"invalid_choice": "Choose a rubric version that exists and is not retired."},
    )
    judge_config = forms.ModelChoiceField(
        JudgeConfig.objects.order_by("name"),
        label="Judge config",
        error_messages={"invalid_choice": "Choose a judge config that exists."},
    )
    agent_version = forms.ChoiceField(
        required=False,
        label="Agent version",
        help_text="Gate only this agent version's outputs.",
        error_messages={"invalid_choice": "Choose an agent version that has outputs."},
    )
    min_pass_rate = _Rate(required=False, label="Minimum pass rate", help_text="Only tightens the lead's.")
    max_error_rate = _Rate(required=False, label="Maximum ERROR rate", help_text="Only tightens the lead's.")
    confidence = _Rate(required=False, label="Confidence", help_text="Only tightens the lead's.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A list, as the report offers: a version typed by hand that has no outputs would gate nothing.
        versions = Output.objects.order_by("agent_version").values_list("agent_version", flat=True).distinct()
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + [
            (v, v) for v in versions
        ]

    def threshold_fields(self) -> list:
        return [self[name] for name in FIELDS]


class DisputeForm(forms.Form):
    """Dispute the gold label of one output of a drilldown (the criterion is the drilldown's)."""

    output = forms.IntegerField(
        min_value=1,
        error_messages={
            "required": "Reload the page: the output is missing.",
            "invalid": "Reload the page: the output is missing.",
            "min_value": "Reload the page: the output is missing.",
        },
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Write why you doubt this gold label."},
    )
    # The gold revision the page showed (0: the annotators' gold); a newer one is not disputed unseen.
    gold_revision = forms.IntegerField(required=False, min_value=0)


class CaseFilterForm(forms.Form):
    """The eval set page's filters (GET). A bad value is reported, never silently dropped."""

    q = forms.CharField(required=False, max_length=200, label="Search case id and text")
    agent_version = forms.ChoiceField(required=False, label="Agent version")
    rubric_version = forms.ModelChoiceField(queryset=RubricVersion.objects.none(), required=False)
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), required=False, label="Judge config")
    show = forms.ChoiceField(required=False, label="Show")

    def __init__(self, *args, agent_versions: list[str], rubric_versions, judges, show_choices, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + [
            (v, v) for v in agent_versions
        ]
        rubric_version = cast(forms.ModelChoiceField, self.fields["rubric_version"])
        rubric_version.queryset, rubric_version.empty_label = rubric_versions, None
        judge = cast(forms.ModelChoiceField, self.fields["judge"])
        judge.queryset, judge.empty_label = judges, "Any judge"
        cast(forms.ChoiceField, self.fields["show"]).choices = show_choices

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        cleaned = self.cleaned_data
        if cleaned.get("show") in ("false-pass", "false-fail") and not cleaned.get("judge"):
            self.add_error("judge", "Choose a judge config: false passes and false fails are that judge's.")
        return cleaned


class _JudgeVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: JudgeConfig) -> str:
        return obj.name


class VersionCompareForm(forms.Form):
    """Two judge config versions on one calibration eval set's gold items (the workbench's comparison)."""

    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Calibration eval set",
        error_messages={"invalid_choice": "Choose an eval set that exists."},
    )
    rubric_version = _RefChoice(
        RubricVersion.objects.select_related("rubric"),
        label="Rubric version",
        error_messages={"invalid_choice": "Choose a rubric version that exists."},
    )
    a = _JudgeVersionChoice(
        JudgeConfig.objects.order_by("name"),
        label="A (before)",
        required=False,
        help_text="Empty: the version B was derived from.",
        error_messages={"invalid_choice": "Choose a judge config that exists for A."},
    )
    b = _JudgeVersionChoice(
        JudgeConfig.objects.order_by("name"),
        label="B (after)",
        error_messages={"invalid_choice": "Choose a judge config that exists for B."},
    )

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        if data.get("a") is None and data.get("b") is not None and "a" not in self.errors:
            data["a"] = data["b"].derived_from
            if data["a"] is None:
                raise forms.ValidationError(f"{data['b'].name} is a first version: choose A to compare it with.")
        if data.get("a") is not None and data.get("a") == data.get("b"):
            raise forms.ValidationError("A and B are the same judge config: pick two versions to compare.")
        return data


class GuidanceForm(forms.Form):
    """The judge-only instructions for one criterion (the guidance editor); the examples are ExampleFormSet."""

    instructions = forms.CharField(
        required=False,
        max_length=4000,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Instructions for the judge (people never see them)",
    )


class ExampleForm(forms.Form):
    """One few-shot example: an excerpt of a development output, gold's outcome and the quote that decides it."""

    output_id = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    outcome = forms.ChoiceField(choices=[("PASS", "PASS"), ("FAIL", "FAIL")])
    quote = forms.CharField(max_length=500, label="Quote (verbatim in the excerpt)")
    input = forms.CharField(required=False, max_length=4000, strip=False, widget=forms.Textarea(attrs={"rows": 2}))
    response = forms.CharField(max_length=4000, strip=False, widget=forms.Textarea(attrs={"rows": 3}))


ExampleFormSet = forms.formset_factory(ExampleForm, extra=0, can_delete=True, max_num=8, validate_max=True)


class _MarkChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: GatingMark) -> str:
        return (
            f"{obj.criterion.key} of {obj.rubric_version.ref}, judged by {obj.judge_config.name} "
            f"(minimum {obj.min_pass_rate:g} at {obj.confidence:g})"
        )


class AuditPlanForm(forms.Form):
    """Start an audit plan (calibration/audits.py start_plan, which re-checks everything): a gating mark names
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
    min_pass_rate = _Rate(required=False, label="Minimum pass rate", help_text="Empty: the mark's; only stricter.")
    confidence = _Rate(required=False, label="Confidence", help_text="Empty: the mark's; only stricter.")

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
            Output.objects.order_by("case__eval_set__name", "agent_version")
            .values_list("case__eval_set__name", "agent_version")
            .distinct()
        )
        groups: dict[str, list[tuple[str, str]]] = {}
        for eval_set, version in pairs:
            groups.setdefault(eval_set, []).append((version, version))
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + list(
            groups.items()
        )


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
