"""The verdict page and the drilldown stay small for a multi-megabyte output, and a deeply nested raw answer."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.transcript import PREVIEW_CHARS
from tests.factories import add_verdict, make_eval_set, make_judge, make_output, make_rubric_version, make_run

pytestmark = pytest.mark.django_db

BIG = "refund details " * 200_000  # 3 MB


@pytest.fixture
def long_verdict():
    es, rv = make_eval_set("long"), make_rubric_version("refund", "1")
    output = make_output(es, case_id="big-1", response="Refunded 40. " + BIG + " THE-END-MARKER")
    deep = "[" * 5_000 + "]" * 5_000  # json.loads raises RecursionError on this
    return add_verdict(make_run(es, rv, make_judge("j")), output, "correct_amount", "PASS", raw_output=deep)


def test_the_verdict_page_cuts_a_multi_megabyte_response_and_shows_all_on_request(client, lead, long_verdict):
    client.force_login(lead)
    url = reverse("judging:verdict", args=[long_verdict.pk])
    page = client.get(url)
    assert page.status_code == 200  # the deeply nested raw output is shown as text, not a 500
    html = page.content.decode()
    assert len(html) < 4 * PREVIEW_CHARS and "Show all" in html and "THE-END-MARKER" not in html
    full = client.get(url + "?full=1").content.decode()
    assert "THE-END-MARKER" in full and len(full) > len(BIG)  # the control: everything is there on request


def test_a_short_output_is_not_cut(client, lead):
    es, rv = make_eval_set("short"), make_rubric_version("refund", "1")
    output = make_output(es, response="Refunded 40.")
    v = add_verdict(make_run(es, rv, make_judge("j")), output, "correct_amount", "PASS")
    client.force_login(lead)
    assert "Show all" not in client.get(reverse("judging:verdict", args=[v.pk])).content.decode()
