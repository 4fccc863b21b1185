"""The drilldown behind a confusion cell and the annotators' agreement page read, on a large eval set, what a worker
stored with its report (issue 37 item 5: every page that shows report figures under 250 ms warm): the stored cells
and annotator rows equal the ones computed from all the rows, the pages say how fresh they are, no web request loads
a large set's labels for them, and a page costs as many queries whatever the size.

bulk_calibration's cells are known by construction: (true pass, false pass, false fail, true fail) items per criterion,
so a false-pass cell holds exactly its second number of outputs.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.report import drilldown, stored_report
from calibration.report.annotator_loading import annotator_rows
from evals.models import Role
from labeling import label_frames
from labeling.models import Label
from tests.calibration.report.test_report_figures_worker import (  # the same fixtures and helpers
    calibrated,
    flip,
    large,  # noqa: F401 - the fixture pytestmark uses
    report_url,
    wait_current,
)
from tests.factories import make_user

# `large` (a set of 500 outputs x 2 criteria counts as large) is the worker tests' fixture.
pytestmark = [
    pytest.mark.celery,
    pytest.mark.figures_worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("large"),
]


def drilldown_url(es, rv, judge, key="correct_amount", cell="false-pass") -> str:
    return reverse("calibration:drilldown", args=[es.pk, rv.pk, judge.pk, key, cell])


def annotators_url(es, rv) -> str:
    return reverse("calibration:annotator_agreement", args=[es.pk, rv.pk])


def stored_now(client, es, rv, judge):
    client.get(report_url(es, rv, judge))  # the first view asks a worker for the figures
    return stored_report._stored(wait_current(es, rv, judge))


def test_the_stored_cells_and_annotator_rows_equal_the_ones_computed_from_all_the_rows(client, workers):
    es, rv, judge, outputs = calibrated((300, 20, 30, 150))
    workers(concurrency=1)
    client.force_login(make_user("lead", Role.LEAD))
    stored = stored_now(client, es, rv, judge)
    assert stored is not None
    for criterion in rv.criteria.all():
        for cell, size in (("false-pass", 20), ("false-fail", 30)):
            computed = drilldown.cell_output_ids(
                eval_set=es, rubric_version=rv, judge_config=judge, criterion=criterion, cell=cell
            )
            assert len(computed) == size  # known by construction
            assert list(stored.cells[drilldown.cell_key(criterion.pk, cell)]) == computed
    assert stored.annotators == annotator_rows(es, rv) and len(stored.annotators) == 4  # amy and bo, two criteria
    body = client.get(drilldown_url(es, rv, judge)).content.decode()
    assert "Items as of change" in body and "<strong>20</strong> items" in body
    assert "Figures as of change" in client.get(annotators_url(es, rv)).content.decode()
    # A change: the last figures are shown, said to be updating, until the worker has the new ones.
    flip(Label.objects.get(annotation__output=outputs[0], annotation__slot=1, criterion__key="correct_amount"))
    row = wait_current(es, rv, judge)
    again = stored_report._stored(row)
    assert again is not None and again.annotators == annotator_rows(es, rv)
    # Negative control: the flip changed the figures (one item left true pass for a disagreement without gold).
    assert again.annotators != stored.annotators


def test_no_web_request_loads_a_large_sets_labels_for_the_drilldown_or_the_annotators(client, workers, monkeypatch):
    es, rv, judge, _ = calibrated()
    workers(concurrency=1)  # its own process: the trap below is not there
    client.force_login(make_user("lead", Role.LEAD))
    stored_now(client, es, rv, judge)

    def refuse(*args, **kwargs):
        raise AssertionError("the labels were loaded in this (the web) process")

    monkeypatch.setattr(label_frames, "load_labels", refuse)
    for url in (drilldown_url(es, rv, judge), drilldown_url(es, rv, judge, cell="false-fail"), annotators_url(es, rv)):
        response = client.get(url)
        assert response.status_code == 200 and "as of change" in response.content.decode(), url
    # The negative control: a small eval set's pages compute theirs, and the trap catches each.
    small = calibrated((150, 10, 15, 75), name="small")
    for url in (drilldown_url(*small[:3]), annotators_url(*small[:2])):
        with pytest.raises(AssertionError, match="loaded in this"):
            client.get(url)


def test_the_large_drilldown_and_annotators_pages_cost_the_same_queries_whatever_the_size(client, workers):
    workers(concurrency=1)
    client.force_login(make_user("lead", Role.LEAD))
    counts = []
    for name, cells in (("a", (300, 20, 30, 150)), ("b", (900, 60, 90, 450))):
        es, rv, judge, _ = calibrated(cells, name=name)
        stored_now(client, es, rv, judge)
        sizes = []
        for url in (drilldown_url(es, rv, judge), annotators_url(es, rv)):
            client.get(url)
            with CaptureQueriesContext(connection) as queries:
                assert "as of change" in client.get(url).content.decode()
            sizes.append(len(queries))
        counts.append(sizes)
    assert counts[0] == counts[1], counts
    # Session and user, the instrument and criterion, the size and the stored row, one page's details (four), the
    # disputes (two), the held-out check; the annotators: session and user, eval set, rubric, stored row, criteria,
    # the names.
    assert counts[0][0] <= 20 and counts[0][1] <= 12, counts
