"""labeling 0008: labels written before Label.quotes_outside_response existed get their count from the transcript."""

from __future__ import annotations

import pytest

from tests.factories import make_eval_set, make_output, make_rubric_version, make_user

pytestmark = pytest.mark.slow  # migrates from an old schema with data

BEFORE = [("labeling", "0007_label_more_evidence")]
AFTER = [("labeling", "0008_label_quotes_outside_response")]


@pytest.mark.django_db(transaction=True)
def test_existing_labels_get_the_count_of_their_quotes_only_outside_the_response(migrator):
    rv = make_rubric_version("refund", "1")
    es = make_eval_set("cal")
    output = make_output(
        es,
        input="Refund order 1234 please",
        tool_calls=[{"name": "lookup", "args": {"order": "1234"}, "response": {"amount": 40}}],
        response="Refunded order 1234: $40.",
    )
    other = make_output(es, input="Where is my parcel?", tool_calls=[], response="It left the depot today.")
    people = [make_user(name) for name in ("maria", "li", "ola", "pat")]
    criterion_id = rv.criteria.get(key="correct_amount").pk
    old = migrator(BEFORE)
    Annotation, Label = old.get_model("labeling", "Annotation"), old.get_model("labeling", "Label")
    # (output, evidence, more_evidence) -> what the count must be, worked out by hand from the transcripts.
    cases = [
        (output, "Refund order", ['"amount": 40'], 2),  # input only, tool call only
        (output, "1234", [], 0),  # the response has it too
        (output, "NONE", [], 0),  # no quote
        (other, "Where is my parcel?", ["not in this transcript"], 1),  # a quote found nowhere is not "outside"
    ]
    ids = []
    for slot, ((out, evidence, more, _), person) in enumerate(zip(cases, people, strict=True), start=1):
        ann = Annotation.objects.create(output_id=out.pk, rubric_version_id=rv.pk, annotator_id=person.pk, slot=slot)
        ids.append(
            Label.objects.create(annotation=ann, criterion_id=criterion_id, outcome="PASS", evidence=evidence,
                                 more_evidence=more).pk
        )  # fmt: skip

    new = migrator(AFTER)
    counts = dict(new.get_model("labeling", "Label").objects.values_list("pk", "quotes_outside_response"))
    assert [counts[pk] for pk in ids] == [expected for *_, expected in cases]
    migrator(BEFORE)  # and back: the column goes, the labels stay
    assert old.get_model("labeling", "Label").objects.count() == 4
