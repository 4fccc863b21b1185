"""The lead's form for a new token (on the gate page): its project, rubric version, scopes, eval sets and the
judge configs it may push verdicts into."""

from __future__ import annotations

from django import forms

from evals import record_fields as f
from evals.models import RubricVersion
from evals.problems import RecordError
from evals.validators import validate_name
from judging.models import JudgeConfig

from .models import GateToken, TokenScope

JUDGE_NAME_MAX = 200  # JudgeConfig.name


class TokenForm(forms.Form):
    project = forms.CharField(
        max_length=200, validators=[validate_name], help_text="Who uses the token, e.g. the CI pipeline's name."
    )
    rubric_version = forms.ModelChoiceField(
        RubricVersion.objects.select_related("rubric").exclude(status=RubricVersion.Status.RETIRED),
        label="Rubric version",
        help_text="The token may only gate on, push verdicts for, judge with and report on this rubric version.",
    )
    scopes = forms.MultipleChoiceField(
        choices=TokenScope.choices,
        initial=[TokenScope.GATE],
        widget=forms.CheckboxSelectMultiple,
        help_text="What it may do: the gate, and the JSON API's endpoints (/api/docs). No more than its job needs.",
    )
    eval_set_pattern = forms.CharField(
        max_length=200,
        initial=GateToken.ANY_EVAL_SET,
        label="Eval sets",
        help_text="Only eval sets whose names match, e.g. rc-* (* any characters, ? one); * for every one.",
    )

    judges = forms.CharField(
        required=False,
        label="Judge configs for pushed verdicts",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="With the push scope: the imported judge configs it may push verdicts into, one name a line (a new "
        "name is created, backend imported, by its first push). Never a model or instrument config: their verdicts "
        "come only from their own runs. Empty: it pushes outputs only.",
    )

    def clean_project(self) -> str:
        project = self.cleaned_data["project"].strip()
        if not project:
            raise forms.ValidationError("Name the project.")
        return project

    def clean_judges(self) -> list[str]:
        names: list[str] = []
        for line in filter(None, (line.strip() for line in self.cleaned_data["judges"].splitlines())):
            try:
                name = f.ident(line, "judge", JUDGE_NAME_MAX)
            except RecordError as exc:
                raise forms.ValidationError(f"{line!r} {exc.message}") from None
            if name not in names:
                names.append(name)
        runs = JudgeConfig.objects.filter(name__in=names).exclude(backend=JudgeConfig.Backend.IMPORTED)
        refused = [f"{c.name} ({c.get_backend_display()})" for c in runs.order_by("name")]
        if refused:
            raise forms.ValidationError(
                f"{', '.join(refused)}: a model or instrument config's verdicts come only from its own judge runs, "
                "so no token may push into it. Name an imported judge config, or a new name."
            )
        return names

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        if data.get("judges") and TokenScope.PUSH not in (data.get("scopes") or []):
            self.add_error(
                "judges", "Only a token with the push scope pushes verdicts: tick push, or leave this empty."
            )
        return data

    def clean_eval_set_pattern(self) -> str:
        pattern = self.cleaned_data["eval_set_pattern"].strip()
        if not pattern or not pattern.isprintable():
            raise forms.ValidationError("Give a pattern of printable characters, e.g. rc-* (or * for every eval set).")
        return pattern
