"""Parsing a judge's answer: five outcomes, every criterion in rubric order, ERROR is never FAIL.

Expected outcomes are written from the rules in the issue, one case per rule.
"""

from __future__ import annotations

import json

import pytest

from judging.parse import parse_answer, parse_refusal

KEYS = ["correct_amount", "grounded", "next_step"]


def answer(*items) -> str:
    return json.dumps({"criteria": [{"criterion": k, "evidence": e, "verdict": v} for k, e, v in items]})


def outcomes(parsed):
    return [(p.criterion, p.outcome) for p in parsed]


def test_each_of_the_four_judge_verdicts_comes_through():
    raw = answer(("correct_amount", "$40.00", "PASS"), ("grounded", "NONE", "FAIL"), ("next_step", "NONE", "ABSTAIN"))
    assert outcomes(parse_answer(raw, KEYS)) == [
        ("correct_amount", "PASS"),
        ("grounded", "FAIL"),
        ("next_step", "ABSTAIN"),
    ]
    raw = answer(("correct_amount", "x", "NOT_APPLICABLE"), ("grounded", "x", "PASS"), ("next_step", "x", "PASS"))
    assert parse_answer(raw, KEYS)[0].outcome == "NOT_APPLICABLE"


def test_results_follow_rubric_order_not_the_judges():
    raw = answer(("next_step", "a", "FAIL"), ("correct_amount", "b", "PASS"), ("grounded", "c", "PASS"))
    parsed = parse_answer(raw, KEYS)
    assert outcomes(parsed) == [("correct_amount", "PASS"), ("grounded", "PASS"), ("next_step", "FAIL")]
    assert [p.evidence for p in parsed] == ["b", "c", "a"]


def test_a_skipped_criterion_is_error_and_the_others_stand():
    parsed = parse_answer(answer(("correct_amount", "$40.00", "PASS"), ("grounded", "x", "FAIL")), KEYS)
    assert outcomes(parsed) == [("correct_amount", "PASS"), ("grounded", "FAIL"), ("next_step", "ERROR")]
    assert parsed[2].error_reason == "the judge skipped this criterion"
    assert parsed[2].error_kind == "parse"


@pytest.mark.parametrize("verdict", ["MAYBE", "ERROR", "N/A", "", None, 1, True])
def test_a_verdict_outside_the_vocabulary_is_error(verdict):
    raw = json.dumps({"criteria": [{"criterion": "grounded", "evidence": "q", "verdict": verdict}]})
    parsed = parse_answer(raw, ["grounded"])
    assert parsed[0].outcome == "ERROR"
    assert "is not one of PASS, FAIL, NOT_APPLICABLE, ABSTAIN" in parsed[0].error_reason


def test_case_and_spaces_around_a_verdict_do_not_matter():
    raw = json.dumps({"criteria": [{"criterion": "grounded", "evidence": "q", "verdict": " pass "}]})
    assert parse_answer(raw, ["grounded"])[0].outcome == "PASS"


def test_extra_criteria_are_ignored():
    raw = answer(("grounded", "x", "PASS"), ("invented", "y", "FAIL"))
    assert outcomes(parse_answer(raw, ["grounded"])) == [("grounded", "PASS")]


def test_conflicting_duplicates_are_error_and_agreeing_ones_are_not():
    conflicting = answer(("grounded", "x", "PASS"), ("grounded", "y", "FAIL"))
    parsed = parse_answer(conflicting, ["grounded"])[0]
    assert parsed.outcome == "ERROR" and "2 conflicting verdicts" in parsed.error_reason
    agreeing = answer(("grounded", "x", "PASS"), ("grounded", "y", "pass"))
    assert parse_answer(agreeing, ["grounded"])[0].outcome == "PASS"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "the judge returned an empty answer"),
        ("   \n ", "the judge returned an empty answer"),
        (None, "the judge returned an empty answer"),
        ('{"criteria": [{"criterion": "grou', "the judge's answer is not valid JSON (Unterminated string"),
        ("PASS", "the judge's answer is not valid JSON (Expecting value at line 1 column 1)"),
        ('["PASS"]', 'has no "criteria" list'),
        ('{"criteria": "PASS"}', 'has no "criteria" list'),
        ('{"verdicts": []}', 'has no "criteria" list'),
    ],
)
def test_unusable_answers_make_every_criterion_error_with_the_reason(raw, reason):
    parsed = parse_answer(raw, KEYS)
    assert [p.outcome for p in parsed] == ["ERROR"] * 3
    assert all(reason in p.error_reason for p in parsed)


def test_a_fenced_json_block_is_read_but_prose_around_json_is_not():
    fenced = "```json\n" + answer(("grounded", "x", "FAIL")) + "\n```"
    assert parse_answer(fenced, ["grounded"])[0].outcome == "FAIL"
    chatty = "Here is my verdict: " + answer(("grounded", "x", "FAIL"))
    assert parse_answer(chatty, ["grounded"])[0].outcome == "ERROR"


def test_entries_that_are_not_objects_are_skipped_not_trusted():
    raw = json.dumps({"criteria": ["grounded PASS", {"criterion": "grounded", "evidence": 7, "verdict": "FAIL"}]})
    parsed = parse_answer(raw, ["grounded"])[0]
    assert parsed.outcome == "FAIL"
    assert parsed.evidence == ""  # a non-text quote is no quote: the evidence check will flag it


def test_a_refusal_is_error_for_every_criterion():
    parsed = parse_refusal(KEYS, "I can't help with that.")
    assert [p.outcome for p in parsed] == ["ERROR"] * 3
    assert parsed[0].error_kind == "refusal"
    assert parsed[0].error_reason == "the judge refused: I can't help with that."
