"""The gate's reading of one criterion at PASS alpha and FAIL alpha / k from its decisions at two symmetric levels
(audit_shared.sided_from_levels), against the sided test itself (criterion_first_decision) on random candidates."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.stats.audit_shared import CriterionAudit, criterion_first_decision, fail_confidence, sided_from_levels
from calibration.stats.audit_stats import FAIL, PASS, audit_decision

DECISIONS = (PASS, FAIL, None)


@pytest.mark.parametrize("decided", DECISIONS)
def test_one_criterion_reads_its_own_decision(decided):
    assert sided_from_levels(decided, decided) == decided


def test_the_table_by_hand():
    # PASS at either level is PASS; otherwise FAIL only at alpha / k; a FAIL at alpha alone waits.
    assert [sided_from_levels(a, b) for a in DECISIONS for b in DECISIONS] == [
        PASS, PASS, PASS,  # at alpha PASS
        PASS, FAIL, None,  # at alpha FAIL
        PASS, FAIL, None,  # at alpha undecided
    ]  # fmt: skip


@pytest.mark.parametrize("k", [2, 3])
def test_it_agrees_with_the_sided_test_on_random_candidates(k):
    rng = np.random.default_rng(k)
    compared = disagreed = 0
    for _ in range(150):
        N = int(rng.integers(40, 120))
        theta, minimum = rng.uniform(0.3, 0.9), float(np.round(rng.uniform(0.4, 0.8), 2))
        gold = (rng.random(N) < theta).astype(float)
        verdicts = np.where(rng.random(N) < 0.8, gold, 1 - gold)
        n = int(rng.integers(20, N))
        labels = gold[:n].tolist()
        a = audit_decision(gold=labels, verdicts=verdicts, minimum=minimum, confidence=0.95).decided
        b = audit_decision(
            gold=labels, verdicts=verdicts, minimum=minimum, confidence=fail_confidence(confidence=0.95, k=k)
        ).decided
        sided = criterion_first_decision(CriterionAudit("c", verdicts, labels, minimum), confidence=0.95, k=k).decided[
            0
        ]
        compared += 1
        # The one case two decisions cannot settle (a FAIL at alpha, then a PASS at alpha before the FAIL side
        # reached alpha / k) needs the two tests to contradict each other; FAIL there is still valid at alpha / k.
        if a == FAIL and b == FAIL and sided == PASS:
            disagreed += 1
            continue
        assert sided_from_levels(a, b) == (sided or None), (a, b, sided)
    assert compared == 150 and disagreed == 0
