"""Number formatting for calibration pages: an undefined statistic is shown as such, never as 0."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def stat(value, digits: int = 2) -> str:
    """0.71428 -> "0.71"; None -> "—"."""
    if value is None:
        return "—"
    return f"{value:.{int(digits)}f}"


@register.filter
def pct(value) -> str:
    if value is None:
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
