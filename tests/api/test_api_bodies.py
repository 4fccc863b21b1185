"""JSON bodies of the API are read with the import files' rules, and every API path answers JSON.

One parser (api/strict_json.py) for every JSON body: /api/outputs and /api/verdicts ({"records"}),
/api/judge-runs, /api/gate and /calibration/api/gate. A key twice, nesting deeper than 64, a lone surrogate or a
NUL character is a 400 that says where, never a 500 and never a silently kept last value.
"""

from __future__ import annotations

import json
import logging

import pytest

from calibration.models import GateResult
from judging.models import JudgeRun, Verdict
from tests.api_helpers import call, create_token
from tests.factories import bulk_verdicts, make_eval_set, make_judge, make_output, make_rubric_version, mark_as_gating
from tests.io_helpers import row_counts

pytestmark = pytest.mark.django_db

GATE_ADDRESSES = ("/api/gate", "/calibration/api/gate")
ASK = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "j"}
VERDICT_QUERY = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "ci-judge"}
DEEP = "[" * 3000 + "]" * 3000  # what crashed Python's parser (RecursionError): 500 before


@pytest.fixture
def world(lead):
    rv = make_rubric_version("refund", "1")
    cal, judge = make_eval_set("cal"), make_judge("j")
    mark_as_gating(rv, judge, ["correct_amount"], cal, by=lead)
    bulk_verdicts(make_eval_set("rc-1"), rv, judge, {"correct_amount": {"PASS": 50}})
    make_output(make_eval_set("rc-2"), case_id="r-001", agent_version="v2")
    return rv


@pytest.fixture
def token(client, lead, world) -> str:
    return create_token(client, lead, ["push", "judge", "report", "gate"], world, judges=("ci-judge",))


def counts() -> dict[str, int]:
    return {**row_counts(), "JudgeRun": JudgeRun.objects.count(), "GateResult": GateResult.objects.count()}


def refusal(response) -> tuple[int, str, list]:
    """(status, error, [(field, message)]) of an error answer, which must be JSON."""
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    return response.status_code, body["error"], [(p["field"], p["message"]) for p in body["problems"]]


# -- repeated keys ----------------------------------------------------------------------------------------


def test_a_verdict_pushed_with_outcome_twice_is_refused_not_stored_as_the_last_one(client, token):
    # The example docs/formats.md gives: FAIL then PASS was stored as PASS.
    body = (
        '{"records": [{"case_id": "r-001", "agent_version": "v2", "criterion": "correct_amount", '
        '"outcome": "FAIL", "raw": "", "outcome": "PASS"}]}'
    )
    query = {**VERDICT_QUERY, "eval_set": "rc-2"}
    status, error, problems = refusal(call(client, "POST", "/api/verdicts", token, body, **query))
    assert status == 400 and "this key appears twice in the same object" in error
    assert problems == [("records[0].outcome", problems[0][1])] and "write it once" in problems[0][1]
    assert not Verdict.objects.filter(output__case__eval_set__name="rc-2").exists()
    once = body.replace('"outcome": "FAIL", ', "")  # the negative control: the same record with one outcome
    assert call(client, "POST", "/api/verdicts", token, once, **query).status_code == 201
    assert list(Verdict.objects.filter(output__case__eval_set__name="rc-2").values_list("outcome", flat=True)) == [
        "PASS"
    ]


@pytest.mark.parametrize("address", GATE_ADDRESSES)
def test_a_gate_body_with_a_key_twice_is_refused_at_both_addresses(client, token, address):
    body = '{"eval_set": "rc-1", "rubric": "refund@1", "judge": "j", "min_pass_rate": 0.99, "min_pass_rate": 0.5}'
    status, error, problems = refusal(call(client, "POST", address, token, body))
    assert status == 400 and problems[0][0] == "min_pass_rate" and "appears twice" in error
    assert not GateResult.objects.exists()


# -- nesting, surrogates, NUL: a 400 that says where, on every endpoint with a JSON body ---------------------

ENDPOINTS_WITH_BODIES = [
    ("/api/outputs", {"eval_set": "rc-9"}),
    ("/api/verdicts", VERDICT_QUERY),
    ("/api/judge-runs", {}),
    ("/api/gate", {}),
    ("/calibration/api/gate", {}),
]


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path,query", ENDPOINTS_WITH_BODIES)
def test_a_body_nested_3000_deep_is_a_400_naming_the_limit(client, token, settings, path, query, debug):
    settings.DEBUG = debug  # a traceback with debug on, an HTML page with it off, before
    before = counts()
    for body in ('{"records": ' + DEEP + "}", '{"eval_set": ' + DEEP + "}"):
        status, error, problems = refusal(call(client, "POST", path, token, body, **query))
        assert status == 400 and "nested more than 64 levels deep" in error
        assert problems[0][0].startswith(("records[0][0]", "eval_set[0]"))
    assert counts() == before


@pytest.mark.parametrize("path,query", ENDPOINTS_WITH_BODIES)
@pytest.mark.parametrize(
    "text,field,message",
    [
        ('"rc-\\ud800"', "eval_set", "contains an unpaired \\uD800-\\uDFFF escape, which is not valid Unicode"),
        ('"rc-\\u0000"', "eval_set", "contains a NUL character (\\u0000), which cannot be stored"),
    ],
)
def test_a_lone_surrogate_or_a_nul_in_a_body_is_refused_with_where_it_is(
    client, token, path, query, text, field, message
):
    gate_ask = '{"eval_set": %s, "rubric": "refund@1", "judge": "j"}' % text  # noqa: UP031 - JSON braces
    records = '{"records": [{"case_id": %s, "agent_version": "v2", "input": "i", "response": "r"}]}' % text  # noqa: UP031
    body = records if path in ("/api/outputs", "/api/verdicts") else gate_ask
    before = counts()
    status, error, problems = refusal(call(client, "POST", path, token, body, **query))
    where = "records[0].case_id" if body is records else field
    assert status == 400 and problems == [(where, message)] and message in error
    assert counts() == before


def test_a_nul_in_a_query_parameter_is_a_400_not_a_database_error(client, token):
    report = {"eval_set": "cal\x00", "rubric": "refund@1", "judge": "j"}
    status, error, problems = refusal(call(client, "GET", "/api/calibration-report", token, **report))
    assert status == 400 and problems == [("eval_set", "contains a NUL character (\\u0000), which cannot be stored")]
    assert "the query was refused" in error
    pushed = call(client, "POST", "/api/outputs", token, '{"records": []}', eval_set="rc\x00")
    assert refusal(pushed)[0] == 400 and row_counts()["EvalSet"] == 3
    fine = call(client, "GET", "/api/calibration-report", token, **{**report, "eval_set": "cal"})
    assert fine.status_code == 200  # the negative control


# -- unknown keys -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("address", GATE_ADDRESSES)
def test_a_misspelt_tightening_key_is_refused_not_ignored(client, token, address):
    status, error, problems = refusal(call(client, "POST", address, token, {**ASK, "min_pass_rat": 0.99}))
    assert status == 400 and problems[0][0] == "min_pass_rat"
    assert 'unknown field (did you mean "min_pass_rate"?)' in problems[0][1] and "known fields: " in problems[0][1]
    assert not GateResult.objects.exists()
    spelt = call(client, "POST", address, token, {**ASK, "min_pass_rate": 0.99})
    assert spelt.status_code == 200 and spelt.json()["criteria"][0]["min_pass_rate"] == 0.99


def test_an_unknown_key_in_a_judge_run_body_is_refused(client, token):
    status, _, problems = refusal(call(client, "POST", "/api/judge-runs", token, {**ASK, "agent": "v2"}))
    assert status == 400 and problems[0][0] == "agent" and "unknown field" in problems[0][1]
    assert not JudgeRun.objects.filter(eval_set__name="rc-1", judge_config__name="j", items__isnull=False).exists()


# -- JSON on every path: unknown addresses, methods, server errors ------------------------------------------------


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("GET", "/api/nothing-here", 404),
        ("POST", "/api/nothing/here", 404),
        ("GET", "/api/", 404),
        ("GET", "/api/outputs", 405),
        ("DELETE", "/api/gate", 405),
        ("PUT", "/api/judge-runs", 405),
        ("GET", "/calibration/api/gate", 405),
    ],
)
def test_unknown_addresses_and_methods_under_the_api_answer_json(client, method, path, status):
    response = client.generic(method, path)
    code, error, problems = refusal(response)
    assert code == status and error and problems == []
    if status == 405:
        assert response["Allow"] and f"{method} is not allowed here; use {response['Allow']}" == error


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("address", ["/api/calibration-report", *GATE_ADDRESSES])
def test_a_server_error_is_json_and_logged_with_its_traceback(
    client, token, settings, monkeypatch, caplog, address, debug
):
    settings.DEBUG = debug

    def broken(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr("api.endpoints.report.calibration_report", broken)
    monkeypatch.setattr("api.endpoints.gate.gate_and_record", lambda *a, **k: broken())
    method = "GET" if "report" in address else "POST"
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = call(client, method, address, token, None if method == "GET" else ASK, **ASK)
    status, error, problems = refusal(response)
    assert status == 500 and "an error on our side" in error and problems == []
    assert "database went away" not in response.content.decode()  # no traceback, debug on or off
    logged = [r for r in caplog.records if r.exc_info]
    assert logged and "the database went away" in str(logged[-1].exc_info[1])


def test_an_oversized_gate_body_is_a_413_in_json(client, token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    for address in GATE_ADDRESSES:
        status, error, _ = refusal(call(client, "POST", address, token, {**ASK, "agent_version": "v" * 150}))
        assert status == 413 and "larger than 100 bytes" in error
    status, error, _ = refusal(call(client, "POST", "/api/judge-runs", token, {**ASK, "agent_version": "v" * 150}))
    assert status == 413
    assert not GateResult.objects.exists()


def test_the_gate_answers_the_same_json_at_both_addresses_for_bad_bodies(client, token):
    for body in ("{", "[1]", {**ASK, "extra": 1}, {**ASK, "eval_set": ""}, '{"eval_set": ' + DEEP + "}"):
        new, old = (call(client, "POST", address, token, body) for address in GATE_ADDRESSES)
        assert new.status_code == old.status_code == 400 and new.json() == old.json()
    assert json.loads(call(client, "POST", "/api/gate", token, ASK).content)["passed"] is True
