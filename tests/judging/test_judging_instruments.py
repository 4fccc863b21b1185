"""Deterministic instruments: each kind against hand-picked responses, both outcomes reachable."""

from __future__ import annotations

import json

import pytest

from judging.backends.instruments import evaluate, validate_instruments

REFERENCE = "Refund $40.00 for order A7301; the money returns within 5 business days."


@pytest.mark.parametrize(
    ("spec", "response", "reference", "outcome", "evidence"),
    [
        # The whole reference, with any whitespace, case-sensitive unless asked otherwise.
        (
            {"kind": "reference_contained"},
            "Yes.\nRefund  $40.00 for order A7301; the money returns within 5 business days.",
            REFERENCE,
            "PASS",
            "Refund  $40.00 for order A7301; the money returns within 5 business days.",
        ),
        (
            {"kind": "reference_contained"},
            "refund $40.00 for order a7301; the money returns within 5 business days.",
            REFERENCE,
            "FAIL",
            "NONE",
        ),
        (
            {"kind": "reference_contained", "ignore_case": True},
            "REFUND $40.00 FOR ORDER A7301; THE MONEY RETURNS WITHIN 5 BUSINESS DAYS.",
            REFERENCE,
            "PASS",
            "REFUND $40.00 FOR ORDER A7301; THE MONEY RETURNS WITHIN 5 BUSINESS DAYS.",
        ),
        ({"kind": "reference_contained"}, "Anything.", "  ", "NOT_APPLICABLE", "NONE"),
        # Every amount in the reference must be in the response.
        (
            {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
            "I refunded $40.00.",
            REFERENCE,
            "PASS",
            "$40.00",
        ),
        (
            {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
            "I refunded $45.00.",
            REFERENCE,
            "FAIL",
            "NONE",
        ),
        (
            {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
            "I refunded $40.00.",
            "Refund $40.00 and $5.99 shipping.",
            "FAIL",
            "NONE",
        ),
        (
            {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
            "Sorry.",
            "No refund is due.",
            "NOT_APPLICABLE",
            "NONE",
        ),
        # Regular expressions.
        (
            {"kind": "regex_must_match", "pattern": r"within \d+ business days"},
            "Back within 5 business days.",
            "",
            "PASS",
            "within 5 business days",
        ),
        ({"kind": "regex_must_match", "pattern": r"within \d+ business days"}, "Refund processed.", "", "FAIL", "NONE"),
        (
            {"kind": "regex_must_not_match", "pattern": "voucher", "ignore_case": True},
            "Here is a VOUCHER.",
            "",
            "FAIL",
            "VOUCHER",
        ),
        ({"kind": "regex_must_not_match", "pattern": "voucher"}, "Refund issued.", "", "PASS", "NONE"),
        # Length: 5 words, 22 characters.
        ({"kind": "max_length", "max_words": 5}, "one two three four five", "", "PASS", "NONE"),
        ({"kind": "max_length", "max_words": 4}, "one two three four five", "", "FAIL", "NONE"),
        ({"kind": "max_length", "max_chars": 23}, "one two three four five", "", "PASS", "NONE"),
        ({"kind": "max_length", "max_chars": 22}, "one two three four five", "", "FAIL", "NONE"),
        # At least as long: the crude check padding fools.
        ({"kind": "min_length", "min_words": 5}, "one two three four five", "", "PASS", "NONE"),
        ({"kind": "min_length", "min_words": 6}, "one two three four five", "", "FAIL", "NONE"),
        ({"kind": "min_length", "min_chars": 24}, "one two three four five", "", "FAIL", "NONE"),
        # Whatever the output says.
        ({"kind": "constant", "outcome": "PASS"}, "", "", "PASS", "NONE"),
        ({"kind": "constant", "outcome": "ABSTAIN"}, "a fine answer", REFERENCE, "ABSTAIN", "NONE"),
    ],
)
def test_each_instrument_answers_as_its_definition_says(spec, response, reference, outcome, evidence):
    result = evaluate(spec, response=response, reference=reference)
    assert (result.outcome, result.evidence) == (outcome, evidence)
    raw = json.loads(result.raw)
    assert raw["instrument"] == spec and raw["outcome"] == outcome


def test_valid_instruments_have_no_problems():
    assert (
        validate_instruments(
            {
                "a": {"kind": "reference_contained", "ignore_case": True},
                "b": {"kind": "regex_must_match", "pattern": "x+"},
                "c": {"kind": "max_length", "max_chars": 10, "max_words": 2},
            }
        )
        == []
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must be a JSON object"),
        ({"a": "max_length"}, "instruments['a'] must be an object"),
        ({"a": {"kind": "llm"}}, "kind 'llm' is not one of"),
        ({"a": {"kind": "regex_must_match"}}, "needs a non-empty regular expression"),
        ({"a": {"kind": "regex_must_match", "pattern": "[a-"}}, "not a valid regular expression"),
        ({"a": {"kind": "max_length", "max_words": 0}}, "max_words must be a whole number of at least 1"),
        ({"a": {"kind": "max_length", "max_words": True}}, "max_words must be a whole number"),
        ({"a": {"kind": "max_length", "max_chars": 3, "pattern": "x"}}, "unknown setting(s) pattern"),
        ({"a": {"kind": "reference_contained", "ignore_case": "yes"}}, "ignore_case must be true or false"),
        ({"a": {"kind": "min_length"}}, "min_length needs min_chars or min_words"),
        ({"a": {"kind": "min_length", "min_chars": -1}}, "min_chars must be a whole number of at least 1"),
        ({"a": {"kind": "constant"}}, "constant needs an outcome, one of PASS, FAIL, NOT_APPLICABLE, ABSTAIN"),
        ({"a": {"kind": "constant", "outcome": "ERROR"}}, "constant needs an outcome"),
        ({"a": {"kind": "max_length"}}, "max_length needs max_chars or max_words"),
    ],
)
def test_bad_instruments_are_explained(value, message):
    problems = validate_instruments(value)
    assert problems and any(message in p for p in problems)
