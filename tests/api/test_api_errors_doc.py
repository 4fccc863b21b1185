"""Every API error answer has the one shape docs/api.md documents, read from the docs themselves.

The gate answered bad parameters as `fields`, the other endpoints as `problems`, some errors had neither, and an
unknown eval set was 409 at the gate and 404 at the report. This reads the "## Errors" section of docs/api.md
(its first JSON example and its status table) and checks real answers of several endpoints against it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from judging import run_status, runner
from tests.api_helpers import call, create_token
from tests.factories import bulk_verdicts, make_eval_set, make_judge, make_output, make_rubric_version, mark_as_gating
from tests.io_helpers import jsonl

pytestmark = pytest.mark.django_db
DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ASK = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "j"}


def errors_section() -> str:
    return DOC.read_text().split("## Errors\n", 1)[1].split("\n## ", 1)[0]


def documented_example() -> dict:
    return json.loads(re.search(r"```json\n(.*?)```", errors_section(), flags=re.S).group(1))


def documented_statuses() -> dict[int, set[str]]:
    """status -> the keys the table says that status adds to the shape."""
    rows = re.findall(r"^\| (\d{3}) \|[^|]*\|([^|]*)\|$", errors_section(), flags=re.M)
    return {int(status): {re.match(r"`(\w+)`", part.strip()).group(1) for part in adds.split(";") if part.strip()}
            for status, adds in rows}  # fmt: skip


def test_the_docs_state_one_shape_and_a_table_of_statuses():
    example = documented_example()
    assert set(example) == {"error", "problems"} and set(example["problems"][0]) == {"line", "field", "message", "text"}
    statuses = documented_statuses()
    assert set(statuses) == {400, 401, 403, 404, 405, 409, 411, 413, 429, 500, 503}
    assert statuses[429] == {"retry_after"}
    assert statuses[413] == {"limit_bytes"} and statuses[409] == {"passed"} and statuses[401] == set()


def assert_documented(response) -> None:
    """The answer has the documented shape: the example's keys and value types, plus only its status's keys."""
    example, statuses = documented_example(), documented_statuses()
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    assert response.status_code in statuses, response.status_code
    assert set(body) - set(example) <= statuses[response.status_code], (response.status_code, body)
    assert isinstance(body["error"], str) and body["error"] and isinstance(body["problems"], list)
    kinds = {"line": (int, type(None)), "field": (str, type(None)), "message": (str,), "text": (str,)}
    for problem in body["problems"]:
        assert set(problem) == set(example["problems"][0])
        assert all(isinstance(problem[key], kinds[key]) for key in problem), problem


@pytest.fixture
def token(client, lead) -> str:
    rv = make_rubric_version("refund", "1")
    judge = make_judge("j")
    mark_as_gating(rv, judge, ["correct_amount"], make_eval_set("cal"), by=lead)
    bulk_verdicts(make_eval_set("rc-1"), rv, judge, {"correct_amount": {"PASS": 50}})
    make_output(make_eval_set("rc-2"), case_id="r-001", agent_version="v2")
    return create_token(client, lead, ["push", "judge", "report", "gate"], rv, pattern="rc-*")


@pytest.mark.parametrize("address", ["/api/gate", "/calibration/api/gate"])
def test_the_documented_example_is_what_the_gate_answers(client, token, address):
    response = call(client, "POST", address, token, {**ASK, "min_pass_rat": 0.95})
    assert response.status_code == 400
    body = response.json()
    assert {"error": body["error"], "problems": body["problems"]} == documented_example()
    assert body["fields"] == {"min_pass_rat": [body["problems"][0]["message"]]}  # the old shape, kept


def test_an_unknown_eval_set_is_404_at_the_gate_as_at_the_report(client, token):
    gate = call(client, "POST", "/api/gate", token, {**ASK, "eval_set": "rc-404"})
    report = call(client, "GET", "/api/calibration-report", token, **{**ASK, "eval_set": "rc-404"})
    runs = call(client, "POST", "/api/judge-runs", token, {**ASK, "eval_set": "rc-404"})
    assert gate.status_code == report.status_code == runs.status_code == 404
    assert gate.json()["error"] == report.json()["error"] == runs.json()["error"] == "unknown eval set 'rc-404'"
    assert gate.json()["passed"] is None


def answers(client, token, settings, monkeypatch) -> list:
    """Error answers of every kind from several endpoints."""
    verdicts = {"eval_set": "rc-2", "rubric": "refund@1", "judge": "j"}
    found = [
        call(client, "GET", "/api/calibration-report", None, **ASK),  # 401
        call(client, "GET", "/api/calibration-report", "icw_nope", **ASK),  # 401
        call(client, "POST", "/api/outputs", token, {"records": [{}]}, eval_set="cal"),  # 403: outside the pattern
        call(client, "GET", "/api/calibration-report", token, **{**ASK, "judge": "nobody"}),  # 404
        call(client, "GET", "/api/judge-runs/4242", token),  # 404
        call(client, "POST", "/api/gate", token, {**ASK, "judge": "nobody"}),  # 404 with passed
        call(client, "POST", "/calibration/api/gate", token, {**ASK, "min_pass_rate": "high"}),  # 400 with fields
        call(client, "POST", "/api/gate", token, {**ASK, "min_pass_rate": 0.1}),  # 400: looser than the lead's
        call(client, "POST", "/api/judge-runs", token, {"eval_set": "rc-1"}),  # 400: missing
        call(client, "GET", "/api/calibration-report", token, **{**ASK, "by": "case"}),  # 400
        call(client, "POST", "/api/verdicts", token, {"records": [{"case_id": "r-001"}]}, **verdicts),  # 400 import
        call(client, "POST", "/api/verdicts", token, '{"records": [{"a": 1, "a": 2}]}', **verdicts),  # 400 body
        call(client, "POST", "/api/outputs", token, jsonl({"x": 1}), "application/x-ndjson", eval_set="rc-3"),
        client.get("/api/nowhere"),  # 404
        client.get("/api/gate"),  # 405
        client.put("/calibration/api/gate"),  # 405
    ]
    make_judge("ungated")
    found.append(call(client, "POST", "/api/gate", token, {**ASK, "judge": "ungated"}))  # 409
    # The broker is down: what enqueue_lanes does then.
    monkeypatch.setattr(runner, "enqueue_lanes", lambda run_id: run_status.fail(run_id, "no broker") or False)
    instruments = {key: {"kind": "regex_must_match", "pattern": "x"} for key in ("correct_amount", "next_step")}
    ok = make_judge("runnable", model_id="", backend="instrument", instruments=instruments)
    monkeypatch.setattr(runner.transaction, "on_commit", lambda enqueue: enqueue())  # as if committed at once
    found.append(call(client, "POST", "/api/judge-runs", token, {**ASK, "judge": ok.name}))  # 503
    settings.ICEWATER_UPLOAD_MAX_BYTES = 10
    found.append(call(client, "POST", "/api/outputs", token, {"records": [{"case_id": "x" * 20}]}, eval_set="rc-4"))
    monkeypatch.setattr("api.endpoints.report.calibration_report", lambda **kw: 1 / 0)
    found.append(call(client, "GET", "/api/calibration-report", token, **ASK))  # 500
    settings.API_TOKEN_FAILURE_LIMIT = 2  # the third unknown token from this address is refused unread
    found += [call(client, "GET", "/api/calibration-report", "icw_nope", **ASK) for _ in range(3)]  # 401, 401, 429
    return found


def test_every_error_answer_has_the_documented_shape(client, token, settings, monkeypatch):
    found = answers(client, token, settings, monkeypatch)
    statuses = sorted({r.status_code for r in found})
    assert statuses == [400, 401, 403, 404, 405, 409, 413, 429, 500, 503]  # every kind was seen
    for response in found:
        assert_documented(response)
