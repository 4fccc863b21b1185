"""The candidate's audit plans in the calibration report's text and on its page, as the JSON's `audit_plans` holds
them (issue 22); a report without plans reads as before, and the CSV (one row per criterion) is left as it is."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.audits.plans import close_plan
from calibration.report.compose import calibration_report
from calibration.report.files import to_csv, to_json, to_text
from tests.audit_helpers import candidate, gold, in_order, plan_on
from tests.calibration.report.test_calibration_report_columns import worked_report

pytestmark = pytest.mark.django_db


def audited():
    """As tests/calibration/report/test_gating_price.py: a closed plan at minimum 0.6 and an open one at 0.7, both
    reading the same 20
    gold passes of the candidate's 40 outputs (the judge said PASS on all). By hand there: the open plan decides
    PASS at 20 gold; the closed one (a lower minimum, the same gold) too."""
    c = candidate(n=40)
    first = plan_on(c, release=40, min_pass_rate=0.6)
    for output in in_order(first)[:20]:
        gold(c, output, "PASS")
    close_plan(plan=first, by=c.lead)
    second = plan_on(c, min_pass_rate=0.7)
    return c, first, second


def report_of(c, with_audit_plans: bool = True):
    return calibration_report(
        eval_set=c.eval_set, rubric_version=c.rubric_version, judge_config=c.judge, with_audit_plans=with_audit_plans
    )


def test_the_text_report_lists_each_plan_with_its_decision_rule_labels_interval_and_estimate():
    c, closed, open_ = audited()
    report = report_of(c)
    text = to_text(report)
    assert "Audit plans on rc-1 as a release candidate (each open one, and the latest closed one):" in text
    lines = {
        line.split()[0]: line.split()
        for line in text.splitlines()
        if line.split()[:1] in ([str(closed.pk)], [str(open_.pk)])
    }
    # 20 gold passes: the estimate is 1.000 (every labeled output passed, and the judge said PASS on all).
    assert lines[str(open_.pk)][1:9] == ["correct_amount", "gpt-judge", "all", "open", "PASS", ">=", "0.7", "at"]
    assert lines[str(open_.pk)][10:13] == ["20", "of", "40"] and lines[str(open_.pk)][-1] == "1.000"
    assert lines[str(closed.pk)][4:7] == ["closed", "PASS", ">="] and lines[str(closed.pk)][7] == "0.6"
    # The interval is the JSON's, to three places.
    low, high = json.loads(to_json(report))["audit_plans"][0]["interval"]
    assert f"[{low:.3f}, {high:.3f}]" in " ".join(lines[str(open_.pk)]) and high == 1.0 and 0.7 <= low < 1.0
    assert "estimate: PPI++, for reading" in text


def test_a_report_without_plans_reads_as_before_and_the_csv_never_holds_them():
    c, _, _ = audited()
    assert "Audit plans" not in to_text(report_of(c, with_audit_plans=False))  # negative control: same data
    assert "Audit plans" not in to_text(worked_report())
    # One row per criterion: a plan (per judge and agent version, open or closed) is not one; the JSON holds them.
    assert to_csv(report_of(c)) == to_csv(report_of(c, with_audit_plans=False))


def test_the_command_prints_the_plans_in_its_text_report():
    c, _, open_ = audited()
    out = StringIO()
    call_command("calibration_report", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", stdout=out)
    assert "Audit plans on rc-1" in out.getvalue() and f"{open_.pk:>5} correct_amount" in out.getvalue()


def test_the_report_page_lists_the_plans_linked_to_their_pages(client):
    c, closed, open_ = audited()
    client.force_login(c.lead)
    url = reverse("calibration:report", args=[c.eval_set.pk, c.rubric_version.pk, c.judge.pk])
    page = client.get(url).content.decode()
    row = " ".join(page.split(f'id="audit-plan-{open_.pk}"', 1)[1].split("</tr>", 1)[0].split())
    assert f'href="{reverse("calibration:audit_plan", args=[open_.pk])}"' in row
    assert ">PASS<" in row and "≥ 0.700 at 0.950" in row and "20 of 40" in row and "1.000]" in row
    assert f'id="audit-plan-{closed.pk}"' in page
    assert page.index('id="audit-plans"') < page.index('id="gating-price"')


def test_a_report_page_without_plans_has_no_audit_card(client):
    c = candidate(n=10)
    client.force_login(c.lead)
    url = reverse("calibration:report", args=[c.eval_set.pk, c.rubric_version.pk, c.judge.pk])
    assert 'id="audit-plans"' not in client.get(url).content.decode()
