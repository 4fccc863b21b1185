"""The price of gating reads the predictor a uniform audit reads (issue 38 item 1): for a judge that samples more
than once, the correlation of its vote share with gold on the calibration, not its one-bit verdict's phi."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.report.compose import calibration_report
from calibration.stats.audit_forecast import gating_price, labels_per_decision
from tests.factories import add_verdict, calibration_set, make_eval_set, make_judge, make_rubric_version, make_run

pytestmark = pytest.mark.django_db
KEY = "correct_amount"


def test_a_vote_share_phi_prices_the_audit_and_says_what_it_is_of():
    cells = (40, 10, 10, 40)  # the verdict's phi is 0.6 (tests/calibration/report/test_gating_price.py)
    price = gating_price(criterion=KEY, cells=cells, N=1000, vote_share_phi=0.8)
    assert price is not None and price.phi == 0.8 and price.predictor == "vote share"
    assert [c.labels for c in price.costs] == [
        labels_per_decision(phi=0.8, pass_rate=0.5, margin=m, N=1000).labels for m in (0.10, 0.05)
    ]
    assert price.in_words.endswith("the judge's vote share takes 64% off the variance")
    assert price.as_dict()["predictor"] == "vote share"
    # The negative control: without it, the verdict's phi, as before.
    verdict = gating_price(criterion=KEY, cells=cells, N=1000)
    assert verdict is not None and verdict.phi == pytest.approx(0.6) and verdict.predictor == "verdict"
    assert verdict.costs[0].labels > price.costs[0].labels


# Gold and the judge's three samples on each of 8 calibration outputs: the majority is right on 6 of 8, and the
# vote share says how sure it was.
ROWS = [
    ("PASS", "PPP"),
    ("PASS", "PPF"),
    ("PASS", "PPP"),
    ("PASS", "PFF"),  # majority FAIL, but one vote PASS
    ("FAIL", "FFF"),
    ("FAIL", "PFF"),
    ("FAIL", "PPF"),  # majority PASS, but one vote FAIL
    ("FAIL", "FFF"),
]


def sampled_calibration(samples: int):
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge", samples=samples)
    cal = make_eval_set("cal")
    majority = {"PPP": "PASS", "PPF": "PASS", "PFF": "FAIL", "FFF": "FAIL"}
    outputs = calibration_set(cal, rv, judge, [{KEY: (g, g, majority[votes])} for g, votes in ROWS])
    run = make_run(cal, rv, judge, agent_version="default")
    for output, (_, votes) in zip(outputs, ROWS, strict=True):
        for s, vote in enumerate(votes):
            add_verdict(run, output, KEY, "PASS" if vote == "P" else "FAIL", sample=s)
    return cal, rv, judge


def test_the_report_prices_a_sampling_judge_by_its_vote_shares_correlation_with_gold():
    cal, rv, judge = sampled_calibration(samples=3)
    report = calibration_report(eval_set=cal, rubric_version=rv, judge_config=judge, with_audit_plans=True)
    price = next(p for p in report.gating_prices if p.criterion == KEY).price
    assert price is not None and price.predictor == "vote share"
    y = [1.0 if g == "PASS" else 0.0 for g, _ in ROWS]
    share = [votes.count("P") / 3 for _, votes in ROWS]
    assert price.phi == pytest.approx(float(np.corrcoef(y, share)[0, 1]), abs=1e-12)
    # By hand: the majority's phi is (3 * 3 - 1 * 1) / 4^2 = 0.5; the vote share's r is cov 1/8 over
    # sqrt(1/4 * 10/72) = 3 / sqrt(20) = 0.6708: the price reads the higher one.
    assert price.phi == pytest.approx(3 / 20**0.5, abs=1e-12)


def test_a_judge_that_samples_once_is_priced_by_its_verdict_as_before():
    cal, rv, judge = sampled_calibration(samples=1)
    report = calibration_report(eval_set=cal, rubric_version=rv, judge_config=judge, with_audit_plans=True)
    price = next(p for p in report.gating_prices if p.criterion == KEY).price
    assert price is not None and price.predictor == "verdict"
