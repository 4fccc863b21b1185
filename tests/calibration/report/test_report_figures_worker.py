"""A large eval set's calibration report is computed in a real Celery worker and stored (issue 37 item 5): bursts of
label changes coalesce and the last labels win, the pages say how fresh the figures are and poll while a worker
computes newer ones, no web request computes the report of a large eval set, a worker killed mid-computation leaves
the last figures whole, and a page costs as many queries whatever the size.

"Large" is ICEWATER_REPORT_STORED_FROM_ITEMS (outputs x criteria); the tests lower it so that sets of a few thousand
items count. The worker is another process: the setting there does not matter (it computes what it is asked for).
The figures are bulk_calibration's cells, whose kappa the report's own tests work by hand.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.models import ReportFigures
from calibration.report import compose, stored_report
from calibration.report.compose import calibration_report
from evals.models import Role
from labeling.models import Label
from tests.factories import (
    bulk_calibration,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    mark_as_gating,
    rejudge,
)

pytestmark = [pytest.mark.celery, pytest.mark.figures_worker, pytest.mark.django_db(transaction=True)]

WITHIN_S = 120  # a generous ceiling for a worker's computation; never reached when it works
CELLS = (300, 20, 30, 150)  # true pass, false pass, false fail, true fail: 500 outputs


@pytest.fixture
def large(settings):
    settings.ICEWATER_REPORT_STORED_FROM_ITEMS = 600  # 500 outputs x 2 criteria is large, 250 x 2 is not
    return settings


@pytest.fixture
def lead():
    return make_user("lead", Role.LEAD)


def calibrated(cells=CELLS, name="cal", both=True):
    es, rv, judge = make_eval_set(name), make_rubric_version(f"refund-{name}", "1"), make_judge(f"judge-{name}")
    keys = {"correct_amount": cells, **({"next_step": cells} if both else {})}
    return es, rv, judge, bulk_calibration(es, rv, judge, keys)


def report_url(es, rv, judge) -> str:
    return reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])


def row_of(es, rv, judge) -> ReportFigures:
    return ReportFigures.objects.get(eval_set=es, rubric_version=rv, judge_config=judge, agent_version="")


def wait_current(es, rv, judge) -> ReportFigures:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        row = ReportFigures.objects.filter(eval_set=es, rubric_version=rv, judge_config=judge).first()
        if row is not None and row.core is not None and row.done >= row.wanted:
            return row
        time.sleep(0.2)
    raise AssertionError(f"the report's figures were not computed within {WITHIN_S} s")


def lock_held(row_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND granted",
            [stored_report.LOCK_SPACE, row_id],
        )
        return cursor.fetchone()[0] > 0


def flip(label: Label) -> None:
    """One annotator changes their mind: a save the triggers see (audits/figures_triggers.py tells the report)."""
    label.outcome = "FAIL" if label.outcome == "PASS" else "PASS"
    label.save()


def rows_dict(report) -> list[dict]:
    return [r.as_dict() for r in report.rows]


def test_a_burst_of_label_changes_gives_a_few_computations_and_the_last_labels_win(client, workers, large, lead):
    es, rv, judge, outputs = calibrated()
    workers(concurrency=2)  # two processes, so two computations of one report could run at once but for the lock
    client.force_login(lead)
    client.get(report_url(es, rv, judge))  # the first view asks for the figures
    first = wait_current(es, rv, judge)
    labels = list(Label.objects.filter(annotation__output__in=outputs[:30], annotation__slot=1).order_by("pk"))
    assert len(labels) == 60
    for label in labels:
        flip(label)
    row = wait_current(es, rv, judge)
    changes, runs = row.wanted - first.wanted, row.computations - first.computations
    assert changes >= 60
    assert 1 <= runs <= 12, (changes, runs)  # a few, not one per change
    # The last state wins: the stored rows are the rows computed now, from the labels as they are.
    stored = stored_report._stored(row)
    now = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert stored is not None and [r.as_dict() for r in stored.core.rows] == rows_dict(now)
    # Negative control: the flips changed the figures (30 items per criterion are now disagreements without gold).
    assert [r.as_dict() for r in stored.core.rows] != [r.as_dict() for r in stored_report._stored(first).core.rows]
    assert runs < changes


def test_the_report_page_says_how_fresh_its_figures_are_and_polls_until_they_are_current(client, workers, large, lead):
    es, rv, judge, outputs = calibrated()
    client.force_login(lead)
    url = report_url(es, rv, judge)
    body = client.get(url).content.decode()  # no worker yet: the first figures wait
    assert 'id="report-pending"' in body and "not computed yet" in body and 'hx-trigger="every 2s"' in body
    worker = workers(concurrency=1)
    row = wait_current(es, rv, judge)
    body = client.get(url).content.decode()
    assert f"Figures as of change {row.done} to the labels and verdicts," in body and "updating" not in body
    assert 'hx-trigger="every 2s"' not in body and 'id="criterion-correct_amount"' in body  # current: no poll
    computed = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge)
    kappa = f"{computed.row('correct_amount').judge.kappa:.2f}"
    assert kappa in body
    worker.kill()
    flip(Label.objects.filter(annotation__output=outputs[0], annotation__slot=1).first())  # no worker computes it
    stale = client.get(url).content.decode()
    assert f"Figures as of change {row.done} to the labels and verdicts," in stale
    assert "updating…" in stale and 'role="status"' in stale
    assert 'hx-trigger="every 2s"' in stale and kappa in stale  # the last figures, shown while it polls
    grid = client.get(reverse("calibration:index")).content.decode()
    assert "updating…" in grid and kappa in grid
    workers(concurrency=1)
    ReportFigures.objects.filter(pk=row.pk).update(requested_at=row.requested_at - stored_report.KICK_AFTER * 2)
    client.get(url)  # the task went with the killed worker: the next reader asks again
    again = wait_current(es, rv, judge)
    assert again.done > row.done and "updating" not in client.get(url).content.decode()


def test_no_web_request_computes_the_report_of_a_large_eval_set(client, workers, large, lead, monkeypatch):
    es, rv, judge, outputs = calibrated()
    other = make_judge("other-judge")  # Compare's second side: another judge on the same outputs
    rejudge(es, rv, other, outputs, "correct_amount", ["PASS"] * len(outputs))
    mark_as_gating(rv, judge, ["correct_amount"], es, by=lead, calibration=CELLS)  # Home checks the mark's tier
    workers(concurrency=1)  # its own process: the trap below is not there
    client.force_login(lead)
    for jc in (judge, other):
        client.get(report_url(es, rv, jc))
        wait_current(es, rv, jc)

    def refuse(*args, **kwargs):
        raise AssertionError("a report was computed in this (the web) process")

    monkeypatch.setattr(compose, "build_rows", refuse)
    monkeypatch.setattr(compose, "build_tiers", refuse)
    monkeypatch.setattr(compose, "content_cache", SimpleNamespace(computed=refuse))
    monkeypatch.setattr(stored_report, "report_core", refuse)
    compare = reverse("calibration:compare") + f"?eval_set={es.pk}&left_rubric={rv.pk}&left_judge={judge.pk}"
    compare += f"&right_rubric={rv.pk}&right_judge={other.pk}"
    for url in (report_url(es, rv, judge), compare, reverse("home"), reverse("calibration:index")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "as of change" in response.content.decode() or url == reverse("home"), url
    # The negative control: a small eval set's page computes its report, and the trap catches it.
    small = calibrated((150, 10, 15, 75), name="small")
    with pytest.raises(AssertionError, match="computed in this"):
        client.get(report_url(*small[:3]))


def test_a_worker_killed_mid_computation_leaves_the_last_figures_whole_and_loses_nothing(client, workers, large, lead):
    es, rv, judge, outputs = calibrated((3000, 200, 300, 1500))  # a computation long enough to be killed in
    first_worker = workers(concurrency=1)
    client.force_login(lead)
    client.get(report_url(es, rv, judge))
    before = wait_current(es, rv, judge)
    flip(Label.objects.filter(annotation__output=outputs[0], annotation__slot=1).first())
    deadline = time.monotonic() + WITHIN_S
    while not lock_held(before.pk):  # the worker is inside the computation of the new labels
        assert time.monotonic() < deadline, "the worker never started computing"
        time.sleep(0.02)
    first_worker.kill()
    after_kill = row_of(es, rv, judge)
    # Nothing half-written: the rows, the change they are of and their times are the last computation's, whole.
    assert (bytes(after_kill.core), after_kill.done, after_kill.computed_at) == (
        bytes(before.core),
        before.done,
        before.computed_at,
    )
    assert after_kill.done < after_kill.wanted
    while lock_held(before.pk):
        assert time.monotonic() < deadline, "the killed worker's lock outlived its connection"
        time.sleep(0.05)
    workers(concurrency=1)
    ReportFigures.objects.filter(pk=before.pk).update(requested_at=before.requested_at - stored_report.KICK_AFTER * 2)
    client.get(report_url(es, rv, judge))  # the next reader asks again
    done = wait_current(es, rv, judge)
    stored = stored_report._stored(done)
    now = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert stored is not None and [r.as_dict() for r in stored.core.rows] == rows_dict(now)  # nothing lost


def test_a_large_report_page_costs_the_same_queries_whatever_the_size(client, workers, large, lead):
    workers(concurrency=1)
    client.force_login(lead)
    counts = []
    for name, cells in (("a", (300, 20, 30, 150)), ("b", (900, 60, 90, 450))):
        es, rv, judge, _ = calibrated(cells, name=name)
        url = report_url(es, rv, judge)
        client.get(url)
        wait_current(es, rv, judge)
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            assert "as of change" in client.get(url).content.decode()
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    # Session and user, the instrument (three), the size, the stored row, the report's own few (probes, audit
    # plans, the price and transport), the page's (criteria, marks, agent versions, the queue, disputes, reviews).
    assert counts[0] <= 30, counts
