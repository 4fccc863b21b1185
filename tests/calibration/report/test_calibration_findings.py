"""The report's warnings, one rule at a time: each rule is a pure function of a row's parts.

Every rule is shown firing, with its sentence written out by hand, and not firing just short of its
threshold (the negative control). A row with nothing to say says nothing, and several warnings come in the
order of FINDINGS.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from calibration.report import findings as rules
from calibration.report.ceiling import SelfAgreement
from calibration.report.findings import findings
from calibration.report.gold_counts import GoldCounts
from calibration.report.row_parts import Counts, RowParts
from calibration.stats.metrics import Agreement, HumanAgreement, PairwiseKappa

# A healthy row: 120 items, kappa 0.8 with a narrow interval, people agreeing, every item judged.
AGREEMENT = Agreement(
    n=120,
    kappa=0.8,
    kappa_ci=(0.7, 0.9),
    observed_agreement=0.9,
    expected_agreement=0.5,
    rater_pass_rate=0.5,
    reference_pass_rate=0.5,
    true_pass=54,
    false_pass=6,
    true_fail=54,
    false_fail=6,
)
HUMAN = HumanAgreement(
    n=120, kappa=0.8, kappa_ci=(0.7, 0.9), alpha=0.8, pairwise=PairwiseKappa(0.8, (0.7, 0.9), 1, 0, 120, 120)
)
QUIET = RowParts(
    key="correct_amount",
    policy="majority",
    gating=False,
    agreement=AGREEMENT,
    counts=Counts(),
    human=HUMAN,
    gold=GoldCounts(labeled_items=120),
    judge_self=SelfAgreement(1),
)


def parts(**agreement) -> RowParts:
    return replace(QUIET, agreement=replace(AGREEMENT, **agreement))


def human(**fields) -> RowParts:
    return replace(QUIET, human=replace(HUMAN, **fields))


NO_DATA = {"n": 0, "kappa": None, "kappa_ci": None, "observed_agreement": None, "expected_agreement": None}
EMPTY_RATES = {"rater_pass_rate": None, "reference_pass_rate": None}
EMPTY_CELLS = {"true_pass": 0, "false_pass": 0, "true_fail": 0, "false_fail": 0}
ALL_PASS_5 = {"n": 5, "kappa": None, "kappa_ci": None, "true_pass": 5, "false_pass": 0, "true_fail": 0}

CASES = [
    # (rule, parts where it fires, its sentence, parts just short of it)
    (
        "no_data",
        parts(**NO_DATA, **EMPTY_RATES, **EMPTY_CELLS),
        "no data: no item has both a PASS/FAIL gold label and a PASS/FAIL verdict",
        parts(n=1),
    ),
    (
        "kappa_undefined",
        parts(**ALL_PASS_5, false_fail=0, rater_pass_rate=1.0, reference_pass_rate=1.0),
        "kappa is undefined: judge and gold both said PASS on all 5 items, so chance agreement is 1 and there is "
        "nothing to correct for; add items where the other outcome is right",
        parts(n=5, kappa=0.0),
    ),
    (
        "constant_judge",
        parts(kappa=0.0, rater_pass_rate=1.0),
        "the judge said PASS on every one of the 120 items: a constant cannot discriminate, so kappa is exactly 0 "
        "however high its raw agreement (0.90)",
        parts(kappa=0.0, rater_pass_rate=0.99),
    ),
    (
        "constant_gold",
        parts(kappa=0.0, reference_pass_rate=0.0),
        "gold is FAIL on every one of the 120 items: with no PASS to find, kappa is 0 whatever the judge does; "
        "add items that pass this criterion",
        parts(kappa=None, reference_pass_rate=0.0),
    ),
    (
        "false_pass_on_gating",
        replace(parts(false_pass=1), gating=True),
        "1 false pass on a gating criterion: the judge passed outputs people failed; read them in the drilldown "
        "before trusting this gate",
        parts(false_pass=1),
    ),
    (
        "degenerate_interval",
        parts(kappa=1.0, kappa_ci=(1.0, 1.0)),
        "the interval collapses to 1.000: every resample of these 120 items agrees the same way, so the bootstrap "
        "cannot show the uncertainty that is there; only more items can",
        parts(kappa=1.0, kappa_ci=(1.0, 1.0), rater_pass_rate=1.0),
    ),
    (
        "small_n",
        parts(n=30),
        "n = 30 is below the minimum of 100 compared items for a tier",
        parts(n=100),
    ),
    (
        "interval_below_gate",
        parts(kappa=0.7, kappa_ci=(0.55, 0.8)),
        "the interval's lower end 0.550 is below the gate threshold 0.6: the data are also consistent with a "
        "trend-tier judge",
        parts(kappa=0.7, kappa_ci=(0.6, 0.8)),
    ),
    (
        "humans_disagree",
        human(pairwise=PairwiseKappa(0.2, (0.1, 0.3), 3, 0, 120, 40)),
        "people agree only at mean pairwise kappa 0.20 over 3 annotator pairs: gold is noisy; sharpen the "
        "criterion's definition before calibrating a judge on it",
        human(pairwise=PairwiseKappa(0.4, (0.3, 0.5), 3, 0, 120, 40)),
    ),
    (
        "humans_disagree",
        human(alpha=0.3, pairwise=None),
        "people agree only at alpha 0.30: gold is noisy; sharpen the criterion's definition before calibrating a "
        "judge on it",
        human(alpha=None, pairwise=None),
    ),
    (
        "human_pairs_sparse",
        human(pairwise=PairwiseKappa(0.8, (0.7, 0.9), 1, 0, 4, 4)),
        "the one annotator pair shares 4 items, fewer than 10: each pair's kappa is mostly noise, so the human "
        "ceiling here is alpha",
        human(pairwise=PairwiseKappa(0.8, (0.7, 0.9), 1, 0, 10, 10)),
    ),
    (
        "human_pairs_sparse",
        human(pairwise=PairwiseKappa(0.8, (0.7, 0.9), 6, 0, 30, 7.5)),
        "the 6 annotator pairs share a median of 7.5 items, fewer than 10: each pair's kappa is mostly noise, so "
        "the human ceiling here is alpha",
        human(pairwise=PairwiseKappa(None, None, 0, 6, 30, 7.5)),
    ),
    (
        "human_ab_subset",
        human(n=1, over_two=3),
        "annotator A vs B covers only the 1 item exactly two people labeled PASS/FAIL; 3 items with more "
        "annotators count in the mean pairwise kappa and alpha only",
        human(n=1, over_two=0),
    ),
    (
        "no_verdict",
        replace(QUIET, counts=Counts(no_verdict=1)),
        "1 labeled item has no verdict from this judge",
        replace(QUIET, counts=Counts(judge_error=1)),
    ),
    (
        "no_verdict",
        replace(QUIET, counts=Counts(no_verdict=2)),
        "2 labeled items have no verdict from this judge",
        QUIET,
    ),
    (
        "evidence_not_found",
        replace(QUIET, counts=Counts(evidence_not_found=2)),
        "2 verdicts quote text that is not in the transcript; they still count (the gate uses them), but check them",
        replace(QUIET, counts=Counts(no_verdict=0, evidence_not_found=0)),
    ),
    (
        "many_ties",
        replace(QUIET, gold=GoldCounts(labeled_items=20, gold_ties=2)),
        "2 of 20 labeled items are ties between annotators (10.0%); the hardest items wait for a reviewer and are "
        "left out of every figure until then: adjudicate them, or sharpen the definition",
        replace(QUIET, gold=GoldCounts(labeled_items=20, gold_ties=1)),  # 5% is not more than 5%
    ),
    (
        "many_ties",
        replace(QUIET, policy="any_fail", gold=GoldCounts(labeled_items=20, gold_ties=2)),
        "2 of 20 labeled items are ties between annotators (10.0%); under the any_fail policy each of them is FAIL "
        "gold and counts, so the hardest items lean FAIL: adjudicate them, or sharpen the definition",
        replace(QUIET, policy="any_fail", gold=GoldCounts(labeled_items=0, gold_ties=2)),
    ),
    (
        "much_gold_pending",
        replace(QUIET, policy="unanimous", gold=GoldCounts(labeled_items=20, awaiting_gold=3)),
        "3 of 20 labeled items have no gold yet under the unanimous gold policy (15.0%): they wait for a second "
        "label or a reviewer, and every figure above leaves them out",
        replace(QUIET, policy="unanimous", gold=GoldCounts(labeled_items=20, awaiting_gold=1)),
    ),
    (
        "judge_inconsistent",
        replace(QUIET, judge_self=SelfAgreement(samples=3, alpha=0.2, alpha_ci=(0.1, 0.3), n=10)),
        "the judge agrees with itself only at alpha 0.20 over 3 samples of 10 items: a judge that disagrees with "
        "itself cannot agree with anyone; fix the prompt or the temperature first",
        replace(QUIET, judge_self=SelfAgreement(samples=3, alpha=0.4, alpha_ci=(0.3, 0.5), n=10)),
    ),
]


def test_a_healthy_row_has_no_warning():
    assert findings(QUIET) == ()


@pytest.mark.parametrize(("code", "fires", "sentence", "quiet"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_fires_with_its_sentence_and_not_short_of_its_threshold(code, fires, sentence, quiet):
    rule = getattr(rules, code)
    found = rule(fires)
    assert (found.code, found.message) == (code, sentence)
    assert rule(quiet) is None
    assert code in [f.code for f in findings(fires)]


def test_every_rule_of_the_table_is_tested_here():
    assert {rule.__name__ for rule in rules.FINDINGS} == {case[0] for case in CASES}


def test_warnings_come_in_the_tables_order():
    row = replace(
        parts(n=30, false_pass=2),
        gating=True,
        counts=Counts(no_verdict=1, evidence_not_found=1),
        gold=GoldCounts(labeled_items=20, gold_ties=2, awaiting_gold=3),
        judge_self=SelfAgreement(samples=3, alpha=0.2, alpha_ci=(0.1, 0.3), n=10),
    )
    codes = [f.code for f in findings(row)]
    assert codes == [
        "false_pass_on_gating",
        "small_n",
        "no_verdict",
        "evidence_not_found",
        "many_ties",
        "much_gold_pending",
        "judge_inconsistent",
    ]
