"""The probe results table, one render path for the probe run page and the calibration report."""

from __future__ import annotations

from django import template

from judging.probes.probe_pages import table_rows

register = template.Library()


@register.inclusion_tag("judging/_probe_table.html")
def probe_table(results, report_rows=None):
    """Criteria x probes; with `report_rows` (the calibration report's rows) kappa and tier beside them."""
    rows = table_rows(results, report_rows or ())
    columns = 2 + len(results.probes) + (2 if report_rows else 0)
    return {"results": results, "rows": rows, "beside_report": bool(report_rows), "columns": columns}


@register.filter
def ratio(rate) -> str:
    """A flip or detection rate as "k/n" ("—" without pairs)."""
    return f"{rate.count}/{rate.n}" if rate is not None and rate.n else "—"


@register.filter
def ci(rate) -> str:
    if rate is None or rate.ci is None:
        return "no PASS/FAIL pairs"
    return f"{rate.rate:.0%}, 95% interval {rate.ci[0]:.2f}–{rate.ci[1]:.2f}"
