"""The price of gating (issue 22, item 8) and the audit plans in the candidate's calibration report (item 2).

The price is an estimate of the median labels per release decision of the default design (the uniform plan):
labels_per_decision at margins 0.10 and 0.05 with the judge-gold correlation phi of the calibration, its gold pass
rate or the minimum, and a candidate of N outputs (issue 38, item 5: the model, and its check against the labels
audits take, in tests/calibration/stats/test_price_model.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.urls import reverse

from calibration.audits.plans import close_plan
from calibration.report.compose import calibration_report
from calibration.report.files import to_json
from calibration.stats.audit_forecast import gating_price, phi_coefficient
from evals.models import EvalSet
from tests.audit_helpers import KEY, candidate, gold, in_order, plan_on

# The arithmetic by hand, z^2 = 3.841459 (95%); without a minimum the pass rate stands for it (p = 0.5, so the
# gold variance s^2 = 0.25, 2 s = 1); A = 1.38 z^2 s^2 (1 - phi^2) / margin^2 + 6.3 * 2 s / margin,
# labels = ceil(A / (1 + A / N)):
# phi 0.6, N 1000: A = 1.38 * 3.841459 * 0.25 * 0.64 / 0.01 + 63 = 84.819 + 63 = 147.819 -> 128.78 -> 129 at 0.10;
#                  A = 339.278 + 126 = 465.278 -> 317.54 -> 318 at 0.05.
# phi 0.04, N 1000: A = 1.38 * 3.841459 * 0.25 * 0.9984 / 0.01 + 63 = 132.318 + 63 = 195.318 -> 163.40 -> 164 at
#                   0.10; A = 529.273 + 126 = 655.273 -> 395.87 -> 396 at 0.05.


def test_a_judge_that_agrees_with_people_makes_gating_cheap():
    # tp 40, fp 10, fn 10, tn 40: phi = (1600 - 100) / sqrt(50^4) = 0.6; gold passes 50 of 100.
    price = gating_price(criterion="correct_amount", cells=(40, 10, 10, 40), N=1000)
    assert price is not None
    assert price.phi == pytest.approx(0.6) and price.pass_rate == 0.5 and price.N == 1000
    assert [c.labels for c in price.costs] == [129, 318]
    assert price.as_dict()["labels"] == {"0.10": 129, "0.05": 318}
    assert price.in_words == (
        "gating correct_amount costs about 129 labels a release when it is 0.10 from the minimum "
        "(318 at a margin of 0.05); the judge's verdicts take 36% off the variance"
    )


def test_a_judge_near_chance_adds_little_and_costs_more_labels():
    # The negative control: phi = (676 - 576) / 2500 = 0.04, so the judge explains 0.16% of the variance.
    price = gating_price(criterion="concise", cells=(26, 24, 24, 26), N=1000)
    assert price is not None and price.phi == pytest.approx(0.04)
    assert [c.labels for c in price.costs] == [164, 396]
    assert price.in_words.endswith("; the judge adds little")


def test_a_constant_judge_counts_as_no_help_and_no_gold_gives_no_estimate():
    always_pass = gating_price(criterion="tone", cells=(50, 50, 0, 0), N=1000)
    assert always_pass is not None and always_pass.phi == 0.0
    # phi 0: A = 1.38 * 3.841459 * 0.25 / 0.01 + 63 = 195.530 -> 163.55 -> 164 at 0.10 (as phi 0.04, to the label).
    assert always_pass.costs[0].labels == 164
    assert gating_price(criterion="tone", cells=(0, 0, 0, 0), N=1000) is None


def test_the_price_never_exceeds_the_candidate():
    price = gating_price(criterion="correct_amount", cells=(40, 10, 10, 40), N=100)
    # A = 147.819 -> 147.819 / 2.47819 = 59.65 -> 60 at 0.10; 465.278 / 5.65278 = 82.31 -> 83 at 0.05: the finite
    # population on the whole anytime sample keeps it below 100 (the price before issue 38 said all 100 at 0.05).
    assert price is not None and [c.labels for c in price.costs] == [60, 83]


def test_the_price_at_a_minimum_is_quoted_on_the_worse_side():
    # Issue 40: the pass rate at the margin on each side of the minimum 0.8, phi 0.6, N 1000, z^2 = 3.841459; the
    # gold variance s^2 = 0.46 p (1 - p) + 0.54 * 0.16, the minimum's share the larger (issue 38, item 5):
    #   0.10, PASS side p = 0.9: s^2 = 0.1278, A = 43.360 + 6.3 * 2 * 0.35749 / 0.10 = 43.360 + 45.044 = 88.404
    #         -> 81.22 -> 82; FAIL side p = 0.7: s^2 = 0.183, A = 62.088 + 53.901 = 115.989 -> 103.93 -> 104;
    #   0.05, PASS side p = 0.85: s^2 = 0.14505, A = 196.849 + 95.975 = 292.824 -> 226.50 -> 227;
    #         FAIL side p = 0.75: s^2 = 0.17265, A = 234.305 + 104.709 = 339.014 -> 253.18 -> 254.
    price = gating_price(criterion="correct_amount", cells=(40, 10, 10, 40), N=1000, minimum=0.8)
    assert price is not None and price.minimum == 0.8
    assert [c.labels for c in price.sides["PASS"]] == [82, 227] and [c.labels for c in price.sides["FAIL"]] == [
        104,
        254,
    ]
    assert [c.labels for c in price.costs] == [104, 254]  # the worse side, which a lead meets as often as the other
    assert price.as_dict()["labels_by_side"] == {"PASS": {"0.10": 82, "0.05": 227}, "FAIL": {"0.10": 104, "0.05": 254}}
    assert price.in_words.startswith(
        "gating correct_amount at the minimum 0.8 costs about 104 labels a release of 1,000"
    )
    # At a minimum of 0.5 the sides are mirror images (p = 0.6 and 0.4): the same price either way.
    even = gating_price(criterion="correct_amount", cells=(40, 10, 10, 40), N=1000, minimum=0.5)
    assert even is not None and even.sides["PASS"] == even.sides["FAIL"]


@pytest.mark.parametrize("seed", range(5))
def test_phi_is_pearsons_r_of_the_two_binary_columns(seed):
    rng = np.random.default_rng(seed)
    tp, fp, fn, tn = (int(x) for x in rng.integers(1, 60, size=4))
    judge = [1] * tp + [1] * fp + [0] * fn + [0] * tn
    people = [1] * tp + [0] * fp + [1] * fn + [0] * tn
    reference = np.corrcoef(judge, people)[0, 1]
    assert phi_coefficient(true_pass=tp, false_pass=fp, false_fail=fn, true_fail=tn) == pytest.approx(reference)


# -- in the report ------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_report_json_prices_each_criterion_for_a_candidate_its_size_and_leaves_out_plans_it_has_none_of():
    c = candidate(n=40)
    built = calibration_report(
        eval_set=c.eval_set, rubric_version=c.rubric_version, judge_config=c.judge, with_audit_plans=True
    )
    report = json.loads(to_json(built))
    assert "audit_plans" not in report
    prices = {p["criterion"]: p for p in report["gating_price"]}
    # No gold on this eval set yet: nothing to estimate from, said so, for each criterion.
    assert prices[KEY]["labels"] is None and prices[KEY]["N"] == 40 and "no estimate" in prices[KEY]["in_words"]


@pytest.mark.django_db
def test_the_calibrations_report_prices_the_newest_candidate_gated_not_its_own_size():
    # Issue 40: a 40-output calibration priced a 400-output candidate at 40. The candidate gated since is the size.
    from calibration.gate.release_gate import gate_and_record
    from calibration.gate.request import GateRequest
    from calibration.models import GateResult
    from calibration.stats.policy import Tightening
    from tests.factories import (
        bulk_calibration,
        bulk_verdicts,
        make_eval_set,
        make_judge,
        make_rubric_version,
        mark_as_gating,
    )

    rv, judge, cal = make_rubric_version(name="refund"), make_judge("gpt-judge"), make_eval_set("cal")
    bulk_calibration(cal, rv, judge, {KEY: (20, 5, 5, 10)})
    mark_as_gating(rv, judge, [KEY], cal, min_pass_rate=0.7, decide_on="wilson_lower")

    def price() -> dict:
        report = calibration_report(eval_set=cal, rubric_version=rv, judge_config=judge, with_audit_plans=True)
        return next(p for p in report.as_dict()["gating_price"] if p["criterion"] == KEY)

    before = price()
    assert before["N"] == 40 and before["candidate"].startswith("no candidate gated or audited yet")
    assert before["minimum"] == 0.7  # the mark's own minimum, not 0.9
    bulk_verdicts(make_eval_set("rc-1"), rv, judge, {KEY: {"PASS": 400}})
    ask = GateRequest("rc-1", "refund@1", "gpt-judge", None, Tightening())
    gate_and_record(ask, workspace=cal.workspace, source=GateResult.Source.CLI)
    after = price()
    assert after["N"] == 400 and after["candidate"] == "rc-1, the newest candidate gated or audited with this judge"
    # And on the candidate's own report, the candidate is itself; with no gold there, nothing to price from.
    rc = calibration_report(
        eval_set=EvalSet.objects.get(name="rc-1"), rubric_version=rv, judge_config=judge, with_audit_plans=True
    ).as_dict()
    assert rc["gating_price"][0]["N"] == 400 and rc["gating_price"][0]["candidate"] == "this eval set"


@pytest.mark.django_db
def test_a_candidates_report_tests_the_marks_calibration_rates_on_its_gold(client):
    # The transport test on the candidate's report (issue 40): its gold catches 0 of 8 failures the calibration's
    # judge caught 80 of 100 times.
    from tests.factories import bulk_calibration, make_eval_set, make_judge, make_rubric_version, mark_as_gating

    rv, judge = make_rubric_version(name="refund"), make_judge("gpt-judge")
    mark_as_gating(rv, judge, [KEY], make_eval_set("cal"), calibration=(90, 20, 10, 80), decide_on="wilson_lower")
    rc = make_eval_set("rc-1")
    bulk_calibration(rc, rv, judge, {KEY: (12, 8, 0, 0)})
    report = calibration_report(eval_set=rc, rubric_version=rv, judge_config=judge, with_audit_plans=True).as_dict()
    (t,) = report["transport"]
    assert t["criterion"] == KEY and t["tnr"]["candidate_n"] == 8 and t["tnr"]["moved"] and t["warning"]
    # Negative control: the calibration set's own report tests nothing against itself.
    cal = calibration_report(
        eval_set=EvalSet.objects.get(name="cal"), rubric_version=rv, judge_config=judge, with_audit_plans=True
    )
    assert "transport" not in cal.as_dict()
    from evals.models import Role
    from tests.factories import make_user

    client.force_login(make_user("lee2", Role.LEAD))
    page = client.get(reverse("calibration:report", args=[rc.pk, rv.pk, judge.pk])).content.decode()
    assert 'id="report-transport-correct_amount"' in page and "the judge&#x27;s errors moved" in page


@pytest.mark.django_db
def test_the_report_json_holds_each_open_plan_and_the_latest_closed_one():
    c = candidate(n=40)
    first = plan_on(c, release=40)
    for output in in_order(first)[:20]:
        gold(c, output, "PASS")
    close_plan(plan=first, by=c.lead)
    second = plan_on(c, min_pass_rate=0.6)
    close_plan(plan=second, by=c.lead)
    third = plan_on(c, min_pass_rate=0.7)
    report = calibration_report(
        eval_set=c.eval_set, rubric_version=c.rubric_version, judge_config=c.judge, with_audit_plans=True
    )
    plans = json.loads(to_json(report))["audit_plans"]
    without = calibration_report(eval_set=c.eval_set, rubric_version=c.rubric_version, judge_config=c.judge)
    assert "audit_plans" not in without.as_dict()  # the overview grid and approvals do not read plans
    assert [(p["plan"], p["open"]) for p in plans] == [(third.pk, True), (second.pk, False)]
    shown = plans[0]
    # The third plan reads the same order and gold. By hand: below 0.7, at most 27 of the 40 pass, and the first 20
    # of a random order all pass with chance C(27, 20) / C(40, 20) = 888,030 / 137,846,528,820 = 6.4e-6, far
    # under the 0.025 a side: the test decides PASS at 20 gold (the exact rule alone would need 28).
    assert (shown["criterion"], shown["judge"], shown["agent_version"], shown["N"]) == (KEY, "gpt-judge", "", 40)
    assert (shown["n_labeled"], shown["decided"], shown["min_pass_rate"]) == (20, "PASS", 0.7)
    assert plans[1]["n_labeled"] == 20 and plans[1]["min_pass_rate"] == 0.6
    assert shown["interval"][0] <= shown["estimate"] <= shown["interval"][1]
    assert set(shown["forecast"]) == {"k", "p_decided", "p_pass", "p_fail", "expected_labels", "p90_labels", "n_sims"}
    # And the price from the gold the audits made: 20 gold PASS judged PASS, no gold FAIL, so phi is 0.
    price = next(p for p in json.loads(to_json(report))["gating_price"] if p["criterion"] == KEY)
    assert (price["phi"], price["pass_rate"]) == (0.0, 1.0)


@pytest.mark.django_db
def test_the_report_page_shows_the_price_of_gating(client):
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    order = in_order(plan)
    for output in order[:10]:
        gold(c, output, "PASS")
    client.force_login(c.lead)
    url = reverse("calibration:report", args=[c.eval_set.pk, c.rubric_version.pk, c.judge.pk])
    page = client.get(url).content.decode()
    row = page.split(f'id="price-{KEY}"', 1)[1].split("</tr>", 1)[0]
    # phi 0 (a constant judge), the mark's minimum 0.5 (issue 40: the pass rate at each side of it, 0.6 and 0.4):
    # s^2 = 0.46 * 0.24 + 0.54 * 0.25 = 0.2454, A = 1.38 * 3.841459 * 0.2454 / 0.01 + 6.3 * 2 * 0.49538 / 0.10
    # = 130.09 + 62.42 = 192.51 -> 192.51 / (1 + 192.51 / 40) = 33.1 -> 34 of the 40 outputs at 0.10 (the price before
    # issue 38 said all 40: 2 x 27.9).
    assert "≈ 34" in row and "the judge adds little" in row
    assert 'id="price-next_step"' in page
