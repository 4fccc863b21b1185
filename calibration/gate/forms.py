"""Forms of the lead's decisions: a reason, marking a criterion gating, and running the release gate from the browser
(the domain functions re-check everything; the HTTP gate's body is api's GateIn)."""

from __future__ import annotations

from typing import cast

from django import forms

from calibration.fields import RateField, RubricVersionChoice, WorkspaceForm
from calibration.report.robustness import status_label
from calibration.stats.policy import (
    DECIDE_ON,
    DEFAULT_CONFIDENCE,
    DEFAULT_DECIDE_ON,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    FIELDS,
    GateThresholds,
    Tightening,
)
from evals.models import EvalSet, Output, RubricVersion
from evals.workspaces import in_workspace
from judging.models import JudgeConfig

REASON_HELP = "Why, in words someone can check later (this is kept with the approval)."


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text=REASON_HELP)

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Write a reason.")
        return reason


class GatingForm(ReasonForm):
    """Mark one criterion as gating, with the gate policy it must meet. The choices carry each criterion's
    tier on this report."""

    criterion = forms.ChoiceField()
    override = forms.BooleanField(
        required=False, label="Override: gate on it although it is not in the gate tier (the reason must say why)"
    )
    min_pass_rate = RateField(
        required=False,
        initial=DEFAULT_MIN_PASS_RATE,
        label="Minimum pass rate",
        help_text=f"The lower bound named in Decide on must reach it (default {DEFAULT_MIN_PASS_RATE:g}).",
    )
    max_error_rate = RateField(
        required=False,
        initial=DEFAULT_MAX_ERROR_RATE,
        label="Maximum ERROR rate",
        help_text=f"Judge ERRORs among all verdicts (default {DEFAULT_MAX_ERROR_RATE:g}).",
    )
    confidence = RateField(
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
        # Beside each tier, what the newest probe run says (calibration/report/robustness.py).
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


class GateRunForm(TighteningMixin, WorkspaceForm):
    """The gate page: the same parameters as `manage.py gate` and the HTTP API, picked from what exists.
    The thresholds are optional and may only tighten the lead's policy (the gate refuses a looser one)."""

    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Release candidate (eval set)",
        error_messages={"invalid_choice": "Choose an eval set that exists."},
    )
    rubric_version = RubricVersionChoice(
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
    min_pass_rate = RateField(required=False, label="Minimum pass rate", help_text="Only tightens the lead's.")
    max_error_rate = RateField(required=False, label="Maximum ERROR rate", help_text="Only tightens the lead's.")
    confidence = RateField(required=False, label="Confidence", help_text="Only tightens the lead's.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A list, as the report offers: a version typed by hand that has no outputs would gate nothing.
        versions = (
            in_workspace(Output, self.workspace)
            .order_by("agent_version")
            .values_list("agent_version", flat=True)
            .distinct()
        )
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + [
            (v, v) for v in versions
        ]

    def threshold_fields(self) -> list:
        return [self[name] for name in FIELDS]
