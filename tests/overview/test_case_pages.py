"""The eval set page (outputs, filters, search, pages) and the output page (labels, gold, verdicts in one place)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.models import EvalSet
from labeling.models import GoldLabel, Label
from tests.factories import (
    add_verdict,
    adjudicate,
    annotate,
    annotator,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_run,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer):
    es = make_eval_set("support")
    rv = make_rubric_version("refund", "1")
    judge = make_judge("gpt-judge")
    run = make_run(es, rv, judge)
    amy, bo = annotator("amy"), annotator("bo")
    # agreed PASS, judge FAIL: a false fail
    agreed = make_output(es, case_id="agreed-1", response="Refunded forty dollars today.")
    annotate(agreed, rv, amy, 1, {"correct_amount": "PASS"}, {"correct_amount": "forty dollars"})
    annotate(agreed, rv, bo, 2, {"correct_amount": "PASS"}, {"correct_amount": "Refunded forty"})
    add_verdict(run, agreed, "correct_amount", "FAIL", evidence="today", raw_output='{"verdict": "FAIL", "x": 1}')
    # disagreement, judge PASS with a quote that is not in the transcript
    split = make_output(es, case_id="split-2", input="Where is my parcel?", response="It ships Monday.")
    annotate(split, rv, amy, 1, {"correct_amount": "PASS"})
    annotate(split, rv, bo, 2, {"correct_amount": "FAIL"})
    add_verdict(run, split, "correct_amount", "PASS", evidence="ships Tuesday", evidence_found=False)
    # adjudicated FAIL (two revisions), judge PASS: a false pass
    gold = make_output(es, case_id="gold-3", agent_version="v2", response="We refunded 50.")
    annotate(gold, rv, amy, 1, {"correct_amount": "PASS"})
    annotate(gold, rv, bo, 2, {"correct_amount": "ABSTAIN"})
    g1 = adjudicate(gold, rv, "correct_amount", "PASS", reviewer, rationale="first look")
    GoldLabel.objects.filter(pk=g1.pk).update(is_current=False)
    adjudicate(gold, rv, "correct_amount", "FAIL", reviewer, rationale="the amount is 40", revision=2)
    add_verdict(run, gold, "correct_amount", "PASS")
    # one label so far: pending gold, names hidden
    lone = make_output(es, case_id="lone-4", response="Your refund is on its way.")
    annotate(lone, rv, amy, 1, {"correct_amount": "FAIL"}, {"correct_amount": "on its way"})
    return {"es": es, "rv": rv, "judge": judge, "outputs": [agreed, split, gold, lone]}


def listed(response) -> list[str]:
    return [row["output"].case.case_id for row in response.context["rows"]]


def set_url(world, **params) -> str:
    url = reverse("overview:eval_set", args=[world["es"].pk])
    params.setdefault("rubric_version", world["rv"].pk)
    return url + "?" + "&".join(f"{k}={v}" for k, v in params.items())


def test_annotators_get_403_and_strangers_are_sent_to_log_in(client, world, annotator):
    urls = [set_url(world), reverse("overview:output", args=[world["outputs"][0].pk])]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(annotator)
    for url in urls:
        assert client.get(url).status_code == 403


def test_every_output_is_listed_without_filters_and_each_filter_narrows_it(client, world, reviewer):
    client.force_login(reviewer)
    judge = world["judge"].pk
    assert listed(client.get(set_url(world))) == ["agreed-1", "gold-3", "lone-4", "split-2"]
    assert listed(client.get(set_url(world, show="disagreement"))) == ["split-2"]
    assert listed(client.get(set_url(world, show="pending-gold"))) == ["lone-4", "split-2"]
    assert listed(client.get(set_url(world, show="evidence-not-found"))) == ["split-2"]
    assert listed(client.get(set_url(world, show="false-pass", judge=judge))) == ["gold-3"]
    assert listed(client.get(set_url(world, show="false-fail", judge=judge))) == ["agreed-1"]
    assert listed(client.get(set_url(world, agent_version="v2"))) == ["gold-3"]


def test_search_finds_case_ids_inputs_and_responses(client, world, reviewer):
    client.force_login(reviewer)
    assert listed(client.get(set_url(world, q="LONE"))) == ["lone-4"]
    assert listed(client.get(set_url(world, q="parcel"))) == ["split-2"]
    assert listed(client.get(set_url(world, q="refunded"))) == ["agreed-1", "gold-3"]
    assert listed(client.get(set_url(world, q="no-such-words"))) == []


def test_bad_filters_are_reported_and_nothing_is_narrowed(client, world, reviewer):
    client.force_login(reviewer)
    for params in ({"show": "bogus"}, {"rubric_version": "999999"}, {"judge": "x"}, {"agent_version": "nope"}):
        response = client.get(set_url(world, **params))
        assert response.status_code == 200
        assert "were not understood" in response.content.decode()
        assert len(listed(response)) == 4, params
    response = client.get(set_url(world, show="false-pass"))
    assert "Choose a judge config" in response.content.decode()
    response = client.get(set_url(world, page="banana"))
    assert response.status_code == 200 and response.context["page"].number == 1


def test_the_list_is_paginated_with_filters_kept_in_the_links(client, reviewer):
    es = make_eval_set("big")
    make_rubric_version("r", "1")
    for i in range(60):
        make_output(es, case_id=f"bulk-{i:03d}")
    client.force_login(reviewer)
    url = reverse("overview:eval_set", args=[es.pk])
    first = client.get(url + "?q=bulk")
    assert len(listed(first)) == 50 and first.context["page"].paginator.num_pages == 2
    assert "?q=bulk&amp;page=2" in first.content.decode()
    second = client.get(url + "?q=bulk&page=2")
    assert listed(second) == [f"bulk-{i:03d}" for i in range(50, 60)]


def test_the_eval_set_page_runs_a_bounded_number_of_queries(client, world, reviewer):
    client.force_login(reviewer)
    url = set_url(world, show="false-pass", judge=world["judge"].pk)
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    for i in range(20):
        output = make_output(world["es"], case_id=f"more-{i}")
        annotate(output, world["rv"], annotator("amy"), 1, {"correct_amount": "PASS"})
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many) == len(few) <= 18


def test_the_output_page_shows_every_quote_highlighted_with_its_source(client, world, lead):
    client.force_login(lead)
    agreed = world["outputs"][0]
    page = client.get(reverse("overview:output", args=[agreed.pk])).content.decode()
    assert page.count('data-part="response"') == 1  # the transcript is shown once
    assert '<mark class="c' not in page  # every mark carries its source's colour
    assert "q-a" in page and "q-b" in page and "q-j1" in page
    assert "Annotator A (amy)" in page and "Annotator B (bo)" in page
    assert "Judge gpt-judge" in page and "&quot;verdict&quot;: &quot;FAIL&quot;, &quot;x&quot;: 1" in page


def test_names_stay_hidden_until_two_annotations_are_submitted(client, world, reviewer):
    client.force_login(reviewer)
    lone = world["outputs"][3]
    page = client.get(reverse("overview:output", args=[lone.pk])).content.decode()
    assert "Annotator A" in page and "amy" not in page


def test_gold_history_shows_every_revision_and_words_people_read(client, world, reviewer):
    client.force_login(reviewer)
    gold = world["outputs"][2]
    page = client.get(reverse("overview:output", args=[gold.pk])).content.decode()
    assert "first look" in page and "the amount is 40" in page and "revision 2" in page
    assert "Can&#x27;t tell" in page and ">ABSTAIN<" not in page


def test_the_quote_that_is_not_in_the_transcript_is_flagged(client, world, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("overview:output", args=[world["outputs"][1].pk])).content.decode()
    assert "quote not in transcript" in page
    negative = client.get(reverse("overview:output", args=[world["outputs"][0].pk])).content.decode()
    assert "quote not in transcript" not in negative


def test_the_output_page_runs_a_bounded_number_of_queries(client, world, reviewer):
    client.force_login(reviewer)
    url = reverse("overview:output", args=[world["outputs"][0].pk])
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) <= 12


def test_bad_output_ids_and_versions_are_handled(client, world, reviewer):
    client.force_login(reviewer)
    assert client.get("/outputs/999999/").status_code == 404
    assert client.get("/sets/999999/").status_code == 404
    url = reverse("overview:output", args=[world["outputs"][0].pk])
    response = client.get(url + "?rubric_version=abc")
    assert response.status_code == 200 and "does not exist" in response.content.decode()
    assert Label.objects.count() == 7 and EvalSet.objects.count() == 1  # reading writes nothing


def test_posts_are_refused(client, world, reviewer):
    client.force_login(reviewer)
    assert client.post(set_url(world)).status_code == 405


def test_verdicts_of_probe_runs_show_on_neither_page(client, world, reviewer):
    # A probe arm judged a changed transcript: its verdict is not a verdict on this output as it is.
    agreed = world["outputs"][0]
    probe_run = make_run(world["es"], world["rv"], make_judge("probed-judge"))
    probed = add_verdict(probe_run, agreed, "correct_amount", "PASS", evidence="not here", evidence_found=False)
    client.force_login(reviewer)
    page = client.get(reverse("overview:output", args=[agreed.pk])).content.decode()
    listing = client.get(set_url(world, show="evidence-not-found"))
    assert "probed-judge" in page and "agreed-1" in listed(listing)  # the control: as a plain verdict it shows
    type(probed).objects.filter(pk=probed.pk).update(probe="padding")
    page = client.get(reverse("overview:output", args=[agreed.pk])).content.decode()
    assert "probed-judge" not in page
    assert "agreed-1" not in listed(client.get(set_url(world, show="evidence-not-found")))
