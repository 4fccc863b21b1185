"""Forms for labeling, adjudication and the queue. Messages are written for the person at the keyboard."""

from __future__ import annotations

from typing import cast

from django import forms

from evals.models import Criterion, GoldPolicy, HumanOutcome, RubricVersion
from evals.transcript import MAX_QUOTES, NONE_QUOTE, Transcript
from evals.validators import validate_name

# A quote is a pointer into the transcript, not an essay; this bounds what one save can store.
EVIDENCE_MAX_CHARS = 4000
RATIONALE_MAX_CHARS = 4000

OUTCOME_WORDS = ", ".join(label for _, label in HumanOutcome.choices)


def _outcome_field(required_message: str) -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=HumanOutcome.choices,
        error_messages={
            "required": required_message,
            "invalid_choice": f"“%(value)s” is not an outcome. Use one of {OUTCOME_WORDS}.",
        },
    )


class LabelForm(forms.Form):
    """One criterion of one annotation: outcome plus an evidence quote the server finds in the transcript."""

    criterion = forms.CharField(max_length=100, error_messages={"required": "Which criterion? None was sent."})
    outcome = _outcome_field("Pick an outcome to save this criterion (PASS, FAIL, N/A or Can't tell).")
    evidence = forms.CharField(
        required=False,
        max_length=EVIDENCE_MAX_CHARS,
        error_messages={"max_length": "Quote at most %(limit_value)d characters: the part that decides it."},
    )
    # Further quotes, one per line (a criterion may rest on several places of the transcript).
    more_evidence = forms.CharField(
        required=False,
        max_length=EVIDENCE_MAX_CHARS * (MAX_QUOTES - 1),
        error_messages={"max_length": "The other quotes are too long: quote only the parts that decide it."},
    )
    rubric_version = forms.IntegerField(
        error_messages={"required": "The page did not say its rubric version; reload it.", "invalid": "Reload."}
    )
    # What the page showed ("draft", a label revision, or "none"): a correction from a stale page is refused.
    based_on = forms.CharField(required=False, max_length=20)

    def __init__(self, *args, criteria: dict[str, Criterion], transcript: Transcript, **kwargs):
        super().__init__(*args, **kwargs)
        self.criteria = criteria
        self.transcript = transcript

    def clean_criterion(self) -> Criterion:
        key = self.cleaned_data["criterion"]
        criterion = self.criteria.get(key)
        if criterion is None:
            known = ", ".join(self.criteria)
            raise forms.ValidationError(f"Unknown criterion “{key}” for this rubric version (it has: {known}).")
        return criterion

    def clean_evidence(self) -> str:
        evidence = self.cleaned_data["evidence"].strip()
        if evidence.upper() == NONE_QUOTE:
            return NONE_QUOTE
        if evidence and not self.transcript.contains(evidence):
            raise forms.ValidationError(
                "This quote is not in the transcript. Copy it exactly from the input, a tool call or its result, "
                "or the response (select the text to quote it), or write NONE. The reference is not quotable."
            )
        return evidence

    def clean_more_evidence(self) -> list[str]:
        quotes = [line.strip() for line in self.cleaned_data["more_evidence"].splitlines() if line.strip()]
        if len(quotes) > MAX_QUOTES - 1:
            raise forms.ValidationError(f"At most {MAX_QUOTES} quotes per criterion: keep the ones that decide it.")
        for i, quote in enumerate(quotes, start=2):
            if quote.upper() == NONE_QUOTE:
                raise forms.ValidationError(f"Quote {i} is NONE: NONE means there is nothing to quote; remove it.")
            if len(quote) > EVIDENCE_MAX_CHARS:
                raise forms.ValidationError(f"Quote {i} is longer than {EVIDENCE_MAX_CHARS} characters.")
            if not self.transcript.contains(quote):
                raise forms.ValidationError(
                    f"Quote {i} (“{quote[:60]}”) is not in the transcript. Copy it exactly from the input, a tool "
                    "call or its result, or the response."
                )
        return quotes

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        more = data.get("more_evidence") or []
        if more and data.get("evidence") == NONE_QUOTE:
            self.add_error("more_evidence", "The first quote says NONE but others follow: remove NONE or the others.")
        elif more and not data.get("evidence") and "evidence" not in self.errors:
            data["evidence"], data["more_evidence"] = more[0], more[1:]  # the first quote goes first
        return data


class SubmitForm(forms.Form):
    rubric_version = forms.IntegerField(
        error_messages={"required": "The page did not say its rubric version; reload it.", "invalid": "Reload."}
    )


class AdjudicationForm(forms.Form):
    """The gold outcome for one (output, criterion), with the reason; `based_on` guards against lost updates."""

    outcome = _outcome_field("Pick the gold outcome.")
    rationale = forms.CharField(
        max_length=RATIONALE_MAX_CHARS,
        error_messages={"required": "Write why: a rationale is required for every gold label."},
    )
    based_on = forms.IntegerField(min_value=0, error_messages={"required": "Reload the page.", "invalid": "Reload."})

    def clean_rationale(self) -> str:
        rationale = self.cleaned_data["rationale"].strip()
        if not rationale:
            raise forms.ValidationError("Write why: a rationale is required for every gold label.")
        return rationale


class _RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return f"{obj.ref} ({obj.get_status_display()})"


class QueueMoveForm(forms.Form):
    rubric_version = _RubricVersionChoice(
        queryset=RubricVersion.objects.none(),
        error_messages={"invalid_choice": "Choose a rubric version that exists, is not retired and has criteria."},
    )
    reason = forms.CharField(required=False, max_length=1000)

    def __init__(self, *args, versions, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["rubric_version"]).queryset = versions


class RubricVersionForm(forms.Form):
    """The new version's name and instruction; its criteria are CriterionFormSet."""

    version = forms.CharField(
        max_length=100,
        validators=[validate_name],
        help_text="A new name, e.g. 2: a saved version never changes.",
    )
    instruction = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


class CriterionForm(forms.Form):
    order = forms.IntegerField(min_value=0, max_value=10_000, help_text="Criteria are shown in this order.")
    key = forms.SlugField(max_length=100)
    definition = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    pass_example = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    fail_example = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    gold_policy = forms.ChoiceField(
        choices=GoldPolicy.choices,
        # The default as the initial value too: the empty row for a new criterion posts it, and a row whose
        # fields all equal their initial values is an untouched row the formset skips, not a criterion.
        initial=GoldPolicy.MAJORITY,
        required=False,  # empty is the default, majority
        help_text=(
            "How two or more annotators' labels become gold when no reviewer decided; items it cannot settle "
            "wait in Adjudicate."
        ),
    )


CriterionFormSet = forms.formset_factory(CriterionForm, extra=1, can_delete=True, max_num=100, absolute_max=200)
