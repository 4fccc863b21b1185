"""The verdict of several samples of one item: their majority, a tie at the top read as ABSTAIN.

The one rule: the judge's pages, probe results and calibration (calibration/data/frame_reading.py, over frames) all
read samples by it. Pure Python, no Django, so the pure calibration modules import it without settings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

# judging.models.VerdictOutcome.ABSTAIN, written out: the models cannot be imported without Django
# (tests/config/test_pure_imports.py checks that the two agree).
ABSTAIN = "ABSTAIN"


class Majority(NamedTuple):
    outcome: str  # the most frequent outcome of the samples; ABSTAIN when two or more tie for it
    share: float  # the share of the samples that gave the most frequent outcome (each of the tied ones)
    tie: bool


def majority(outcomes: Iterable[str]) -> Majority:
    """The verdict of several samples: the most frequent outcome; a tie at the top is ABSTAIN (the samples
    could not settle it). ERROR counts like any outcome: mostly ERROR is an ERROR."""
    counts = Counter(outcomes)
    if not counts:
        raise ValueError("majority of no samples")
    total = sum(counts.values())
    ranked = counts.most_common()
    top, n = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == n:
        return Majority(ABSTAIN, n / total, tie=True)
    return Majority(top, n / total, tie=False)
