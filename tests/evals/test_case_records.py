"""A case record's first problem, in the words and order imports have always used (CaseRecordIn, pydantic)."""

from __future__ import annotations

import pytest

from evals.problems import RecordError
from formats.case_records import build_rows

OK = {"case_id": "c1", "input": "Q", "response": "A"}


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({**OK, "case_id": ""}, "case_id", "is empty"),
        ({**OK, "case_id": "x" * 301}, "case_id", "is longer than 300 characters"),
        (
            {**OK, "case_id": "a\x00" + "x" * 300},
            "case_id",
            "contains a NUL character (\\u0000), which cannot be stored",
        ),
        ({**OK, "case_id": True}, "case_id", "must be text, not true/false"),
        ({**OK, "input": " "}, "input", "is empty"),
        ({"case_id": "c1", "response": "A"}, "input", "is missing"),
        ({**OK, "agent_version": []}, "agent_version", "must be text, not a list"),
        ({**OK, "tool_calls": [{"name": " "}]}, "tool_calls[0].name", "must be the tool's name (non-empty text)"),
        (
            {**OK, "tool_calls": [{"name": "t"}, 3]},
            "tool_calls[1]",
            "must be an object with name, args and response, not a number",
        ),
        (
            {**OK, "tool_calls": [{"nmae": "t"}]},
            "tool_calls[0].nmae",
            'unknown field (did you mean "name"?); a tool call has name, args, response',
        ),
        ({**OK, "latency_ms": True}, "latency_ms", "must be a number of milliseconds, not true/false"),
        ({**OK, "latency_ms": -0.6}, "latency_ms", "must be between 0 and 2147483647, not -1"),
        ({**OK, "metadata": [], "case_id": ""}, "metadata", "must be a JSON object, not a list"),
        # An unknown field first (a misspelt name explains the rest), then an output without its response.
        (
            {**OK, "inptu": "Q", "case_id": ""},
            "inptu",
            'unknown field (did you mean "input"?); known fields: agent_version, case_id, input, latency_ms, '
            "metadata, output_metadata, reference, response, tool_calls",
        ),
        (
            {"case_id": "c1", "input": "Q", "tool_calls": [{"x": 1}]},
            "response",
            "is missing (the record has tool_calls of an output)",
        ),
        ({**OK, "response": None}, "response", "is missing"),
    ],
)
def test_a_bad_record_is_refused_with_its_first_problem(record, field, message):
    with pytest.raises(RecordError) as exc:
        build_rows(record, 1, "default")
    assert (exc.value.field, exc.value.message) == (field, message)


def test_a_good_record_keeps_its_values_and_gets_the_defaults():
    record = {**OK, "agent_version": 0, "latency_ms": 2.5, "tool_calls": [{"name": "t"}], "reference": None}
    case, output = build_rows(record, 7, "default")
    assert (case.line, case.case_id, case.reference, case.metadata_json) == (7, "c1", "", "{}")
    assert output is not None
    assert output.agent_version == "0"  # a whole number is a name, not "left out"
    assert output.latency_ms == 2  # rounded half to even
    assert output.tool_calls_json == '[{"args":{},"name":"t","response":null}]'
    assert build_rows({**OK, "agent_version": ""}, 1, "v9")[1].agent_version == "v9"


def test_a_csv_row_without_an_output_ignores_its_blank_output_cells():
    row = {"case_id": "c1", "input": "Q", "response": "", "agent_version": " ", "tool_calls": "", "latency_ms": ""}
    assert build_rows(row, 2, "default", from_csv=True)[1] is None
    with pytest.raises(RecordError) as exc:  # with an output, the same cell is a name that starts with a space
        build_rows({**row, "response": "A"}, 2, "default", from_csv=True)
    assert (exc.value.field, exc.value.message) == ("agent_version", "must not start or end with spaces: ' '")
    with pytest.raises(RecordError) as exc:
        build_rows({**row, "response": "A", "agent_version": "", "tool_calls": "[{bad"}, 2, "default", from_csv=True)
    assert exc.value.field == "tool_calls" and exc.value.message.startswith("is not valid JSON")
