"""An audit group's stored shared decision as the CLI and the API answer it (JSON) and as a lead reads it (text).
Reads what the worker stored (group_figures.py) and each plan's stored forecast; computes nothing."""

from __future__ import annotations

import json

from calibration.audits.group_figures import release_words, stored_group
from calibration.audits.groups import group_record
from calibration.audits.stored_figures import stored_figures
from calibration.models import AuditPlanGroup


def answer(group: AuditPlanGroup) -> dict:
    """The group, its levels, the stored shared decision with its freshness, and each criterion's own forecast
    (its plan's stored figures, at alpha per side: a PASS of the release comes no sooner than the largest)."""
    fresh = stored_group(group)
    plans = list(group.plans.for_figures().order_by("criterion__order", "criterion__key"))
    own = stored_figures(plans)
    forecasts = {
        plan.criterion.key: (
            None
            if (f := own[plan.pk].figures) is None or f.decided
            else {"expected_more_labels": f.expected_more_labels, "p90_labels": f.forecast.p90_labels}
        )
        for plan in plans
    }
    return group_record(group) | {
        "shared": fresh.figures,
        "release": release_words(fresh.figures) if fresh.figures else None,
        "criterion_forecasts": forecasts,
        "freshness": fresh.freshness(),
    }


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def text(a: dict) -> str:
    agent = f", agent version {a['agent_version']}" if a["agent_version"] else ""
    lines = [
        f"audit group {a['group']}: {a['k']} criteria on {a['eval_set']}{agent}, judge {a['judge']}; one sample",
        f"levels fixed at the start: PASS at {a['alpha_pass']:.4g}, FAIL at {a['alpha_fail']:.4g} (alpha / {a['k']}) "
        f"at confidence {a['confidence']:g}",
    ]
    g = a["shared"]
    if g is None:
        return "\n".join([*lines, f"shared decision {a['freshness']['words']}"])
    lines.append(f"release: {a['release']}")
    for row in g.get("criteria", []):
        decided = f"{row['decided']} at label {row['decided_at']}" if row["decided"] else "open"
        forecast = a["criterion_forecasts"].get(row["criterion"])
        ahead = f"; its own forecast about {forecast['expected_more_labels']} more labels" if forecast else ""
        lines.append(
            f"  {row['criterion']} (plan {row['plan']}, minimum {row['minimum']:g}): {decided}; interval "
            f"[{_f(row['lower'])}, {_f(row['upper'])}] (lower at alpha, upper at alpha / k); labeled "
            f"{row['n_labeled']} of {row['N']} ({row['n_gold']} gold, {row['n_pending']} pending){ahead}"
        )
    if not g.get("decided") and g.get("criteria"):
        lines.append(
            "a PASS of the release comes when its last open criterion passes (no sooner than the largest forecast "
            "above); a FAIL of any one may decide it sooner (a forecast of the release itself is not computed yet)"
        )
    lines.append(f"shared decision {a['freshness']['words']}")
    return "\n".join(lines)


def show(group: AuditPlanGroup, fmt: str) -> str:
    a = answer(group)
    return json.dumps(a, indent=2) if fmt == "json" else text(a)
