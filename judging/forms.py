"""Forms for judge configs (the lead's page and `add_judge` share one) and for starting a run."""

from __future__ import annotations

import re
from typing import cast
from urllib.parse import urlparse

from django import forms
from django.conf import settings

from evals.models import EvalSet, RubricVersion, Workspace
from evals.workspaces import in_workspace

from .allowlist import ENV_NAME_RE, base_url_refusal, key_var_refusal, url_problem
from .backends import Misconfigured
from .backends.instruments import validate_instruments
from .models import JudgeConfig
from .probes import available
from .probes.runs import MAX_SAMPLE
from .prompt import TEMPLATE_VERSIONS

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")
# Bounds that catch typos (a timeout of 6000 s, 500 samples) without getting in the way.
MAX_SAMPLES = 15
MAX_CONCURRENCY = 256
MAX_TIMEOUT_S = 600.0
MAX_RETRIES = 10
MAX_OUTPUT_TOKENS = 200_000

CONFIG_FIELDS = ("name", *JudgeConfig.SETTINGS)


class JudgeConfigForm(forms.ModelForm):
    instruments = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text='Per criterion key, e.g. {"concise": {"kind": "max_length", "max_words": 120}}.',
    )

    def __init__(self, *args, workspace: Workspace | None = None, **kwargs):
        """`workspace`: the one a new config goes to; its names are the ones a new name must differ from."""
        super().__init__(*args, **kwargs)
        if workspace is not None:
            self.instance.workspace = workspace

    class Meta:
        model = JudgeConfig
        fields = CONFIG_FIELDS
        help_texts = {
            "api_key_env": "The NAME of the environment variable that holds the key (e.g. OPENAI_API_KEY), "
            "never the key itself; one the operator allows in ICEWATER_JUDGE_KEY_VARS.",
            "base_url": "Leave empty for the provider's own API; e.g. http://localhost:11434/v1 for Ollama. "
            "Its host must be one the operator allows in ICEWATER_JUDGE_BASE_URL_HOSTS.",
            "model_id": "Pinned, e.g. gpt-4.1-2025-04-14 rather than gpt-4.1.",
        }

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not NAME_RE.match(name):
            raise forms.ValidationError(
                "Use letters, digits and . _ @ - only (no spaces), starting with a letter or digit."
            )
        # Names are unique within a workspace (the constraint names a field the form does not show, so Django
        # would not check it and the save would fail with an integrity error).
        workspace_id = self.instance.workspace_id
        if workspace_id is not None:
            taken = JudgeConfig.objects.filter(workspace_id=workspace_id, name=name).exclude(pk=self.instance.pk)
            if taken.exists():
                raise forms.ValidationError("This workspace already has a judge config of this name.")
        return name

    def clean_api_key_env(self) -> str:
        value = self.cleaned_data.get("api_key_env", "").strip()
        if value and not ENV_NAME_RE.match(value):
            raise forms.ValidationError(
                "Give the NAME of an environment variable (like OPENAI_API_KEY), not the key itself: "
                "keys are never stored."
            )
        problem = key_var_refusal(value, settings.JUDGE_KEY_VARS) if value else None
        if problem:
            raise forms.ValidationError(f"{problem}.")
        return value

    def clean_base_url(self) -> str:
        value = self.cleaned_data.get("base_url", "").strip()
        if value:
            parsed = urlparse(value)
            if parsed.username is not None or parsed.password is not None:
                raise forms.ValidationError(
                    "Must not carry credentials: put the key in the variable api_key_env names."
                )
            # The shared rule (allowlist.url_problem: http or https, a host, no whitespace or control
            # characters anywhere, which urlparse drops without a word), then the operator's hosts.
            problem = url_problem(value)
            if problem:
                raise forms.ValidationError(f"{problem[0].upper()}{problem[1:]}.")
            problem = base_url_refusal(value, settings.JUDGE_BASE_URL_HOSTS)
            if problem:
                raise forms.ValidationError(f"{problem}.")
        return value

    def clean_temperature(self) -> float:
        value = self.cleaned_data["temperature"]
        if not 0 <= value <= 2:
            raise forms.ValidationError("Must be between 0 and 2 (0 makes the judge as repeatable as it gets).")
        return value

    def clean_instruments(self) -> dict:
        value = self.cleaned_data.get("instruments")
        if value in (None, ""):
            return {}
        problems = validate_instruments(value)
        if problems:
            raise forms.ValidationError(problems)
        return value

    def clean_prompt_template_version(self) -> str:
        value = self.cleaned_data["prompt_template_version"]
        if value not in TEMPLATE_VERSIONS:
            raise forms.ValidationError(f"Unknown template; known: {', '.join(TEMPLATE_VERSIONS)}.")
        return value

    def clean(self) -> dict:
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        for field, low, high in (
            ("samples", 1, MAX_SAMPLES),
            ("max_concurrency", 1, MAX_CONCURRENCY),
            ("max_retries", 0, MAX_RETRIES),
            ("max_output_tokens", 1, MAX_OUTPUT_TOKENS),
            ("timeout_s", 0.1, MAX_TIMEOUT_S),
        ):
            value = data.get(field)
            if value is not None and not low <= value <= high:
                self.add_error(field, f"Must be between {low:g} and {high:g}.")
        backend = data.get("backend")
        if backend in (JudgeConfig.Backend.OPENAI, JudgeConfig.Backend.ANTHROPIC) and not data.get("model_id"):
            self.add_error("model_id", "A model backend needs a pinned model id.")
        if backend == JudgeConfig.Backend.ANTHROPIC:
            if not data.get("api_key_env"):
                self.add_error("api_key_env", "The Anthropic backend needs the name of the variable holding its key.")
            if data.get("temperature"):
                self.add_error(
                    "temperature", "The Anthropic Messages API this version speaks has no temperature: leave it at 0."
                )
        if (
            backend == JudgeConfig.Backend.OPENAI
            and not data.get("api_key_env")
            and not data.get("base_url")
            and "base_url" not in self.errors
            and "api_key_env" not in self.errors
        ):
            self.add_error(
                "api_key_env",
                "The provider's own API needs the name of the variable holding its key "
                "(only a local server at a base URL needs none).",
            )
        if backend == JudgeConfig.Backend.INSTRUMENT and not data.get("instruments"):
            self.add_error("instruments", "An instrument judge needs at least one instrument.")
        return data


class StartRunForm(forms.Form):
    """The choices are the workspace's only: a posted name or id of another workspace is an invalid choice."""

    eval_set = forms.ModelChoiceField(queryset=EvalSet.objects.none(), to_field_name="name")
    agent_version = forms.CharField(
        required=False, max_length=200, help_text="Leave empty to judge every agent version in the eval set."
    )
    rubric_version = forms.ModelChoiceField(queryset=RubricVersion.objects.none(), label="Rubric version")
    judge_config = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label="Judge")

    def __init__(self, *args, workspace: Workspace, **kwargs):
        super().__init__(*args, **kwargs)
        choices = {
            "eval_set": in_workspace(EvalSet, workspace).order_by("name"),
            "rubric_version": in_workspace(RubricVersion, workspace)
            .select_related("rubric")
            .exclude(status=RubricVersion.Status.RETIRED),
            "judge_config": in_workspace(JudgeConfig, workspace)
            .exclude(backend=JudgeConfig.Backend.IMPORTED)
            .order_by("name"),
        }
        for name, queryset in choices.items():
            cast(forms.ModelChoiceField, self.fields[name]).queryset = queryset


class StartProbeRunForm(StartRunForm):
    """Start a probe run: the scope of a judge run, the probes (all by default) and an optional sample size."""

    probes = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, help_text="Each is one more judge run.")
    sample = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SAMPLE,
        help_text="Probe this many outputs, drawn with a fixed seed (empty: every output).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        try:
            probes = available()
        except Misconfigured as exc:  # a bad ICEWATER_PROBES: say so where the lead looks, start nothing
            probes = {}
            self.registry_problem = str(exc)
        else:
            self.registry_problem = ""
        cast(forms.MultipleChoiceField, self.fields["probes"]).choices = [
            (p.name, f"{p.name}: {p.summary}") for p in probes.values()
        ]
        self.fields["probes"].initial = list(probes)

    def clean(self) -> dict:
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        if self.registry_problem:
            raise forms.ValidationError(self.registry_problem)
        return data
