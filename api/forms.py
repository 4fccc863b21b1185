"""The lead's form for a new token (on the gate page): its project, rubric version, scopes, eval sets and the
judge configs it may push verdicts into. Everything it offers and checks is of one workspace, the page's: the token
is made there (issue 36)."""

from __future__ import annotations

import fnmatch

from django import forms

from evals import record_fields as f
from evals.models import EvalSet, RubricVersion, Workspace
from evals.problems import RecordError
from evals.validators import validate_name
from evals.workspaces import in_workspace
from formats.models import TraceBinding
from judging.models import JudgeConfig

from .models import GateToken, TokenScope

JUDGE_NAME_MAX = 200  # JudgeConfig.name


class TokenForm(forms.Form):
    project = forms.CharField(
        max_length=200, validators=[validate_name], help_text="Who uses the token, e.g. the CI pipeline's name."
    )
    rubric_version = forms.ModelChoiceField(
        RubricVersion.objects.none(),  # the workspace's, set in __init__
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

    trace_eval_set = forms.ModelChoiceField(
        EvalSet.objects.none(),  # the workspace's, set in __init__
        required=False,
        label="Traces go into",
        help_text="With the traces scope: the one eval set its OpenTelemetry traces become outputs of.",
    )
    trace_case_id_attribute = forms.CharField(
        max_length=200,
        required=False,
        initial="session.id",
        label="Case id attribute",
        help_text="The span or resource attribute that names the case, e.g. session.id; empty: the trace id.",
    )
    trace_agent_version_attribute = forms.CharField(
        max_length=200,  # TraceBinding.agent_version_attribute
        required=False,
        initial="service.version",
        label="Version attribute",
        help_text="The root span or resource attribute that names the agent version, e.g. service.version; empty: "
        "every output's version is default.",
    )
    trace_root_span_name = forms.CharField(
        max_length=200,  # TraceBinding.root_span_name
        required=False,
        label="Root span name",
        help_text="The span whose run is the output, e.g. support-agent (the first span of that name); empty: the "
        "span without a parent.",
    )
    trace_root_span_kind = forms.ChoiceField(
        choices=TraceBinding.RootKind.choices,
        required=False,
        label="Root span kind",
        help_text="With or without a name, the first span of this kind: agent (openinference.span.kind AGENT or "
        "gen_ai.operation.name invoke_agent), chain (CHAIN), server (span kind SERVER).",
    )
    trace_sample_one_in = forms.IntegerField(
        min_value=1,
        initial=1,
        required=False,
        label="Keep one trace in",
        help_text="1 keeps every trace. Traces a judge marked FAIL, and those the keep rule matches, are always kept.",
    )
    trace_keep_rule = forms.CharField(
        max_length=700,
        required=False,
        label="Always keep traces where",
        help_text="An attribute and its value, e.g. user.tier=enterprise; empty for none.",
    )

    def __init__(self, *args, workspace: Workspace, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        # Only this workspace's choices: another workspace's id is refused as one that does not exist.
        rubric_field = self.fields["rubric_version"]
        trace_field = self.fields["trace_eval_set"]
        assert isinstance(rubric_field, forms.ModelChoiceField) and isinstance(trace_field, forms.ModelChoiceField)
        rubric_field.queryset = (
            in_workspace(RubricVersion, workspace).select_related("rubric").exclude(status=RubricVersion.Status.RETIRED)
        )
        trace_field.queryset = in_workspace(EvalSet, workspace)

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
        runs = (
            in_workspace(JudgeConfig, self.workspace)
            .filter(name__in=names)
            .exclude(backend=JudgeConfig.Backend.IMPORTED)
        )
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
        traces = TokenScope.TRACES in (data.get("scopes") or [])
        eval_set = data.get("trace_eval_set")
        if traces and eval_set is None:
            self.add_error("trace_eval_set", "A traces token sends its traces into one eval set: choose it.")
        elif eval_set is not None and not traces:
            self.add_error(
                "trace_eval_set", "Only a token with the traces scope sends traces: tick traces, or leave this empty."
            )
        elif eval_set is not None and not fnmatch.fnmatchcase(eval_set.name, data.get("eval_set_pattern") or ""):
            self.add_error("trace_eval_set", f"{eval_set.name} does not match the token's eval sets pattern.")
        for field in ("trace_root_span_name", "trace_root_span_kind"):
            if data.get(field) and not traces:
                self.add_error(
                    field, "Only a token with the traces scope has a root span: tick traces, or leave this empty."
                )
        return data

    def clean_trace_root_span_name(self) -> str:
        name = self.cleaned_data["trace_root_span_name"].strip()
        if not name.isprintable():
            raise forms.ValidationError(
                "A span name is printable text (no tabs, line breaks or control characters), as the agent names its "
                "span, e.g. support-agent."
            )
        return name

    def clean_trace_agent_version_attribute(self) -> str:
        attribute = self.cleaned_data["trace_agent_version_attribute"].strip()
        if not attribute.isprintable() or " " in attribute:
            raise forms.ValidationError(
                "An attribute name is one word of printable characters, e.g. service.version or deployment.version."
            )
        return attribute

    def clean_trace_keep_rule(self) -> tuple[str, str]:
        rule = self.cleaned_data["trace_keep_rule"].strip()
        if not rule:
            return ("", "")
        attribute, equals, value = rule.partition("=")
        if not equals or not attribute.strip() or len(attribute.strip()) > 200 or len(value.strip()) > 500:
            raise forms.ValidationError("Write the rule as attribute=value, e.g. user.tier=enterprise.")
        return (attribute.strip(), value.strip())

    def trace_binding(self) -> TraceBinding | None:
        """The binding a traces token gets (unsaved), from the cleaned form."""
        data = self.cleaned_data
        if data.get("trace_eval_set") is None:
            return None
        attribute, value = data["trace_keep_rule"]
        return TraceBinding(
            eval_set=data["trace_eval_set"],
            case_id_attribute=data["trace_case_id_attribute"].strip(),
            root_span_name=data["trace_root_span_name"],
            root_span_kind=data["trace_root_span_kind"],
            agent_version_attribute=data["trace_agent_version_attribute"],
            sample_one_in=data["trace_sample_one_in"] or 1,
            keep_attribute=attribute,
            keep_value=value,
        )

    def clean_eval_set_pattern(self) -> str:
        pattern = self.cleaned_data["eval_set_pattern"].strip()
        if not pattern or not pattern.isprintable():
            raise forms.ValidationError("Give a pattern of printable characters, e.g. rc-* (or * for every eval set).")
        return pattern
