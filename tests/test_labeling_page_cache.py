"""The labeling page's cached criterion forms (labeling.fragments): keyed by rubric version, the partial's
own markup, and never carrying one person's answers, save URL or CSRF token to another."""

from __future__ import annotations

import re

import pytest
from django.core.cache import caches
from django.template.loader import render_to_string
from django.test import Client

from labeling.annotate import CriterionState
from labeling.fragments import CriterionForm, cache_key, criterion_forms
from labeling.models import Criterion, Label

from .factories import make_rubric_version
from .labeling_helpers import (  # noqa: F401 - fast_passwords is an autouse fixture
    claim_via_next as claim,
)
from .labeling_helpers import (
    labeling_setup,
    open_queue,
    page_url,
    save_url,
    six_criteria,
    submit_url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_fragments():
    caches["fragments"].clear()


def legends(page: str) -> list[str]:
    return re.findall(r"<legend>.*?<code>(.*?)</code></legend>", page)


def test_a_new_rubric_version_shows_its_own_criteria_and_an_old_annotation_keeps_its_own(
    client, annotator, annotator2, lead
):
    eval_set, v1, (output,) = labeling_setup()
    old = claim(client, annotator, eval_set)
    assert legends(client.get(page_url(old)).content.decode()) == ["correct_amount", "next_step"]  # now cached

    v2 = make_rubric_version(name=v1.rubric.name, version="2", criteria=six_criteria())
    open_queue(eval_set, v2, lead)
    new = claim(Client(), annotator2, eval_set)
    client.force_login(annotator2)
    assert new.rubric_version == v2
    assert legends(client.get(page_url(new)).content.decode()) == [f"crit_{i}" for i in range(1, 7)]

    client.force_login(annotator)
    page = client.get(page_url(old)).content.decode()
    assert legends(page) == ["correct_amount", "next_step"]
    assert "Not current rubric" in page and "<fieldset disabled" in page  # stale: not the cached blank form


def test_the_cache_is_keyed_by_rubric_version_and_content_hash(django_assert_num_queries):
    rv = make_rubric_version()
    with django_assert_num_queries(1):
        forms = criterion_forms(rv)
    with django_assert_num_queries(0):
        assert criterion_forms(rv) == forms
    assert cache_key(rv.pk, rv.content_hash) != cache_key(rv.pk, "another-hash")
    rv.content_hash = "another-hash"  # a different instrument under the same id is not served the old forms
    with django_assert_num_queries(1):
        criterion_forms(rv)


def test_cached_forms_that_do_not_know_a_labels_criterion_are_read_again(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    mine = claim(client, annotator, eval_set)
    data = {"criterion": "next_step", "outcome": "FAIL", "evidence": "NONE", "rubric_version": rv.pk}
    assert client.post(save_url(mine), data, HTTP_HX_REQUEST="true").status_code == 200
    # An entry left over from criteria that were since replaced (possible only while a version is unused).
    stale = [CriterionForm(pk=-1, key="gone", definition="", pass_example="", fail_example="", order=0, blank_html="")]
    caches["fragments"].set(cache_key(rv.pk, rv.content_hash), stale)
    page = client.get(page_url(mine)).content.decode()
    assert legends(page) == ["correct_amount", "next_step"]
    assert 'id="o-next_step-FAIL" name="outcome" value="FAIL" checked' in page


def test_the_cached_form_is_the_partials_own_markup_for_an_unanswered_criterion():
    rv = make_rubric_version(criteria=six_criteria())
    criteria = list(Criterion.objects.filter(rubric_version=rv).order_by("order", "id"))
    for number, (criterion, form) in enumerate(zip(criteria, criterion_forms(rv), strict=True), start=1):
        context = {
            "item": CriterionState(criterion=criterion, number=number),
            "rubric_version": rv,
            "save_url": "/annotations/77/save",
            "csrf_token": "tok-123",
            "locked": False,
            "correcting": False,
        }
        expected = render_to_string("labeling/annotate.html#criterion", context)
        assert form.render_blank(save_url="/annotations/77/save", csrf_token="tok-123") == expected
        assert 'name="csrfmiddlewaretoken" value="tok-123"' in expected


def test_one_annotators_answers_url_and_token_never_reach_anothers_page(client, annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    first = claim(client, annotator, eval_set)
    data = {"criterion": "next_step", "outcome": "FAIL", "evidence": "within 5 business days", "rubric_version": rv.pk}
    assert client.post(save_url(first), data, HTTP_HX_REQUEST="true").status_code == 200
    first_page = client.get(page_url(first)).content.decode()
    assert 'data-saved="within 5 business days"' in first_page  # the draft survives a reload, for its author

    second = claim(Client(), annotator2, eval_set)
    other = Client(enforce_csrf_checks=True)
    other.force_login(annotator2)
    assert (second.output, second.slot) == (output, 2)
    page = other.get(page_url(second)).content.decode()
    assert " checked" not in page and 'data-saved-outcome="FAIL"' not in page
    assert "within 5 business days</textarea>" not in page and 'data-saved="within' not in page
    assert page.count(f'action="{save_url(second)}"') == 2 and save_url(first) not in page
    first_tokens = set(re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', first_page))
    tokens = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert len(tokens) == 4 and len(set(tokens)) == 1 and not first_tokens & set(tokens)  # 2 criteria, submit, log out

    # The token in the cached form is one the server accepts for this annotator's session.
    answer = {"criterion": "correct_amount", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    refused = other.post(save_url(second), answer)
    assert refused.status_code == 403
    saved = other.post(save_url(second), {**answer, "csrfmiddlewaretoken": tokens[0]})
    assert saved.status_code == 302
    assert Label.objects.get(annotation=second).outcome == "PASS"
    assert Label.objects.get(annotation=first).evidence == "within 5 business days"


def test_placeholder_lookalikes_in_rubric_text_are_escaped_never_filled_in(client, annotator):
    criteria = [
        {
            "key": "tricky",
            "definition": "Says <icewater:save-url> or <icewater:csrf-token> & <b>bold</b>.",
            "pass_example": "<icewater:csrf-token>",
            "fail_example": "",
        }
    ]
    eval_set, rv, (output,) = labeling_setup(criteria=criteria)
    mine = claim(client, annotator, eval_set)
    page = client.get(page_url(mine)).content.decode()
    assert "Says &lt;icewater:save-url&gt; or &lt;icewater:csrf-token&gt; &amp; &lt;b&gt;bold&lt;/b&gt;." in page
    assert "<icewater:" not in page
    assert page.count(f'action="{save_url(mine)}"') == 1


def test_answered_and_refused_criteria_are_rendered_by_the_partial(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    mine = claim(client, annotator, eval_set)
    data = {"criterion": "correct_amount", "outcome": "PASS", "evidence": "refund of $40.00", "rubric_version": rv.pk}
    client.post(save_url(mine), data, HTTP_HX_REQUEST="true")
    page = client.get(page_url(mine)).content.decode()
    assert 'class="criterion answered"' in page and ">refund of $40.00</textarea>" in page
    assert 'id="criterion-next_step" class="criterion"' in page  # still the blank form
    refused = client.post(submit_url(mine), {"rubric_version": rv.pk})
    assert refused.status_code == 422
    body = refused.content.decode()
    assert 'id="criterion-next_step" class="criterion has-error"' in body
    assert "Needed before you submit" in body
