"""Pages that show a multi-megabyte transcript stay small: long texts and many tool calls are cut with a
"Show all" link, quotes are still checked against (and marked in) the whole transcript, and the page
runs no more queries than for a short one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.models import Criterion
from evals.transcript import PREVIEW_CHARS, PREVIEW_TOOL_CALLS
from labeling.models import Annotation, Label
from tests.factories import annotate_directly, labeling_setup, make_output
from tests.labeling.test_labeling_queries import PAGE_AT_MOST
from tests.labeling_helpers import next_url, page_url, save_url

pytestmark = pytest.mark.django_db

HIDDEN_QUOTE = "the refund reference is RF-77-END"  # only at the very end of the long response
MEGABYTES = 3
# A page shows at most PREVIEW_CHARS of each text; here two texts are long (the response, one tool result), so
# the page, escaped and with everything around it, stays far under ten previews, against megabytes of transcript.
PAGE_MAX_CHARS = 10 * PREVIEW_CHARS


@pytest.fixture
def long_case():
    eval_set, rv, _ = labeling_setup(n_outputs=0)
    filler = "The customer wrote at length <again> & again. " * (MEGABYTES * 1_000_000 // 46)
    calls = [{"name": "search_kb", "args": {"q": f"query {i}"}, "response": "no hit"} for i in range(400)]
    calls[0]["response"] = {"document": "Q" * 2_000_000}  # a 2 MB tool result
    output = make_output(eval_set, response=filler + HIDDEN_QUOTE, tool_calls=calls)
    return eval_set, rv, output


def test_the_labeling_page_of_a_multi_megabyte_transcript_is_cut_and_runs_no_more_queries(client, annotator, long_case):
    eval_set, rv, output = long_case
    client.force_login(annotator)
    client.post(next_url(eval_set))
    mine = Annotation.objects.get(annotator=annotator)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(page_url(mine))
    assert response.status_code == 200
    page = response.content.decode()
    assert len(output.response) > MEGABYTES * 1_000_000 and len(page) < PAGE_MAX_CHARS
    assert len(queries) <= PAGE_AT_MOST
    assert "The customer wrote at length &lt;again&gt; &amp; again." in page and "<again>" not in page
    assert HIDDEN_QUOTE not in page and "Q" * (PREVIEW_CHARS + 1) not in page
    assert f"{len(output.tool_calls) - PREVIEW_TOOL_CALLS} more tool calls not shown." in page
    assert page.count(">Show all</a>") >= 2 and f'href="{page_url(mine)}?full=1#transcript"' in page

    whole = client.get(page_url(mine) + "?full=1").content.decode()
    assert HIDDEN_QUOTE in whole and "Show all" not in whole and len(whole) > len(output.response)

    # The quote is checked against the whole transcript, not the part the page shows.
    data = {"criterion": "correct_amount", "outcome": "PASS", "evidence": HIDDEN_QUOTE, "rubric_version": rv.pk}
    assert client.post(save_url(mine), data, HTTP_HX_REQUEST="true").status_code == 200
    assert Label.objects.get(annotation=mine).evidence == HIDDEN_QUOTE
    refused = client.post(save_url(mine), {**data, "evidence": "RF-78-END"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 422 and Label.objects.get(annotation=mine).evidence == HIDDEN_QUOTE


def test_the_adjudication_page_says_a_quote_is_further_down_and_marks_it_when_shown_all(
    client, annotator, annotator2, reviewer, long_case
):
    eval_set, rv, output = long_case
    annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", HIDDEN_QUOTE)})
    annotate_directly(output, rv, annotator2, {"correct_amount": ("FAIL", "NONE")})
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.force_login(reviewer)
    url = reverse("labeling:adjudicate", args=[output.pk, criterion.pk])
    page = client.get(url).content.decode()
    assert len(page) < PAGE_MAX_CHARS
    assert "a quote is marked further down" in page and '<mark class="hl-a">' not in page
    whole = client.get(url + "?full=1").content.decode()
    assert f'<mark class="hl-a">{HIDDEN_QUOTE}</mark>' in whole
    assert "a quote is marked further down" not in whole
