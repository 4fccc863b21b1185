"""The calibration report as JSON, CSV and text: one code path for the command and the pages."""

from __future__ import annotations

import csv
import io
import json

from calibration.report import robustness
from calibration.report.compose import CalibrationReport, SegmentedReport
from calibration.report.rows import REPORT_KEYS, CriterionReport
from calibration.stats.metrics import fmt
from evals.csv_cells import csv_safe

# CSV cannot hold a pair, so each interval becomes two columns; warnings become one cell.
CSV_COLUMNS = []
for _key in REPORT_KEYS:
    CSV_COLUMNS += [f"{_key}_low", f"{_key}_high"] if _key.endswith("_ci") else [_key]


def to_json(report: CalibrationReport | SegmentedReport) -> str:
    return json.dumps(report.as_dict(), indent=2, ensure_ascii=False)


def _csv_row(row: CriterionReport) -> dict:
    out = {}
    for key, value in row.as_dict().items():
        if key.endswith("_ci"):
            out[f"{key}_low"], out[f"{key}_high"] = value if value else ("", "")
        elif key == "warnings":
            out[key] = csv_safe(" | ".join(w["message"] for w in value))
        else:
            # Text such as a criterion key may start like a formula; numbers (a negative kappa) stay numbers.
            out[key] = "" if value is None else csv_safe(value) if isinstance(value, str) else value
    return out


def to_csv(report: CalibrationReport | SegmentedReport) -> str:
    buffer = io.StringIO()
    segmented = isinstance(report, SegmentedReport)
    # After the report's own columns: the probe run's, one set per probe (calibration/report/robustness.py).
    extra = [] if isinstance(report, SegmentedReport) else robustness.csv_columns(report.probes)
    columns = (["agent_version"] if segmented else []) + CSV_COLUMNS + extra
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    if isinstance(report, SegmentedReport):
        for seg in report.segments:
            for row in seg.rows:
                writer.writerow({"agent_version": csv_safe(seg.agent_version), **_csv_row(row)})
    else:
        for row in report.rows:
            writer.writerow({**_csv_row(row), **robustness.csv_cells(report.probes, row.criterion)})
    return buffer.getvalue()


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _text_rows(rows: tuple[CriterionReport, ...]) -> list[str]:
    head = (
        f"{'criterion':<24} {'n':>5} {'kappa':>7} {'95% CI':>16} {'tier':<12} {'FALSE PASS':>10} {'false fail':>10} "
        f"{'true pass':>9} {'true fail':>9} {'error':>5} {'abst':>4} {'n/a':>4} {'pend':>4} {'no ev':>5} "
        f"{'pair k':>7} {'pairs':>5} {'alpha':>6} {'A-B k':>6} {'(n)':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        j, b, h, g, rates, itself = r.judge, r.buckets, r.human, r.gold, r.rates, r.self_agreement
        kappa = "no data" if j.n == 0 else fmt(j.kappa)
        lines.append(
            f"{r.criterion:<24} {j.n:>5} {kappa:>7} {_ci(j.kappa_ci):>16} {r.tier + ('*' if r.gating else ''):<12} "
            f"{j.false_pass:>10} {j.false_fail:>10} {j.true_pass:>9} {j.true_fail:>9} {b.judge_error:>5} "
            f"{b.judge_abstain:>4} {b.not_applicable:>4} {b.pending_gold:>4} {b.evidence_not_found:>5} "
            f"{fmt(h.pairwise_kappa):>7} {h.pairs:>5} {fmt(h.alpha):>6} {fmt(h.kappa):>6} "
            f"{h.n:>6}"
        )
        lines.append(
            f"    gold policy {r.gold_policy}: {g.labeled_items} labeled items, {g.gold_ties} ties, "
            f"{g.awaiting_gold} without gold yet; people's quotes found only outside the response (in the input "
            f"or a tool call): {r.human_quotes_outside_response}"
        )
        if j.n:
            lines.append(
                f"    judge {r.in_words}; balanced accuracy {fmt(rates.balanced_accuracy)} "
                f"{_ci(rates.balanced_accuracy_ci)}, "
                f"F1 {fmt(rates.f1)} {_ci(rates.f1_ci)}; catches {_ci(rates.tnr_ci)}, passes {_ci(rates.tpr_ci)}"
            )
        if itself.samples > 1:
            lines.append(
                f"    judge against itself ({itself.samples} samples, {itself.n} items): alpha "
                f"{fmt(itself.alpha)} {_ci(itself.alpha_ci)}; against gold: kappa {fmt(j.kappa)}"
            )
        for w in r.warnings:
            lines.append(f"    ! {w.message}")
    return lines


def _audit_plans_text(eval_set: str, plans: tuple[dict, ...]) -> list[str]:
    """The audit plans on the eval set, as the JSON's `audit_plans` holds them; nothing when it has none."""
    if not plans:
        return []
    head = (
        f"{'plan':>5} {'criterion':<24} {'judge':<20} {'agent version':<14} {'state':<6} {'decided':<7} "
        f"{'rule':<15} {'labeled':>11} {'interval':>16} {'estimate':>8}"
    )
    lines = ["", f"Audit plans on {eval_set} as a release candidate (each open one, and the latest closed one):"]
    lines += [head, "-" * len(head)]
    for p in plans:
        rule = f">= {p['min_pass_rate']:g} at {p['confidence']:g}"
        labeled = f"{p['n_labeled']} of {p['N']}"
        lines.append(
            f"{p['plan']:>5} {p['criterion']:<24} {p['judge']:<20} {p['agent_version'] or 'all':<14} "
            f"{'open' if p['open'] else 'closed':<6} {p['decided'] or 'not yet':<7} {rule:<15} "
            f"{labeled:>11} {_ci(tuple(p['interval'])):>16} {fmt(p['estimate']):>8}"
        )
    lines += [
        "rule: the plan's minimum pass rate at its confidence; decided: PASS or FAIL by the exact rule or the "
        "anytime-valid test, whose interval this is (the decision rests on it); labeled: the labeled start of the "
        "plan's random order, pending gold included; estimate: PPI++, for reading. Read now, from today's gold.",
    ]
    return lines


def to_text(report: CalibrationReport | SegmentedReport) -> str:
    head = (
        f"Calibration of judge {report.judge_config} (model {report.model_id or 'n/a'}) against gold on eval set "
        f"{report.eval_set}, rubric {report.rubric_version}"
    )
    lines = [head]
    if report.split_note:  # the JSON's split_note: without it a reader would take held-out figures for the whole set
        lines.append(f"measured on the {report.split_note}")
    if isinstance(report, SegmentedReport):
        lines.append(f"computed {report.computed_at:%Y-%m-%d %H:%M:%S %Z}, split by agent version")
        for seg in report.segments:
            lines += ["", f"== agent version {seg.agent_version}", *_text_rows(seg.rows)]
        lines += ["", "mean of per-segment kappas:"]
        for key, m in report.mean_kappas().items():
            counted = f"{m['segments_with_kappa']} of {m['segments']} segments"
            lines.append(f"  {key:<24} {fmt(m['mean_kappa'])}  ({counted})")
    else:
        scope = f", agent version {report.agent_version}" if report.agent_version else ""
        lines.append(f"computed {report.computed_at:%Y-%m-%d %H:%M:%S %Z}{scope}")
        lines += ["", *_text_rows(report.rows), *robustness.text(report.probes)]
        lines += _audit_plans_text(report.eval_set, report.audit_plans)
    lines += [
        "",
        "* gating. kappa: judge vs gold over items both call PASS/FAIL; 95% CI: percentile bootstrap over items.",
        "FALSE PASS = judge PASS where gold is FAIL (the dangerous cell). catches = TNR (true fail / gold FAIL), "
        "passes = TPR (true pass / gold PASS), PASS the positive class, with 95% Wilson intervals.",
        "pair k: mean Cohen's kappa over the annotator pairs (pairs) who labeled the same items; alpha: "
        "Krippendorff (nominal) over all annotations; A-B k: annotator A vs B over the items exactly two people "
        "labeled.",
    ]
    return "\n".join(lines)
