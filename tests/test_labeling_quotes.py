"""Several evidence quotes on one label: each one checked, where each was found said, kept as revisions."""

from __future__ import annotations

import pytest

from labeling.models import Annotation, Label
from labeling.transcript import MAX_QUOTES, Transcript

from .labeling_helpers import (  # noqa: F401 - fast_passwords is an autouse fixture
    fast_passwords,
    labeling_setup,
    next_url,
    save_url,
)

pytestmark = pytest.mark.django_db

TOOL = '"duplicate_charge": 40.0'  # in the tool call's result
RESPONSE = "refund of $40.00"
INPUT = "charged twice for order 1234"


@pytest.fixture
def draft(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    return Annotation.objects.get()


def post(client, annotation, **data):
    data = {"criterion": "correct_amount", "rubric_version": annotation.rubric_version_id, **data}
    return client.post(save_url(annotation), data, HTTP_HX_REQUEST="true")


def test_a_label_keeps_a_second_and_third_quote_and_says_where_each_was_found(client, draft):
    r = post(client, draft, outcome="PASS", evidence=RESPONSE, more_evidence=f"{TOOL}\n\n  {INPUT}  \n")
    assert r.status_code == 200
    label = Label.objects.get()
    assert (label.evidence, label.more_evidence) == (RESPONSE, [TOOL, INPUT])
    assert label.quotes == [RESPONSE, TOOL, INPUT]
    body = r.content.decode()
    assert "the 3 quotes are in the transcript (1: response; 2: tool call 1; 3: input)" in body
    assert f">{TOOL}\n{INPUT}</textarea>" in body.replace("&quot;", '"')  # the box shows them, one per line


def test_one_quote_not_in_the_transcript_refuses_the_whole_save(client, draft):
    post(client, draft, outcome="PASS", evidence=RESPONSE)
    before = list(Label.objects.values_list("outcome", "evidence", "more_evidence"))
    r = post(client, draft, outcome="FAIL", evidence=RESPONSE, more_evidence=f"{TOOL}\na refund of $45.00")
    assert r.status_code == 422
    assert "Quote 3 (“a refund of $45.00”) is not in the transcript" in r.content.decode()
    assert list(Label.objects.values_list("outcome", "evidence", "more_evidence")) == before
    assert "a refund of $45.00</textarea>" in r.content.decode()  # what was typed is kept


@pytest.mark.parametrize(
    "evidence,more,message",
    [
        ("NONE", RESPONSE, "The first quote says NONE but others follow"),
        (RESPONSE, "none", "Quote 2 is NONE"),
        (RESPONSE, "\n".join([RESPONSE] * MAX_QUOTES), f"At most {MAX_QUOTES} quotes per criterion"),
    ],
)
def test_nonsense_quote_lists_are_refused_with_a_reason(client, draft, evidence, more, message):
    r = post(client, draft, outcome="PASS", evidence=evidence, more_evidence=more)
    assert r.status_code == 422 and message in r.content.decode()
    assert not Label.objects.exists()


def test_quotes_given_only_in_the_second_box_become_the_first_quote(client, draft):
    post(client, draft, outcome="FAIL", evidence="", more_evidence=f"{TOOL}\n{RESPONSE}")
    label = Label.objects.get()
    assert (label.evidence, label.more_evidence) == (TOOL, [RESPONSE])


def test_changing_only_a_further_quote_after_submission_is_a_new_revision(client, draft):
    from labeling.annotate import save_label, submit

    criteria = {c.key: c for c in draft.rubric_version.criteria.all()}
    for key in criteria:
        save_label(annotation=draft, criterion=criteria[key], outcome="PASS", evidence=RESPONSE)
    submit(annotation=draft)
    label = save_label(
        annotation=draft, criterion=criteria["correct_amount"], outcome="PASS", evidence=RESPONSE, more_evidence=[TOOL]
    )
    assert label.revision == 2 and label.more_evidence == [TOOL]
    old = Label.objects.get(criterion=criteria["correct_amount"], revision=1)
    assert (old.is_current, old.more_evidence) == (False, [])


def test_where_a_quote_is_found_and_how_many_are_only_outside_the_response():
    t = Transcript(
        input="Refund order 1234 please",
        tool_calls=[{"name": "lookup", "args": {"order": "1234"}, "response": {"amount": 40}}, {"name": "refund"}],
        response="Refunded order 1234: $40.",
    )
    assert t.found_in("1234") == ["input", "tool call 1", "response"]
    assert t.found_in('"amount": 40') == ["tool call 1"]
    assert t.found_in("refund") == ["tool call 2"]  # a tool's name is part of its call
    assert t.found_in("NONE") == [] and t.found_in("not there") == []
    assert t.outside_response_only(["Refund order", '"amount": 40', "$40.", "not there"]) == 2
