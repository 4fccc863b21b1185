"""Probe results where calibration is decided: beside kappa on the report, with the mark, at the gate.

The results are judging's (judging/probes/); this module picks the probe run that applies, which is the
newest complete probe run of the report's eval set, rubric version and judge config, and lays its
figures out for the report's JSON, CSV and text, the gating mark's snapshot, and the gate's check of a
mark that requires a clean probe run.
"""

from __future__ import annotations

from django.db.models import Count, Max

from calibration.data import content_cache
from calibration.models import GatingMark
from evals.models import EvalSet, RubricVersion
from judging.models import JudgeConfig
from judging.probes.registry import MEANINGFUL
from judging.probes.render import text_lines
from judging.probes.results import ProbeResults, latest_complete, results_of

# The CSV columns of each probe of the run, after the report's own columns (`{probe}` is the probe's name).
NO_RUN = "no complete probe run of this judge on this eval set and rubric version"
CSV_PROBE_COLUMNS = ("role", "pass_to_fail", "pass_n", "fail_to_pass", "fail_n", "errors")


def probe_results(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig
) -> ProbeResults | None:
    """The newest complete probe run's results for this calibration (None if there is none)."""
    probe_run = latest_complete(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if probe_run is None:
        return None
    # Verdicts are only ever added, never changed: the arms' verdict counts and newest ids stand for their content.
    arms = list(
        probe_run.judge_runs.order_by("pk")
        .annotate(n=Count("verdicts"), newest=Max("verdicts__pk"))
        .values_list("pk", "status", "n", "newest")
    )
    names = (probe_run.eval_set.name, probe_run.rubric_version.ref, probe_run.judge_config.name)
    return content_cache.computed("probe-results", (probe_run.pk, names, arms), lambda: results_of(probe_run))


def report_key(results: ProbeResults | None) -> dict | None:
    """The report's `probes` key."""
    return results.as_dict() if results is not None else None


def snapshot(results: ProbeResults | None, key: str) -> dict:
    """What a gating mark keeps of the probe results it relied on, for one criterion ({} without a run)."""
    if results is None:
        return {}
    found = results.criterion(key)
    return {
        "probe_run": results.probe_run,
        "created_at": results.created_at.isoformat(),
        "outputs": results.outputs,
        "clean": results.clean_for(key),
        "criterion": found.as_dict() if found else None,
    }


def unclean_reason(results: ProbeResults | None, key: str) -> str | None:
    """Why `key` has no clean probe run (None: it has one)."""
    if results is None:
        return NO_RUN
    if results.clean_for(key):
        return None
    found = results.criterion(key)
    codes = found.warning_codes if found else []
    if codes:
        return f"probe run #{results.probe_run} warns {', '.join(codes)}"
    return f"no neutral probe of probe run #{results.probe_run} measured it"


def gate_refusal(rubric_version: RubricVersion, judge_config: JudgeConfig) -> str | None:
    """Which gating criteria require a clean probe run and have none now, and why (None: every one has).

    Each mark is checked against the newest complete probe run on its own calibration eval set, so a probe
    run made after the mark that shows the judge fooled stops the criterion from gating.
    """
    marks = (
        GatingMark.objects.for_instrument(rubric_version, judge_config)
        .filter(require_clean_probes=True)
        .select_related("criterion", "calibration_eval_set", "rubric_version", "judge_config")
        .order_by("criterion__order")
    )
    problems, by_set = [], {}
    for mark in marks:
        if mark.calibration_eval_set_id not in by_set:
            by_set[mark.calibration_eval_set_id] = probe_results(
                eval_set=mark.calibration_eval_set, rubric_version=mark.rubric_version, judge_config=mark.judge_config
            )
        reason = unclean_reason(by_set[mark.calibration_eval_set_id], mark.criterion.key)
        if reason:
            problems.append(f"{mark.criterion.key} ({reason})")
    return "; ".join(problems) or None


def status_label(results: ProbeResults | None, key: str) -> str:
    """A few words for a criterion's probe status, e.g. in the gating form's choices."""
    if results is None:
        return "no probe run"
    if results.clean_for(key):
        return "probes clean"
    found = results.criterion(key)
    return ", ".join(found.warning_codes) if found and found.warnings else "probes not measured"


def csv_columns(results: ProbeResults | None) -> list[str]:
    if results is None:
        return []
    columns = ["probe_run", "probe_clean", "probe_warnings"]
    for probe in results.probes:
        columns += [f"probe_{probe['name']}_{part}" for part in CSV_PROBE_COLUMNS]
    return columns


def csv_cells(results: ProbeResults | None, key: str) -> dict:
    if results is None:
        return {}
    found = results.criterion(key)
    cells: dict = {
        "probe_run": results.probe_run,
        "probe_clean": results.clean_for(key),
        "probe_warnings": " | ".join(found.warning_codes) if found else "",
    }
    for cell in found.cells if found else ():
        prefix = f"probe_{cell.probe}_"
        cells.update(
            {
                prefix + "role": "control" if cell.role == MEANINGFUL else "neutral",
                prefix + "pass_to_fail": cell.pass_to_fail.count,
                prefix + "pass_n": cell.pass_to_fail.n,
                prefix + "fail_to_pass": cell.fail_to_pass.count,
                prefix + "fail_n": cell.fail_to_pass.n,
                prefix + "errors": cell.errors,
            }
        )
    return cells


def text(results: ProbeResults | None) -> list[str]:
    """The report's text ends with these lines."""
    if results is None:
        return ["", f"probes: {NO_RUN} (python manage.py probe_judge)"]
    return ["", *text_lines(results)]
