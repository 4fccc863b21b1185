"""Outcomes in people's words: "N/A" and "Can't tell" on every page; the stored words stay in files and the API."""

from __future__ import annotations

from django import template

from evals.models import HumanOutcome

register = template.Library()

# The judge's extra outcome reads the same for people (ERROR is its own outcome, never a FAIL).
WORDS = {**dict(HumanOutcome.choices), "ERROR": "ERROR"}


@register.filter
def outcome_words(value) -> str:
    """NOT_APPLICABLE -> "N/A", ABSTAIN -> "Can't tell"; anything else as it is ("" for None)."""
    if value is None:
        return ""
    return WORDS.get(str(value), str(value))
