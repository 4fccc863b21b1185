"""A probe run's results as lines of text: `probe_judge` prints them, the calibration text report appends them."""

from __future__ import annotations

from .flips import MAX_FLIP_RATE, MIN_DETECTION_RATE, ProbeCell, Rate
from .registry import MEANINGFUL
from .results import ProbeResults


def _rate(r: Rate) -> str:
    if not r.n:
        return "-"
    assert r.ci is not None
    return f"{r.count}/{r.n} [{r.ci[0]:.2f}, {r.ci[1]:.2f}]"


def _cell(key: str, c: ProbeCell) -> str:
    role = "control" if c.role == MEANINGFUL else "neutral"
    if c.role == MEANINGFUL:
        moved = f"{'caught ' + _rate(c.pass_to_fail):<37}"
    else:
        moved = f"{_rate(c.pass_to_fail):<18} {_rate(c.fail_to_pass):<18}"
    return f"{key:<24} {c.probe:<16} {role:<8} {moved} {c.errors:>6} {c.other:>6}"


def text_lines(results: ProbeResults) -> list[str]:
    sample = f", a sample of {results.sample_size}" if results.sample_size else ""
    lines = [
        f"Probe run {results.probe_run} ({results.status}) of judge {results.judge_config} on {results.eval_set}, "
        f"rubric {results.rubric_version}: {results.outputs} outputs{sample}",
        f"{'criterion':<24} {'probe':<16} {'role':<8} {'PASS->FAIL':<18} {'FAIL->PASS':<18} {'errors':>6} {'other':>6}",
    ]
    lines.append("-" * len(lines[-1]))
    for crit in results.criteria:
        for cell in crit.cells:
            lines.append(_cell(crit.criterion, cell))
        for w in crit.warnings:
            lines.append(f"    ! {w.code}: {w.message}")
        for n in crit.notes:
            lines.append(f"    - {n.message}")
        if not crit.cells:
            lines.append(f"{crit.criterion:<24} (no probe declares a role for it)")
    lines += [
        "",
        "flips k/n [95% Wilson interval]; ERROR on either side is never a flip (errors), N/A or can't tell is other. "
        f"Warnings: a neutral probe's interval above {MAX_FLIP_RATE:g}, a control's below {MIN_DETECTION_RATE:g} "
        "(provisional; docs/judging.md).",
    ]
    return lines
