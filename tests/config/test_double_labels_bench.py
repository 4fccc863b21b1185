"""bench/double_labels.py (issue 38, item 3) counts labels, gold and false passes as worked out by hand.

Pure numpy: no database. The bench is a measurement, so its core must be right on a set small enough to
work through: ten outputs with known labels, an adjudicator, a judge and a fixed random part.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_double_labels", Path(__file__).resolve().parents[2] / "bench" / "double_labels.py"
)
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up while the module runs
_spec.loader.exec_module(bench)


def passes(text: str) -> np.ndarray:
    return np.array([c == "P" for c in text])


# Outputs 0-9. First and second annotators split on outputs 2 and 7; the adjudicator says FAIL on both.
FIRST = passes("PPPPPFFFFF")
SECOND = passes("PPFPPFFPFF")
ADJUDICATOR = passes("PPFPPFFFFF")
JUDGE = passes("PPPFFPFPFP")
RANDOM_PART = np.isin(np.arange(10), [0, 5])


def cells(agreement) -> tuple[int, int, int, int]:
    return agreement.true_pass, agreement.false_pass, agreement.false_fail, agreement.true_fail


def test_the_disagreement_design_counts_labels_and_hides_a_false_pass_as_worked_by_hand():
    roles = bench.Roles(FIRST, SECOND, ADJUDICATOR, JUDGE)
    full = bench.full_labeling(roles)
    design = bench.design_labeling(roles, random_part=RANDOM_PART, rule="disagree")
    # Full: 10 firsts + 10 seconds + 2 adjudications. Gold PPFPPFFFFF against the judge PPPFFPFPFP:
    # true pass 0, 1; false pass 2, 5, 7, 9; false fail 3, 4; true fail 6, 8.
    assert full.labels == 22
    assert cells(full.judge) == (2, 4, 2, 2)
    # kappa = (0.4 - 0.48) / (1 - 0.48), chance 0.6 x 0.4 + 0.4 x 0.6.
    assert full.judge.kappa == pytest.approx(-2 / 13)
    # Design: doubled = the random part {0, 5} and where the first label differs from the judge {3, 4, 5, 7, 9},
    # six outputs; of them only 7 splits. 10 + 6 + 1 = 17 labels, 5 of 22 saved.
    assert design.labels == 17
    # Output 2 is single-labeled (first PASS = judge PASS), so its gold is PASS where full labeling found FAIL:
    # one false pass fewer, one true pass more.
    assert cells(design.judge) == (3, 3, 2, 2)
    # kappa = (0.5 - 0.5) / (1 - 0.5): the design lifts it by 2/13 on the same labels.
    assert design.judge.kappa == pytest.approx(0.0)
    # The ceiling: first vs second over all ten (0.8 raw, 0.5 chance: 0.6), and over the random part only
    # (output 0 both PASS, output 5 both FAIL: 1.0).
    assert full.ceiling.n == 10 and full.ceiling.kappa == pytest.approx(0.6)
    assert design.ceiling.n == 2 and design.ceiling.kappa == pytest.approx(1.0)


def test_without_an_adjudicator_a_split_has_no_gold():
    roles = bench.Roles(FIRST, SECOND, None, JUDGE)
    full = bench.full_labeling(roles)
    design = bench.design_labeling(roles, random_part=RANDOM_PART, rule="disagree")
    # Outputs 2 and 7 stay without gold under full labeling (8 compared), only 7 in the design (9 compared).
    assert (full.labels, full.judge.n) == (20, 8)
    assert (design.labels, design.judge.n) == (16, 9)


def test_labels_saved_when_the_judge_agrees_everywhere_is_the_single_labeled_share():
    """All three raters and the judge agree on every output: the disagreement rule never adds a label, so the
    design gives 10 first labels and 2 seconds (f = 0.2) against full labeling's 20: 40% saved, however the
    raters are dealt and whichever two outputs are drawn."""
    raters = np.repeat(passes("PPPFPPFPPF")[:, None], 3, axis=1)
    judge = raters[:, 0].copy()
    for model, judge_rater in ((judge, None), (None, 1)):
        runs = bench.measure(raters, model, judge_rater=judge_rater, fractions=(0.2,), repetitions=5, seed=3)
        assert len(runs) == 5 * len(bench.RULES)
        disagree = runs[runs["rule"] == "disagree"]
        assert disagree["saved"].tolist() == [pytest.approx(0.4)] * 5
        # The judge passes 7 of the 10: the judge-pass rule doubles those and the drawn two that it failed,
        # or fewer when a drawn output is among the 7, so it saves between 1 and 3 of 20.
        judge_pass = runs[runs["rule"] == "judge-pass"]["saved"]
        assert judge_pass.between(0.05 - 1e-12, 0.15 + 1e-12).all()
