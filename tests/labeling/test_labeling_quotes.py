"""Several evidence quotes on one label: each one checked, where each was found said, kept as revisions."""

from __future__ import annotations

import pytest

from evals.transcript import MAX_QUOTES, Transcript
from labeling.models import Annotation, Label
from tests.factories import default_workspace, labeling_setup
from tests.labeling_helpers import next_url, save_url

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
    assert label.quotes_outside_response == 2  # the tool call's and the input's, stored for the report
    post(client, draft, outcome="PASS", evidence=RESPONSE, more_evidence=INPUT)  # a draft is edited in place
    assert Label.objects.get().quotes_outside_response == 1
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


# --- import and export: evidence as a string or a list -------------------------------------------


@pytest.fixture
def refunds():
    from formats.case_import import import_cases
    from formats.rubric_import import import_rubric
    from tests.io_helpers import data_source

    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")


def import_lines(lines: list[dict], name: str = "labels.jsonl"):
    import json

    from formats.label_import import import_labels
    from tests.io_helpers import source

    text = "".join(json.dumps(line) + "\n" for line in lines)
    return import_labels(
        workspace=default_workspace(), source=source(name, text), eval_set_name="refunds", rubric_ref="refund-support@1"
    )


def line(evidence, annotator: str = "maria", criterion: str = "correct_amount") -> dict:
    return {"case_id": "r-001", "agent_version": "v1", "criterion": criterion, "annotator": annotator,
            "outcome": "PASS", "evidence": evidence}  # fmt: skip


def export(fmt: str) -> str:
    import io

    from formats.export import export_data

    out = io.StringIO()
    export_data(
        workspace=default_workspace(),
        eval_set_name="refunds",
        what="labels",
        fmt=fmt,
        stream=out,
        rubric_ref="refund-support@1",
    )
    return out.getvalue()


def test_imported_evidence_may_be_a_list_and_quotes_outside_the_response_are_counted(refunds):
    report = import_lines(
        [line(["refund of $40.00", '"duplicate_charge": 40.0', "charged twice"]), line("refund of $40.00", "li")]
    )
    maria = Label.objects.get(annotation__annotator__username="maria")
    assert (maria.evidence, maria.more_evidence) == ("refund of $40.00", ['"duplicate_charge": 40.0', "charged twice"])
    assert Label.objects.get(annotation__annotator__username="li").more_evidence == []
    # The tool result and the input are outside the agent's response: two of the four quotes.
    assert report.counts["quotes_outside_response"] == 2
    stored = Label.objects.values_list("annotation__annotator__username", "quotes_outside_response")
    assert dict(stored) == {"maria": 2, "li": 0}  # on each label, for the calibration report to sum
    assert "2 evidence quotes found only outside the response" in str(report)


@pytest.mark.parametrize(
    "evidence,message",
    [
        ([], 'field "evidence": is an empty list'),
        (["refund of $40.00", 7], 'field "evidence[1]": must be a non-empty quote, not a number'),
        (["refund of $40.00", "NONE"], "NONE says there is nothing to quote"),
        (["refund of $40.00"] * (MAX_QUOTES + 1), f"has {MAX_QUOTES + 1} quotes; at most {MAX_QUOTES} per label"),
    ],
)
def test_a_bad_evidence_list_is_refused_and_nothing_is_written(refunds, evidence, message):
    from evals.problems import ImportFailed
    from tests.io_helpers import row_counts

    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        import_lines([line(evidence)])
    assert message in str(exc.value)
    assert row_counts() == before


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_several_quotes_round_trip_through_export_and_import(refunds, fmt):
    from formats.label_import import import_labels
    from tests.io_helpers import dump_labels, source

    import_lines([line(["refund of $40.00", '"duplicate_charge": 40.0']), line("NONE", "li")])
    text = export(fmt)
    if fmt == "jsonl":
        assert '"evidence": ["refund of $40.00", "\\"duplicate_charge\\": 40.0"]' in text
        assert '"evidence": "NONE"' in text  # one quote stays a string
    before = dump_labels("refunds")
    more = list(Label.objects.order_by("pk").values_list("evidence", "more_evidence"))
    Annotation.objects.all().delete()
    import_labels(
        workspace=default_workspace(),
        source=source(f"l.{fmt}", text),
        eval_set_name="refunds",
        rubric_ref="refund-support@1",
    )
    assert dump_labels("refunds") == before
    assert list(Label.objects.order_by("pk").values_list("evidence", "more_evidence")) == more
    again = import_labels(
        workspace=default_workspace(),
        source=source(f"l.{fmt}", text),
        eval_set_name="refunds",
        rubric_ref="refund-support@1",
    )
    assert again.counts["labels_unchanged"] == 2 and not again.changed
    assert export(fmt) == text


def test_an_import_does_not_overwrite_a_label_whose_quotes_differ(refunds):
    from evals.problems import ImportFailed

    import_lines([line(["refund of $40.00", "charged twice"])])
    with pytest.raises(ImportFailed, match="with different evidence"):
        import_lines([line(["refund of $40.00", '"duplicate_charge": 40.0'])])
    assert Label.objects.get().more_evidence == ["charged twice"]


def test_the_reviewer_sees_every_quote_highlighted_and_where_it_was_found(client, reviewer, annotator, annotator2):
    from django.urls import reverse

    from evals.models import Criterion
    from tests.factories import annotate_directly

    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", RESPONSE)})
    annotate_directly(output, rv, annotator2, {"correct_amount": ("FAIL", INPUT)})
    Label.objects.filter(annotation__annotator=annotator).update(more_evidence=[TOOL])
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.force_login(reviewer)
    page = client.get(reverse("labeling:adjudicate", args=[output.pk, criterion.pk])).content.decode()
    assert '<mark class="hl-a">refund of $40.00</mark>' in page
    assert '<mark class="hl-a">&quot;duplicate_charge&quot;: 40.0</mark>' in page  # the second quote too
    assert '<mark class="hl-b">charged twice for order 1234</mark>' in page
    places = [p.split("</p>")[0] for p in page.split('class="muted small quote-place">')[1:]]
    assert places == ["found in response", "found in tool call 1", "found in input"]
