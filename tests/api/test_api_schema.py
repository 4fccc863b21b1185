"""The OpenAPI schema is as strict as the server, and the server refuses what the schema refuses.

The schema allowed empty names, unknown keys and `records: [null]`; a client generated from it (or a fuzzer
such as schemathesis) could not tell a good request from a bad one. The bodies below are checked against the
published schema with jsonschema, then sent: whatever the schema refuses, the server answers 400.
"""

from __future__ import annotations

import jsonschema
import pytest

from calibration.models import GateResult
from evals.models import Output
from tests.api_helpers import call, create_token
from tests.factories import bulk_verdicts, make_eval_set, make_judge, make_rubric_version, mark_as_gating

pytestmark = pytest.mark.django_db

ASK = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "j"}
OUTPUT = {"case_id": "r-001", "agent_version": "v2", "input": "Refund order 1234?", "response": "Refunded $40.00."}


@pytest.fixture
def schema(client) -> dict:
    return client.get("/api/openapi.json").json()


def body_schema(schema: dict, path: str) -> dict:
    """The JSON body schema of POST `path` (a component's, where it names one), with its $refs resolved against the
    whole document."""
    found = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    if "$ref" in found:
        found = schema["components"]["schemas"][found["$ref"].removeprefix("#/components/schemas/")]
    return {**found, "components": schema["components"]}


def test_the_schema_states_the_servers_rules(schema):
    gate = body_schema(schema, "/api/gate")
    assert gate["additionalProperties"] is False and set(gate["required"]) == {"eval_set", "rubric", "judge"}
    props = gate["properties"]
    assert props["eval_set"]["minLength"] == 1 and props["judge"]["minLength"] == 1
    assert props["rubric"]["pattern"] == "^.+@[^@]+$"
    confidence = next(s for s in props["confidence"]["anyOf"] if s["type"] == "number")
    assert confidence["exclusiveMinimum"] == 0 and confidence["exclusiveMaximum"] == 1
    run = schema["components"]["schemas"]["RunIn"]
    assert run["additionalProperties"] is False and run["properties"]["eval_set"]["minLength"] == 1
    for path in ("/api/outputs", "/api/verdicts"):
        records = body_schema(schema, path)
        assert records["additionalProperties"] is False
        listed = records["properties"]["records"]
        assert (listed["type"], listed["minItems"], listed["items"]["type"]) == ("array", 1, "object")
        names = {p["name"]: p["schema"] for p in schema["paths"][path]["post"]["parameters"]}
        assert names["eval_set"]["minLength"] == 1
    report = {p["name"]: p["schema"] for p in schema["paths"]["/api/calibration-report"]["get"]["parameters"]}
    assert report["judge"]["minLength"] == 1 and report["rubric"]["pattern"] == "^.+@[^@]+$"
    error = schema["components"]["schemas"]["ErrorOut"]
    assert set(error["required"]) == {"error", "problems"}
    problem = schema["components"]["schemas"]["ProblemOut"]
    assert set(problem["required"]) == {"line", "field", "message", "text"}
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for status in ("400", "401", "403", "404", "405", "500"):
                assert operation["responses"][status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorOut"
                }, (path, status)


def resolved(schema: dict, found: dict) -> dict:
    return (
        schema["components"]["schemas"][found["$ref"].removeprefix("#/components/schemas/")]
        if "$ref" in found
        else found
    )


def test_every_success_answer_and_json_body_has_a_real_schema(schema):
    # Swagger showed {"additionalProp1": {}} for every answer (the schema was `dict`): now each names its fields.
    seen = 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("2"):
                    answer = resolved(schema, response["content"]["application/json"]["schema"])
                    assert answer["type"] == "object" and len(answer["properties"]) >= 3, (path, status, answer)
                    seen += 1
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:  # every JSON body is refused with an unknown field, so its schema says so
                assert resolved(schema, body["schema"])["additionalProperties"] is False, (method, path)
    # outputs and verdicts (200, 201), judge runs (202) and their progress, the report, the gate; audit plans: create
    # (201), list, show, next and close, and the 202 of create, show and next while a worker computes a plan's first
    # figures (issue 37); judge guidance (read 200, derive 201) and the gold split; watches: start (201), list, show
    # and stop; audit groups: start (201) and show (issue 37 item 3)
    assert seen == 25


@pytest.fixture
def token(client, lead) -> str:
    rv = make_rubric_version("refund", "1")
    judge = make_judge("j")
    mark_as_gating(rv, judge, ["correct_amount"], make_eval_set("cal"), by=lead)
    bulk_verdicts(make_eval_set("rc-1"), rv, judge, {"correct_amount": {"PASS": 50}})
    return create_token(client, lead, ["push", "judge", "gate", "report"], rv)


GATE_BODIES = [
    ASK,
    {**ASK, "agent_version": None, "min_pass_rate": 0.95, "max_error_rate": 0, "confidence": 0.99},
    {**ASK, "eval_set": ""},
    {**ASK, "judge": ""},
    {**ASK, "min_pass_rat": 0.95},
    {**ASK, "eval_set": 1},
    {**ASK, "min_pass_rate": "0.95"},
    {**ASK, "min_pass_rate": True},
    {**ASK, "min_pass_rate": 1.5},
    {**ASK, "confidence": 1},
    {**ASK, "confidence": 0},
    {**ASK, "rubric": "refund"},
    {**ASK, "rubric": "@1"},
    {"eval_set": "rc-1", "rubric": "refund@1"},
    {**ASK, "agent_version": "v" * 201},
]


@pytest.mark.parametrize("body", GATE_BODIES)
@pytest.mark.parametrize("address", ["/api/gate", "/calibration/api/gate"])
def test_the_gate_refuses_exactly_what_its_schema_refuses(client, schema, token, body, address):
    valid = jsonschema.Draft202012Validator(body_schema(schema, "/api/gate")).is_valid(body)
    response = call(client, "POST", address, token, body)
    assert (response.status_code == 400) == (not valid), (body, response.json())
    if not valid:
        assert not GateResult.objects.exists()


RUN_BODIES = [
    {**ASK, "eval_set": ""},
    {**ASK, "extra": 1},
    {**ASK, "judge": 7},
    {**ASK, "rubric": "refund"},
    {"eval_set": "rc-1", "judge": "j"},
    {**ASK, "agent_version": None},
]


@pytest.mark.parametrize("body", RUN_BODIES)
def test_judge_runs_refuse_what_their_schema_refuses(client, schema, token, body):
    assert not jsonschema.Draft202012Validator(body_schema(schema, "/api/judge-runs")).is_valid(body)
    assert call(client, "POST", "/api/judge-runs", token, body).status_code == 400


RECORD_BODIES = [
    ({"records": [None]}, False),
    ({"records": [1, "x"]}, False),
    ({"records": []}, False),
    ({"records": [OUTPUT], "more": []}, False),
    ({"records": {"0": OUTPUT}}, False),
    ({"records": [OUTPUT]}, True),
]


@pytest.mark.parametrize("body,expected", RECORD_BODIES)
def test_pushes_refuse_what_their_schema_refuses(client, schema, token, body, expected):
    valid = jsonschema.Draft202012Validator(body_schema(schema, "/api/outputs")).is_valid(body)
    assert valid is expected  # the schema says it
    response = call(client, "POST", "/api/outputs", token, body, eval_set="rc-9")
    assert response.status_code == (201 if valid else 400)  # and the server does what it says
    assert Output.objects.filter(case__eval_set__name="rc-9").exists() is valid


def test_empty_names_in_query_parameters_are_refused_as_the_schema_says(client, token):
    for query in ({"eval_set": ""}, {"judge": ""}, {"rubric": "refund"}):
        response = call(client, "GET", "/api/calibration-report", token, **{**ASK, **query})
        assert response.status_code == 400 and response.json()["problems"][0]["field"] == next(iter(query))


def answer_schema(schema: dict, method: str, path: str, status: int) -> dict:
    found = schema["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    return {**resolved(schema, found), "components": schema["components"]}


@pytest.mark.django_db(transaction=True)  # the judge run's lane works in threads, with their own connections
def test_real_success_answers_are_what_their_schemas_say(client, schema, token, monkeypatch):
    from judging import runner

    monkeypatch.setattr(runner, "enqueue_lanes", lambda run_id: True)  # no worker: the run stays queued
    make_judge(
        "ci",
        model_id="",
        backend="instrument",
        instruments={key: {"kind": "regex_must_match", "pattern": "x"} for key in ("correct_amount", "next_step")},
    )
    pushed = call(client, "POST", "/api/outputs", token, {"records": [OUTPUT]}, eval_set="rc-9")
    again = call(client, "POST", "/api/outputs", token, {"records": [OUTPUT]}, eval_set="rc-9")
    started = call(client, "POST", "/api/judge-runs", token, {**ASK, "eval_set": "rc-9", "judge": "ci"})
    assert started.status_code == 202, started.json()
    answers = [
        ("post", "/api/outputs", pushed),
        ("post", "/api/outputs", again),
        ("post", "/api/judge-runs", started),
        ("get", "/api/judge-runs/{run_id}", call(client, "GET", f"/api/judge-runs/{started.json()['run_id']}", token)),
        ("get", "/api/calibration-report", call(client, "GET", "/api/calibration-report", token, **ASK)),
        (
            "get",
            "/api/calibration-report",
            call(client, "GET", "/api/calibration-report", token, **ASK, by="agent_version"),
        ),
        ("post", "/api/gate", call(client, "POST", "/api/gate", token, ASK)),
    ]
    assert [r.status_code for _, _, r in answers] == [201, 200, 202, 200, 200, 200, 200]
    for method, path, response in answers:
        published = answer_schema(schema, method, path, response.status_code)
        jsonschema.validate(response.json(), published, cls=jsonschema.Draft202012Validator)
    gate = answers[-1][2].json()
    wrong = {**gate, "passed": "yes"}  # the negative control: the schema is not "anything goes"
    assert not jsonschema.Draft202012Validator(answer_schema(schema, "post", "/api/gate", 200)).is_valid(wrong)


# Every operation of the API, as clients generated from the schema know it: the operations live in one module per
# concern (api/endpoints/), and a module that is no longer mounted, or an operation renamed, fails here.
OPERATIONS = [
    ("GET", "/api/audit-plan-groups/{group_id}", "api_endpoints_show_audit_group"),
    ("GET", "/api/audit-plans", "api_endpoints_list_audit_plans"),
    ("GET", "/api/audit-plans/{plan_id}", "api_endpoints_show_audit_plan"),
    ("GET", "/api/calibration-report", "api_endpoints_report"),
    ("GET", "/api/gold-split", "api_endpoints_read_split"),
    ("GET", "/api/judge-guidance", "api_endpoints_read_guidance"),
    ("GET", "/api/judge-runs/{run_id}", "api_endpoints_judge_run_progress"),
    ("GET", "/api/watches", "api_endpoints_list_watches"),
    ("GET", "/api/watches/{watch_id}", "api_endpoints_show_watch"),
    ("POST", "/api/audit-plan-groups", "api_endpoints_create_audit_group"),
    ("POST", "/api/audit-plans", "api_endpoints_create_audit_plan"),
    ("POST", "/api/audit-plans/{plan_id}/close", "api_endpoints_close_audit_plan"),
    ("POST", "/api/audit-plans/{plan_id}/next", "api_endpoints_release_audit_plan_next"),
    ("POST", "/api/gate", "api_endpoints_gate"),
    ("POST", "/api/judge-guidance", "api_endpoints_derive_guidance"),
    ("POST", "/api/judge-runs", "api_endpoints_start_judge_run"),
    ("POST", "/api/outputs", "api_endpoints_push_outputs"),
    ("POST", "/api/verdicts", "api_endpoints_push_verdicts"),
    ("POST", "/api/watches", "api_endpoints_start_watch"),
    ("POST", "/api/watches/{watch_id}/stop", "api_endpoints_stop_watch"),
]


def test_every_operation_keeps_its_method_path_and_operation_id(schema):
    found = sorted(
        (method.upper(), path, operation["operationId"])
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    )
    assert found == OPERATIONS


def test_a_lost_operation_would_be_seen(schema):
    """Negative control: the comparison above fails when one operation is missing from the document."""
    del schema["paths"]["/api/gold-split"]
    found = sorted((m.upper(), p, o["operationId"]) for p, ops in schema["paths"].items() for m, o in ops.items())
    assert found != OPERATIONS and len(found) == len(OPERATIONS) - 1
