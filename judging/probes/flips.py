"""Flip rates: how often a probe moved the judge's verdict, per criterion. Pure, no Django.

Each output of a probe run is judged twice per probe: as it is (the original) and probed. A pair is
(original verdict, probed verdict) of one output and criterion, each the majority of its samples.
Only pairs where both verdicts are PASS or FAIL count towards a rate:

- PASS->FAIL flip rate = pairs (PASS, FAIL) / pairs whose original is PASS;
- FAIL->PASS flip rate = pairs (FAIL, PASS) / pairs whose original is FAIL.

Both are reported with n and a Wilson interval (statsmodels' proportion_confint, method "wilson",
at CONFIDENCE). ERROR on either side is never a flip: the pair is counted in `errors` (the judge did
not answer; that says nothing about the probe). N/A or Can't tell on either side is counted in `other`.

For a neutral probe a flip is the judge being moved by what should not matter: FAIL->PASS is being
fooled (the dangerous direction: a regression passes), PASS->FAIL being penalized. For a meaningful
probe (a negative control, e.g. a planted wrong amount) the PASS->FAIL rate is the detection rate: the
share of passing outputs the planted flaw made the judge fail. Originals that already failed cannot
show a planted flaw and are not counted there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from statsmodels.stats.proportion import proportion_confint

from .registry import MEANINGFUL, NEUTRAL

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"
BINARY = (PASS, FAIL)

# PROVISIONAL (2026-12-15): the largest flip rate a neutral probe may show before a warning. A neutral
# change should move no verdict, but a model judge is not perfectly consistent and a probed request is a
# new request (the cache cannot answer it), so some flips are the noise of asking again, not bias. We
# tolerate up to 1 in 20, the conventional 5% error rate of a test; no essay in the background gives a
# figure. The warning fires on the interval's LOWER end, so only when the data show, with 95% confidence,
# more than that: 2 flips of 10 (lower end 0.057) or 5 of 40 (0.055) do; 1 of 10 or 4 of 40 do not.
MAX_FLIP_RATE = 0.05
# PROVISIONAL (2026-12-15): the detection rate a negative control must be able to reach. A planted wrong
# amount or a removed next step is the plainest FAIL there is; a judge that catches fewer than 4 in 5 of
# them cannot be trusted with the subtle ones. A product decision, not derived from data. The warning fires
# on the interval's UPPER end, so only when the data show, with 95% confidence, fewer: 0 caught of 5 (upper
# end 0.434) or 5 of 10 (0.763) do; 3 of 5 (0.882) does not yet.
MIN_DETECTION_RATE = 0.80
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Rate:
    count: int
    n: int
    rate: float | None  # None when n = 0
    ci: tuple[float, float] | None

    def as_dict(self) -> dict:
        return {"count": self.count, "n": self.n, "rate": self.rate, "ci": list(self.ci) if self.ci else None}


def rate(count: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    if not 0 <= count <= n:
        raise ValueError(f"need 0 <= count <= n, got {count} of {n}")
    if n == 0:
        return Rate(0, 0, None, None)
    low, high = proportion_confint(count, n, alpha=1 - confidence, method="wilson")
    # statsmodels can return -1e-17 or 1+1e-16 at the ends: a rate stays in [0, 1].
    return Rate(count, n, count / n, (max(0.0, float(low)), min(1.0, float(high))))


@dataclass(frozen=True)
class ProbeWarning:
    """A stable code for programs and a sentence for people (the calibration report's shape)."""

    code: str
    message: str

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class ProbeCell:
    """One probe on one criterion."""

    probe: str
    version: int
    role: str  # NEUTRAL or MEANINGFUL
    pairs: int  # outputs with both an original and a probed verdict
    pass_to_fail: Rate
    fail_to_pass: Rate
    errors: int  # pairs with an ERROR on either side: never a flip
    other: int  # pairs with N/A or Can't tell on either side (and no ERROR)
    warnings: tuple[ProbeWarning, ...]

    @property
    def detection(self) -> Rate | None:
        """For a negative control: the share of passing outputs the planted flaw made fail."""
        return self.pass_to_fail if self.role == MEANINGFUL else None

    def as_dict(self) -> dict:
        return {
            "probe": self.probe,
            "version": self.version,
            "role": self.role,
            "pairs": self.pairs,
            "pass_to_fail": self.pass_to_fail.as_dict(),
            "fail_to_pass": self.fail_to_pass.as_dict(),
            "detection": self.detection.as_dict() if self.detection else None,
            "errors": self.errors,
            "other": self.other,
            "warnings": [w.as_dict() for w in self.warnings],
        }


def _pct(r: Rate) -> str:
    assert r.ci is not None
    return f"{r.count} of {r.n} (95% interval {r.ci[0]:.2f}-{r.ci[1]:.2f})"


def _warnings(probe: str, summary: str, role: str, p2f: Rate, f2p: Rate) -> tuple[ProbeWarning, ...]:
    out = []
    if role == NEUTRAL:
        if f2p.ci and f2p.ci[0] > MAX_FLIP_RATE:
            out.append(
                ProbeWarning(
                    f"fooled_by_{probe}",
                    f"{probe} ({summary}) turned FAIL into PASS in {_pct(f2p)}: above the {MAX_FLIP_RATE:g} a "
                    "neutral change may move; a regression dressed up like this would pass",
                )
            )
        if p2f.ci and p2f.ci[0] > MAX_FLIP_RATE:
            out.append(
                ProbeWarning(
                    f"penalized_by_{probe}",
                    f"{probe} ({summary}) turned PASS into FAIL in {_pct(p2f)}: above the {MAX_FLIP_RATE:g} a "
                    "neutral change may move",
                )
            )
    elif p2f.ci and p2f.ci[1] < MIN_DETECTION_RATE:
        out.append(
            ProbeWarning(
                f"blind_to_{probe}",
                f"{probe} ({summary}) must make this criterion fail, and did so for only {_pct(p2f)} passing "
                f"outputs: below the {MIN_DETECTION_RATE:g} it must reach; the judge may not be reading what it grades",
            )
        )
    return tuple(out)


def compare(pairs: Iterable[tuple[str, str]], *, probe: str, version: int, role: str, summary: str = "") -> ProbeCell:
    """The cell of one probe on one criterion from its (original, probed) outcome pairs."""
    if role not in (NEUTRAL, MEANINGFUL):
        raise ValueError(f"role must be {NEUTRAL} or {MEANINGFUL}, got {role!r}")
    total = errors = other = 0
    counts = {(a, b): 0 for a in BINARY for b in BINARY}
    for original, probed in pairs:
        total += 1
        if ERROR in (original, probed):
            errors += 1
        elif original in BINARY and probed in BINARY:
            counts[(original, probed)] += 1
        else:
            other += 1
    p2f = rate(counts[(PASS, FAIL)], counts[(PASS, FAIL)] + counts[(PASS, PASS)])
    f2p = rate(counts[(FAIL, PASS)], counts[(FAIL, PASS)] + counts[(FAIL, FAIL)])
    return ProbeCell(
        probe, version, role, total, p2f, f2p, errors, other, _warnings(probe, summary or probe, role, p2f, f2p)
    )


def criterion_notes(cells: Iterable[ProbeCell]) -> tuple[ProbeWarning, ...]:
    """What a criterion's cells cannot show: no negative control covered it, or no neutral probe did."""
    cells = list(cells)
    notes = []
    if not any(c.role == MEANINGFUL and c.pass_to_fail.n for c in cells):
        notes.append(
            ProbeWarning(
                "no_control",
                "no negative control was measured on this criterion: no flips could also mean a judge that "
                "ignores the output",
            )
        )
    if not any(c.role == NEUTRAL and (c.pass_to_fail.n or c.fail_to_pass.n) for c in cells):
        notes.append(ProbeWarning("not_probed", "no neutral probe has a PASS/FAIL pair on this criterion"))
    return tuple(notes)
