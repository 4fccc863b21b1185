"""Number formatting for calibration pages: an undefined statistic is shown as such, never as 0."""

from __future__ import annotations

from django import template

register = template.Library()


def _number(value) -> bool:
    # None is undefined; "" is what a template gets for a key a stored record lacks (a mark's figures from
    # before a key existed): both are shown as missing, never as 0 and never as a server error.
    return isinstance(value, int | float) and not isinstance(value, bool)


@register.filter
def stat(value, digits: int = 2) -> str:
    """0.71428 -> "0.71"; None (or anything not a number) -> "—"."""
    if not _number(value):
        return "—"
    return f"{value:.{int(digits)}f}"


@register.filter
def pct(value) -> str:
    if not _number(value):
        return "—"
    return f"{value:.0%}"


@register.filter
def interval(value, digits: int = 2) -> str:
    if not value:
        return ""
    low, high = value
    return f"{low:.{int(digits)}f} – {high:.{int(digits)}f}"


@register.filter
def interval_pct(value) -> str:
    """(0.881, 0.979) -> "88% – 98%"."""
    if not value:
        return ""
    low, high = value
    return f"{low:.0%} – {high:.0%}"
