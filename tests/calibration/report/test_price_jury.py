"""The report's price of gating with a jury (issue 38): where other judge configs of the workspace graded the same
calibration, the price a uniform audit with them as extra signals would pay, beside the judge's own; nothing new
where none did; never another workspace's configs; the same queries whatever their number."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold, cross_val_predict

from calibration.report.compose import calibration_report
from calibration.report.files import to_json
from calibration.stats.audit_forecast import labels_per_decision
from evals.models import Output
from tests.factories import (
    add_verdict,
    calibration_set,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_run,
    make_workspace,
)

pytestmark = pytest.mark.django_db
KEY = "correct_amount"

# Twenty calibration items: gold, the judge's verdict, another config's. The judge is right on 14 of 20, the
# other config on 16, and they are wrong on different items, so together they say more than either.
ROWS = [
    ("PASS", "PASS", "PASS"),
    ("PASS", "PASS", "PASS"),
    ("PASS", "PASS", "PASS"),
    ("PASS", "PASS", "PASS"),
    ("PASS", "PASS", "PASS"),
    ("PASS", "PASS", "PASS"),
    ("PASS", "FAIL", "PASS"),
    ("PASS", "FAIL", "PASS"),
    ("PASS", "FAIL", "PASS"),
    ("PASS", "PASS", "FAIL"),
    ("PASS", "PASS", "FAIL"),
    ("FAIL", "FAIL", "FAIL"),
    ("FAIL", "FAIL", "FAIL"),
    ("FAIL", "FAIL", "FAIL"),
    ("FAIL", "FAIL", "FAIL"),
    ("FAIL", "FAIL", "FAIL"),
    ("FAIL", "PASS", "FAIL"),
    ("FAIL", "PASS", "FAIL"),
    ("FAIL", "PASS", "PASS"),
    ("FAIL", "FAIL", "PASS"),
]


@pytest.fixture
def calibration():
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    cal = make_eval_set("cal")
    outputs = calibration_set(cal, rv, judge, [{KEY: (g, g, j)} for g, j, _ in ROWS])
    return cal, rv, judge, outputs


def grade(cal, rv, config, outputs: list[Output], outcomes: list[str]) -> None:
    run = make_run(cal, rv, config, agent_version="default")
    for output, outcome in zip(outputs, outcomes, strict=True):
        add_verdict(run, output, KEY, outcome)


def price_of(cal, rv, judge):
    report = calibration_report(eval_set=cal, rubric_version=rv, judge_config=judge, with_audit_plans=True)
    price = next(p for p in report.gating_prices if p.criterion == KEY).price
    assert price is not None
    return report, price


def reference_r(columns: list[list[str]]) -> float:
    """scikit-learn's cross-validated predictions (the folds jury_fit documents) and numpy's correlation."""
    y = np.array([g == "PASS" for g, _, _ in ROWS], dtype=float)
    X = np.column_stack([[v == "PASS" for v in column] for column in columns]).astype(float)
    predicted = cross_val_predict(LinearRegression(), X, y, cv=KFold(n_splits=10, shuffle=True, random_state=0))
    return float(np.corrcoef(predicted, y)[0, 1])


def test_a_second_config_with_verdicts_prices_the_jury_beside_the_judge(calibration):
    cal, rv, judge, outputs = calibration
    _, alone = price_of(cal, rv, judge)
    other = make_judge("claude-judge")
    grade(cal, rv, other, outputs, [o for _, _, o in ROWS])
    report, price = price_of(cal, rv, judge)
    # The judge's own price is as it was; the jury's is priced at its cross-validated R (the items in output order).
    assert price.costs == alone.costs and price.phi == alone.phi
    assert price.jury is not None and price.jury.configs == ("claude-judge",) and price.jury.n == 20
    expected = reference_r([[j for _, j, _ in ROWS], [o for _, _, o in ROWS]])
    assert price.jury.R == pytest.approx(expected, abs=1e-9)
    # By hand, the judge's phi: tp 8, fp 3, fn 3, tn 6 -> (48 - 9) / sqrt(11 * 9 * 11 * 9) = 39 / 99 = 0.394.
    assert alone.phi == pytest.approx(39 / 99)
    assert price.jury.R > alone.phi
    worse = [
        max(
            labels_per_decision(phi=expected, pass_rate=min(0.9 + m, 1.0), margin=m, N=20, minimum=0.9).labels,
            labels_per_decision(phi=expected, pass_rate=0.9 - m, margin=m, N=20, minimum=0.9).labels,
        )
        for m in (0.10, 0.05)
    ]
    assert [c.labels for c in price.jury.costs] == worse
    exported = json.loads(to_json(report))["gating_price"][0]
    assert exported["jury"]["configs"] == ["claude-judge"] and exported["jury"]["n"] == 20
    assert exported["jury"]["R"] == pytest.approx(expected, abs=1e-9)
    assert "claude-judge" in exported["in_words"]


def test_without_another_config_the_export_is_as_before(calibration):
    # The negative control: no other config, or one with verdicts only on another eval set, adds nothing.
    cal, rv, judge, _ = calibration
    report, price = price_of(cal, rv, judge)
    before = to_json(report)
    elsewhere = make_eval_set("elsewhere")
    other = make_judge("claude-judge")
    calibration_set(elsewhere, rv, other, [{KEY: ("PASS", "PASS", "PASS")}] * 12)
    again, price_again = price_of(cal, rv, judge)
    assert price.jury is None and price_again.jury is None
    assert "jury" not in before
    assert json.loads(to_json(again))["gating_price"] == json.loads(before)["gating_price"]


def test_another_workspaces_config_never_joins_even_with_verdicts_here(calibration):
    cal, rv, judge, outputs = calibration
    theirs = make_judge("claude-judge", workspace=make_workspace("theirs"))
    grade(cal, rv, theirs, outputs, [o for _, _, o in ROWS])
    _, price = price_of(cal, rv, judge)
    assert price.jury is None
    # The positive twin: the same verdicts from a config of this workspace do join.
    ours = make_judge("claude-judge")
    grade(cal, rv, ours, outputs, [o for _, _, o in ROWS])
    _, price = price_of(cal, rv, judge)
    assert price.jury is not None and price.jury.configs == ("claude-judge",)


def test_the_lead_s_limit_of_four_extra_configs_the_most_graded_first(calibration):
    cal, rv, judge, outputs = calibration
    for name in ("a-judge", "b-judge", "c-judge", "d-judge", "e-judge"):
        grade(cal, rv, make_judge(name), outputs, [o for _, _, o in ROWS])
    # f-judge graded every item but the last one: fewer than the others, so it is left out of the five.
    grade(cal, rv, make_judge("f-judge"), outputs[:-1], [o for _, _, o in ROWS][:-1])
    _, price = price_of(cal, rv, judge)
    assert price.jury is not None and price.jury.configs == ("a-judge", "b-judge", "c-judge", "d-judge")


def test_the_report_costs_the_same_queries_whatever_the_number_of_other_configs(calibration):
    cal, rv, judge, outputs = calibration
    counts = []
    for name in ("a-judge", "b-judge", "c-judge"):
        grade(cal, rv, make_judge(name), outputs, [o for _, _, o in ROWS])
        with CaptureQueriesContext(connection) as queries:
            _, price = price_of(cal, rv, judge)
        assert price.jury is not None
        counts.append(len(queries))
    assert counts[0] == counts[1] == counts[2]


def test_a_finished_run_of_another_config_makes_the_stored_reports_here_stale(
    calibration, monkeypatch, django_capture_on_commit_callbacks
):
    # A large report's rows are stored by a worker (report/stored_report.py); its jury reads the other configs'
    # verdicts, so their finished runs must make it stale. A run in progress moves only its own config's rows.
    from calibration.models import ReportFigures
    from calibration.report import stored_report
    from judging.models import JudgeRun

    cal, rv, judge, _ = calibration
    other = make_judge("claude-judge")
    mine, theirs = (
        ReportFigures.objects.create(eval_set=cal, rubric_version=rv, judge_config=j) for j in (judge, other)
    )
    monkeypatch.setattr(stored_report, "send", lambda row_id: None)
    with django_capture_on_commit_callbacks(execute=True):
        run = JudgeRun.objects.create(
            eval_set=cal, rubric_version=rv, judge_config=other, status=JudgeRun.Status.RUNNING
        )
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.wanted, theirs.wanted) == (1, 2)
    with django_capture_on_commit_callbacks(execute=True):
        run.status = JudgeRun.Status.DONE
        run.save()
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.wanted, theirs.wanted) == (2, 3)


def test_the_page_shows_the_jury_s_price_where_it_lowers_the_judge_s(client, lead):
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    cal = make_eval_set("cal")
    rows = ROWS * 3  # 60 outputs: a candidate large enough that the prices are below its size
    outputs = calibration_set(cal, rv, judge, [{KEY: (g, g, j)} for g, j, _ in rows])
    url = reverse("calibration:report", args=[cal.pk, rv.pk, judge.pk])
    client.force_login(lead)
    assert "jury-price" not in client.get(url).content.decode()  # the negative control: no other config yet
    grade(cal, rv, make_judge("claude-judge"), outputs, [o for _, _, o in rows])
    _, price = price_of(cal, rv, judge)
    assert price.jury is not None and price.jury_lowers
    page = client.get(url).content.decode()
    assert f"jury ≈ {price.jury.costs[0].labels}</span>" in page
    assert "with the jury of claude-judge (cross-validated R" in page
