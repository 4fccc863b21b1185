"""Suggested examples (issue 23, item 4): the development split's disagreements, false passes first, with the
people's quotes and a verbatim excerpt around them."""

from __future__ import annotations

import pytest

from calibration.workbench.suggested_examples import excerpt_around, suggest_examples
from judging.gold_splits import start_split
from judging.guidance import derive_config
from judging.models import Verdict
from tests.factories import (
    add_verdict,
    annotate,
    annotator,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_run,
)

RESPONSE = "Hello. I have issued a refund of $45.00 to your card. It takes five days. Anything else?"


def test_an_excerpt_is_a_verbatim_piece_around_the_quote_cut_at_whitespace():
    # The quote is text[21:39]; width 30 pads (30 - 18) // 2 = 6 each side: 15..45, inside "issued" and
    # "your", so the edges move out to the whitespace around them: text[14:47].
    text = "Hello. I have issued a refund of $45.00 to your card. It takes five days."
    assert text.index("a refund of $45.00") == 21
    excerpt = excerpt_around(text, "a refund of $45.00", width=30)
    assert excerpt == "issued a refund of $45.00 to your"
    assert excerpt in text
    # Whitespace in the quote is not the text's: still found, the excerpt stays the text's own.
    assert excerpt_around("a  refund\nof $45.00 now", "a refund of $45.00", width=18) == "a  refund\nof $45.00"
    # Negative control: a quote that is not there gives nothing.
    assert excerpt_around(text, "refund of $40.00") is None


def test_a_long_text_without_spaces_is_cut_rather_than_widened_without_end():
    text = "x" * 5000 + "QUOTE" + "y" * 5000
    excerpt = excerpt_around(text, "QUOTE", width=100)
    assert "QUOTE" in excerpt and len(excerpt) <= 100 + 2 * 40


@pytest.fixture
def world(db, lead):
    """Six outputs on correct_amount, both annotators agreeing (gold), each quoting the response; the judge
    is wrong on four: two false passes and two false fails."""
    es, rv = make_eval_set("cal"), make_rubric_version("refund", "1")
    judge = make_llm_judge(name="refund-judge")
    amy, bo = annotator("amy"), annotator("bo")
    run = make_run(es, rv, judge)
    plan = [("FAIL", "PASS"), ("PASS", "FAIL"), ("FAIL", "PASS"), ("PASS", "FAIL"), ("PASS", "PASS"), ("FAIL", "FAIL")]
    outputs = []
    for n, (gold, verdict) in enumerate(plan):
        output = make_output(es, case_id=f"c{n}", response=f"Case {n}. " + RESPONSE)
        quote = "a refund of $45.00" if gold == "FAIL" else "It takes five days."
        annotate(output, rv, amy, 1, {"correct_amount": gold}, evidence={"correct_amount": quote})
        annotate(output, rv, bo, 2, {"correct_amount": gold}, evidence={"correct_amount": "NONE"})
        add_verdict(run, output, "correct_amount", verdict)
        outputs.append(output)
    criterion = rv.criteria.get(key="correct_amount")
    return es, rv, judge, criterion, outputs


def suggestions(world, outputs_allowed):
    es, rv, judge, criterion, _ = world
    return suggest_examples(
        eval_set=es, rubric_version=rv, judge_config=judge, criterion=criterion, outputs=outputs_allowed
    )


def test_false_passes_come_first_with_the_peoples_quote_and_gold_outcome(world):
    *_, outputs = world
    found = suggestions(world, [o.pk for o in outputs])
    assert [(s.output.pk, s.cell) for s in found.items] == [
        (outputs[0].pk, "false-pass"),
        (outputs[2].pk, "false-pass"),
        (outputs[1].pk, "false-fail"),
        (outputs[3].pk, "false-fail"),
    ]
    first = found.items[0]
    assert (first.gold, first.judge, first.quote) == ("FAIL", "PASS", "a refund of $45.00")
    assert first.people_quotes == ["a refund of $45.00"]  # bo quoted nothing (NONE)
    assert first.quote in first.response and first.response in outputs[0].response and first.input == ""
    assert found.disagreements == 4 and found.without_quote == 0


def test_only_the_outputs_of_the_development_split_are_suggested(world):
    *_, outputs = world
    found = suggestions(world, [outputs[1].pk, outputs[4].pk])  # one disagreement, one agreement
    assert [s.output.pk for s in found.items] == [outputs[1].pk]


def test_an_item_without_a_quote_in_input_or_response_is_counted_not_suggested(world):
    es, rv, judge, criterion, outputs = world
    label = outputs[0].annotations.get(slot=1).labels.get()
    label.evidence = "lookup_order"  # a tool call's name: in the transcript, but not in input or response
    label.save()
    found = suggestions(world, [o.pk for o in outputs])
    assert outputs[0].pk not in [s.output.pk for s in found.items]
    assert found.without_quote == 1


def test_a_suggestion_is_an_example_derive_config_accepts_and_then_is_not_suggested_again(world, lead):
    es, rv, judge, criterion, outputs = world
    split = start_split(eval_set=es, rubric_version=rv, by=lead, seed=3)
    found = suggestions(world, split.development)
    assert found.items, "the seed puts a disagreement in development"
    assert {s.output.pk for s in found.items} <= set(split.development)
    chosen = found.items[0]
    v2 = derive_config(
        base=judge,
        guidance={"rubric": rv.ref, "criteria": {"correct_amount": {"examples": [chosen.as_example()]}}},
        by=lead,
    )
    # v2 still errs where the base did (its verdicts copied): the example's item is no longer suggested to it.
    run = make_run(es, rv, v2)
    for output in outputs:
        add_verdict(run, output, "correct_amount", Verdict.objects.get(judge_config=judge, output=output).outcome)
    again = suggest_examples(
        eval_set=es, rubric_version=rv, judge_config=v2, criterion=criterion, outputs=split.development
    )
    assert chosen.output.pk not in [s.output.pk for s in again.items]
    assert again.already_examples == 1 and len(again.items) == len(found.items) - 1
    # Negative control: the base has no examples, so it is still suggested there.
    assert chosen.output.pk in [s.output.pk for s in suggestions(world, split.development).items]
