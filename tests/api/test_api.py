"""The JSON API: scoped tokens, pushes through the importers, judge runs, the report, the gate, the docs."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from api.models import GateToken
from calibration.models import GateResult
from evals.models import Case, Output
from judging import runner
from judging.lane import work_lane
from judging.models import JudgeRun, Verdict
from tests.api_helpers import call, create_token
from tests.factories import (
    bulk_verdicts,
    calibration_set,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    mark_as_gating,
)
from tests.inspect_helpers import INSPECT_MODEL
from tests.io_helpers import jsonl, row_counts

pytestmark = pytest.mark.django_db

OUTPUT = {"case_id": "r-001", "agent_version": "v2", "input": "Refund order 1234?", "response": "Refunded $40.00."}
ENDPOINTS = [  # (method, path, scope, query) of every endpoint
    ("POST", "/api/outputs", "push", {"eval_set": "rc-1"}),
    ("POST", "/api/verdicts", "push", {"eval_set": "rc-1", "rubric": "refund@1", "judge": "j"}),
    ("POST", "/api/judge-runs", "judge", {}),
    ("GET", "/api/judge-runs/1", "judge", {}),
    ("GET", "/api/calibration-report", "report", {"eval_set": "cal", "rubric": "refund@1", "judge": "j"}),
    ("POST", "/api/gate", "gate", {}),
]


@pytest.fixture
def rv(db):
    return make_rubric_version("refund", "1")


@pytest.fixture
def tokens(client, lead, rv) -> dict[str, str]:
    # The push token may push verdicts into the imported judge configs these tests name (docs/security.md).
    judges = {"push": ("ci-judge", "grader")}
    return {
        s: create_token(client, lead, [s], rv, judges=judges.get(s, ())) for s in ("push", "judge", "report", "gate")
    }


def said(response) -> str:
    """Everything an error answer tells a person: the message, and each problem's line, field and message."""
    body = response.json()
    problems = [f"line {p['line']}, field {p['field']}: {p['message']}" for p in body.get("problems") or []]
    return " | ".join([body["error"], *problems])


# -- tokens ------------------------------------------------------------------------------------------------


def test_a_lead_gives_a_token_its_scopes_on_the_gate_page(client, lead, rv):
    secret = create_token(client, lead, ["push", "report"], rv, pattern="rc-*", project="nightly")
    stored = GateToken.objects.get()
    assert secret.startswith("icw_") and stored.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert stored.scopes == ["push", "report"] and stored.eval_set_pattern == "rc-*" and stored.rubric_version == rv
    client.force_login(lead)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert secret not in page and "push, report" in page
    assert 'name="scopes" value="gate"' in page and 'value="judge"' in page  # the form offers every scope


@pytest.mark.parametrize("scopes", [[], ["admin"], ["gate", "everything"]])
def test_a_token_without_a_known_scope_is_not_created(client, lead, rv, scopes):
    client.force_login(lead)
    data = {"project": "x", "rubric_version": rv.pk, "eval_set_pattern": "*", "scopes": scopes}
    response = client.post(reverse("calibration:create_token"), data)
    assert response.status_code == 422
    assert "This field is required" in response.content.decode() or "Select a valid choice" in response.content.decode()
    assert not GateToken.objects.exists()


def test_a_token_without_the_gate_scope_cannot_gate_at_the_old_address_either(client, lead, rv):
    push_only = create_token(client, lead, ["push"], rv)
    response = call(client, "POST", "/calibration/api/gate", push_only, {"eval_set": "rc", "rubric": "refund@1"})
    assert response.status_code == 403 and "may not gate (its scopes: push)" in response.json()["error"]
    assert not GateResult.objects.exists()


def test_a_token_reaches_only_its_rubric_version_and_eval_sets(client, lead, rv):
    make_rubric_version("refund", "2")
    token = create_token(client, lead, ["push", "report", "judge"], rv, pattern="rc-*")
    outside = call(client, "POST", "/api/outputs", token, {"records": [OUTPUT]}, eval_set="cal-1")
    assert outside.status_code == 403 and "match 'rc-*' only" in outside.json()["error"]
    other = {"eval_set": "rc-1", "rubric": "refund@2", "judge": "j"}
    assert "is for refund@1 only" in call(client, "GET", "/api/calibration-report", token, **other).json()["error"]
    assert call(client, "POST", "/api/judge-runs", token, other).status_code == 403
    run = JudgeRun.objects.create(eval_set=make_eval_set("cal-2"), rubric_version=rv, judge_config=make_judge("j"))
    # Outside its scope, an existing run answers as a missing one does: ids tell nothing (the 404 test's message).
    hidden = call(client, "GET", f"/api/judge-runs/{run.pk}", token)
    assert hidden.status_code == 404
    assert hidden.json() == {"error": "there is no judge run with this id", "problems": []}
    assert row_counts()["EvalSet"] == 1 and JudgeRun.objects.count() == 1  # nothing was written
    inside = call(client, "POST", "/api/outputs", token, {"records": [OUTPUT]}, eval_set="rc-1")
    assert inside.status_code == 201  # the positive control


def test_a_revoked_token_stops_working(client, lead, tokens):
    token = GateToken.objects.get(scopes=["report"])
    client.force_login(lead)
    client.post(reverse("calibration:revoke_token", args=[token.pk]))
    client.logout()
    response = call(client, "GET", "/api/calibration-report", tokens["report"], **ENDPOINTS[4][3])
    assert response.status_code == 401 and "revoked" in response.json()["error"]


@pytest.mark.parametrize("method,path,scope,query", ENDPOINTS)
def test_every_endpoint_refuses_a_missing_unknown_or_wrongly_scoped_token(
    client, lead, tokens, method, path, scope, query
):
    missing = call(client, method, path, None, **query)
    assert missing.status_code == 401 and "Authorization: Bearer" in missing.json()["error"]
    unknown = call(client, method, path, "icw_not-a-token", **query)
    assert unknown.status_code == 401 and "unknown token" in unknown.json()["error"]
    other = next(t for s, t in tokens.items() if s != scope)
    wrong = call(client, method, path, other, **query)
    assert wrong.status_code == 403 and f"may not {scope}" in wrong.json()["error"]
    client.force_login(lead)  # a browser session is not a token
    assert call(client, method, path, None, **query).status_code == 401
    assert row_counts()["EvalSet"] == 0 and not JudgeRun.objects.exists()
    assert GateToken.objects.filter(last_used_at__isnull=False).count() == 0  # refused calls are not uses


# -- pushing outputs -----------------------------------------------------------------------------------------


def test_pushing_a_jsonl_file_imports_it_like_import_cases(client, tokens):
    body = jsonl(OUTPUT, {**OUTPUT, "case_id": "r-002"})
    response = call(client, "POST", "/api/outputs", tokens["push"], body, "application/x-ndjson", eval_set="rc-1")
    assert response.status_code == 201
    result = response.json()
    assert result["counts"]["outputs_created"] == 2 and 'outputs.jsonl -> eval set "rc-1" (new)' in result["summary"]
    again = call(client, "POST", "/api/outputs", tokens["push"], body, "application/x-ndjson", eval_set="rc-1")
    assert again.status_code == 200 and again.json()["counts"]["outputs_unchanged"] == 2
    assert GateToken.objects.get(scopes=["push"]).last_used_at is not None


def test_pushing_json_records_and_a_csv_file(client, tokens):
    response = call(client, "POST", "/api/outputs", tokens["push"], {"records": [OUTPUT]}, eval_set="rc-1")
    assert response.status_code == 201 and Output.objects.get().response == "Refunded $40.00."
    csv = "case_id,agent_version,input,response\nr-009,v2,Where is my parcel?,On its way.\n"
    response = call(client, "POST", "/api/outputs", tokens["push"], csv, "text/csv", eval_set="rc-1", filename="o.csv")
    assert response.status_code == 201 and Case.objects.count() == 2


def test_a_bad_record_refuses_the_whole_push_with_its_line_and_field(client, tokens):
    records = [
        OUTPUT,
        {**OUTPUT, "case_id": "r-002", "latency_ms": "slow"},
        {**OUTPUT, "case_id": "r-003", "colour": 1},
    ]
    response = call(client, "POST", "/api/outputs", tokens["push"], {"records": records}, eval_set="rc-1")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "the push was refused; nothing was imported" and body["truncated"] is False
    assert [(p["line"], p["field"]) for p in body["problems"]] == [(2, "latency_ms"), (3, "colour")]
    assert "must be a number of milliseconds" in body["problems"][0]["message"]
    assert body["problems"][0]["text"].startswith('records, line 2, field "latency_ms"')
    assert row_counts()["EvalSet"] == 0 and row_counts()["Output"] == 0


@pytest.mark.parametrize(
    "body,content_type,query,status,fragment",
    [
        ("{not json", "application/json", {"eval_set": "rc-1"}, 400, "the body was refused: body: not valid JSON"),
        ('{"records": {"case_id": 1}}', "application/json", {"eval_set": "rc-1"}, 400, 'must be {"records": [...]}'),
        ('{"records": [], "extra": 1}', "application/json", {"eval_set": "rc-1"}, 400, 'must be {"records": [...]}'),
        ('{"records": []}', "application/json", {"eval_set": "rc-1"}, 400, "the file is empty"),
        ("[1, 2]", "application/x-ndjson", {"eval_set": "rc-1"}, 400, "expected one JSON object a line"),
        (b"\xff\xfe\x00c", "application/x-ndjson", {"eval_set": "rc-1"}, 400, "UTF-16"),
        (jsonl(OUTPUT), "application/x-ndjson", {}, 400, "bad parameters: eval_set: is missing"),
        (jsonl(OUTPUT), "application/x-ndjson", {"eval_set": " rc "}, 400, "must not start or end with spaces"),
        (jsonl(OUTPUT), "application/x-ndjson", {"eval_set": "rc", "filename": "r.yaml"}, 400, "import_rubric"),
    ],
)
def test_garbage_pushes_get_a_helpful_error_and_write_nothing(
    client, tokens, body, content_type, query, status, fragment
):
    response = call(client, "POST", "/api/outputs", tokens["push"], body, content_type, **query)
    assert response.status_code == status
    assert fragment in said(response)
    assert row_counts()["EvalSet"] == 0 and row_counts()["Case"] == 0


def test_a_push_above_the_limit_is_refused_with_the_limit(client, tokens, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 1000
    big = jsonl(*({**OUTPUT, "case_id": f"r-{i:03d}"} for i in range(30)))
    assert len(big) > 1000
    response = call(client, "POST", "/api/outputs", tokens["push"], big, "application/x-ndjson", eval_set="rc-1")
    assert response.status_code == 413
    body = response.json()
    assert body["limit_bytes"] == 1000 and "or more; a push may be at most 1,000 bytes" in body["error"]
    assert "split it into several pushes" in body["error"]
    assert row_counts()["EvalSet"] == 0
    small = call(client, "POST", "/api/outputs", tokens["push"], jsonl(OUTPUT), "application/x-ndjson", eval_set="a")
    assert small.status_code == 201  # the negative control: under the limit it goes through
    settings.ICEWATER_UPLOAD_MAX_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000, 100
    raised = call(client, "POST", "/api/outputs", tokens["push"], big, "application/x-ndjson", eval_set="b")
    assert raised.status_code == 201  # the upload limit decides, not Django's in-memory form-data cap


def test_an_inspect_log_can_be_pushed_as_outputs_and_as_verdicts(client, tokens, refund_logs, offline):
    log = refund_logs["eval"].read_bytes()
    response = call(
        client,
        "POST",
        "/api/outputs",
        tokens["push"],
        log,
        "application/octet-stream",
        eval_set="rc",
        filename="r.eval",
    )
    assert response.status_code == 201 and set(Output.objects.values_list("agent_version", flat=True)) == {
        INSPECT_MODEL
    }
    query = {"eval_set": "rc", "rubric": "refund@1", "judge": "grader", "filename": "r.eval"}
    refused = call(client, "POST", "/api/verdicts", tokens["push"], log, "application/octet-stream", **query)
    # The API's parameters are named, not the command's flags.
    message = refused.json()["problems"][0]["message"]
    assert refused.status_code == 400 and "--" not in message
    assert "with scorer=model_graded_qa=CRITERION or leave it out with skip_scorer=model_graded_qa" in message
    query["scorer"] = ["model_graded_qa=correct_amount"]
    pushed = call(client, "POST", "/api/verdicts", tokens["push"], log, "application/octet-stream", **query)
    assert pushed.status_code == 201 and pushed.json()["counts"]["verdicts_created"] == 3
    assert sorted(Verdict.objects.values_list("outcome", flat=True)) == ["FAIL", "FAIL", "PASS"]


# -- pushing verdicts ----------------------------------------------------------------------------------------


@pytest.fixture
def rc(rv):
    es = make_eval_set("rc-1")
    make_output(es, case_id="r-001", agent_version="v2")
    return es, rv


VERDICT = {"case_id": "r-001", "agent_version": "v2", "criterion": "correct_amount", "outcome": "PASS", "raw": ""}
VERDICT_QUERY = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "ci-judge"}


def test_pushing_verdicts_imports_them_like_import_verdicts(client, tokens, rc):
    body = jsonl(VERDICT, {**VERDICT, "criterion": "next_step", "outcome": "ERROR", "error_reason": "timed out"})
    response = call(client, "POST", "/api/verdicts", tokens["push"], body, "application/x-ndjson", **VERDICT_QUERY)
    assert response.status_code == 201 and response.json()["counts"]["verdicts_created"] == 2
    assert dict(Verdict.objects.values_list("criterion__key", "outcome")) == {
        "correct_amount": "PASS",
        "next_step": "ERROR",
    }
    again = call(client, "POST", "/api/verdicts", tokens["push"], body, "application/x-ndjson", **VERDICT_QUERY)
    assert again.status_code == 200 and Verdict.objects.count() == 2


@pytest.mark.parametrize(
    "records,query,fragment",
    [
        ([VERDICT, {**VERDICT, "outcome": "pass"}], {}, "line 2, field outcome: must be one of"),
        ([{**VERDICT, "sample": "first"}], {}, "field sample: must be a whole number"),
        ([VERDICT], {"eval_set": "nope"}, 'there is no eval set "nope"'),
        ([VERDICT], {"score": ["C"]}, "must be written score=VALUE=OUTCOME"),
        ([{**VERDICT, "case_id": "r-404"}], {}, 'no case "r-404"'),
    ],
)
def test_garbage_verdicts_get_a_helpful_error_and_write_nothing(client, tokens, rc, records, query, fragment):
    response = call(client, "POST", "/api/verdicts", tokens["push"], {"records": records}, **{**VERDICT_QUERY, **query})
    assert response.status_code == 400 and fragment in said(response)
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists()


# -- judge runs ----------------------------------------------------------------------------------------------

INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": "business days"},
}


@pytest.fixture
def judge(rc):
    return make_judge("ci-judge", model_id="", backend="instrument", instruments=INSTRUMENTS)


@pytest.mark.django_db(transaction=True)  # the lane works in threads, with their own connections
def test_a_run_started_over_the_api_is_queued_and_its_progress_read(client, tokens, judge, monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(runner, "enqueue_lanes", lambda run_id: queued.append(run_id) or True)
    ask = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "ci-judge"}
    response = call(client, "POST", "/api/judge-runs", tokens["judge"], ask)
    assert response.status_code == 202
    started = response.json()
    assert started["status"] == "queued" and started["total_items"] == 1 and started["expected_verdicts"] == 2
    assert queued == [started["run_id"]]  # the lanes are enqueued once the run is committed
    work_lane(started["run_id"])  # what a worker's lane does with them
    progress = call(client, "GET", f"/api/judge-runs/{started['run_id']}", tokens["judge"]).json()
    assert progress["status"] == "done" and progress["complete"] is True and progress["percent"] == 100
    assert progress["verdicts"] == 2 and progress["outcomes"] == {"PASS": 2}


@pytest.mark.parametrize(
    "body,status,fragment",
    [
        ("{oops", 400, "the body was refused: body: not valid JSON"),
        ([1, 2], 400, "bad parameters"),
        ({"eval_set": 5, "rubric": "refund@1", "judge": "ci-judge"}, 400, "eval_set: Input should be a valid string"),
        ({"rubric": "refund@1", "judge": "ci-judge"}, 400, "eval_set: is missing"),
        (
            {"eval_set": "nope", "rubric": "refund@1", "judge": "ci-judge"},
            404,
            "unknown eval set 'nope'",
        ),
        ({"eval_set": "rc-1", "rubric": "refund@9", "judge": "ci-judge"}, 403, "this token is for refund@1 only"),
        ({"eval_set": "rc-1", "rubric": "refund@1", "judge": "ci-judge", "agent_version": "v9"}, 400, "no outputs of"),
    ],
)
def test_garbage_run_requests_get_a_helpful_error_and_start_nothing(client, tokens, judge, body, status, fragment):
    response = call(client, "POST", "/api/judge-runs", tokens["judge"], body)
    assert response.status_code == status and fragment in said(response)
    if status == 404:  # an agent version of an eval set in scope may be named; other names that exist are not
        assert "(known:" not in said(response)
    assert not JudgeRun.objects.exists()


def test_the_progress_of_an_unknown_run_is_a_404(client, tokens):
    response = call(client, "GET", "/api/judge-runs/4242", tokens["judge"])
    assert response.status_code == 404 and response.json()["error"] == "there is no judge run with this id"
    assert call(client, "GET", "/api/judge-runs/abc", tokens["judge"]).status_code == 400


# -- the calibration report and the gate -------------------------------------------------------------------


@pytest.fixture
def calibrated(rv):
    cal, j = make_eval_set("cal"), make_judge("j")
    calibration_set(
        cal, rv, j, [{"correct_amount": ("PASS", "PASS", "PASS")}, {"correct_amount": ("FAIL", "FAIL", "PASS")}]
    )
    return cal, rv, j


def _without_time(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "computed_at"}


def test_the_report_is_the_same_json_as_the_command(client, tokens, calibrated):
    for extra in ({}, {"by": "agent_version"}):
        response = call(client, "GET", "/api/calibration-report", tokens["report"], **ENDPOINTS[4][3], **extra)
        assert response.status_code == 200
        out = io.StringIO()
        flags = ["--by", "agent_version"] if extra else []
        call_command(
            "calibration_report",
            "--eval-set",
            "cal",
            "--rubric",
            "refund@1",
            "--judge",
            "j",
            "--format",
            "json",
            *flags,
            stdout=out,
        )
        assert _without_time(response.json()) == _without_time(json.loads(out.getvalue()))
    row = response.json()["segments"][0]["criteria"][0]
    assert (row["true_pass"], row["false_pass"]) == (1, 1)  # the planted false pass is there


@pytest.mark.parametrize(
    "query,status,fragment",
    [
        ({"judge": "nobody"}, 404, "unknown judge config 'nobody'"),
        ({"eval_set": "nope"}, 404, "unknown eval set 'nope'"),
        ({"rubric": "refund"}, 400, "rubric: must be written NAME@VERSION"),
        ({"rubric": "refund@2"}, 403, "this token is for refund@1 only, not 'refund@2'"),
        ({"by": "case"}, 400, "by must be agent_version"),
        ({"by": "agent_version", "agent_version": "v1"}, 400, "exclude each other"),
        ({"judge": None}, 400, "bad parameters: judge: is missing"),
    ],
)
def test_garbage_report_requests_get_a_helpful_error(client, tokens, calibrated, query, status, fragment):
    params = {k: v for k, v in {**ENDPOINTS[4][3], **query}.items() if v is not None}
    response = call(client, "GET", "/api/calibration-report", tokens["report"], **params)
    assert response.status_code == status and fragment in response.json()["error"]
    assert "(known:" not in response.json()["error"]  # what else exists is not told to a token holder


@pytest.fixture
def gate_token(client, lead, calibrated) -> str:
    cal, rv, j = calibrated
    mark_as_gating(rv, j, ["correct_amount"], cal, by=lead)
    bulk_verdicts(make_eval_set("rc-7"), rv, j, {"correct_amount": {"PASS": 50}})
    return create_token(client, lead, ["gate"], rv, pattern="rc-*")


def test_the_gate_answers_at_api_gate_exactly_as_at_its_old_address(client, gate_token, tokens):
    ask = {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j"}
    new = call(client, "POST", "/api/gate", gate_token, ask)
    old = call(client, "POST", "/calibration/api/gate", gate_token, ask)
    assert new.status_code == old.status_code == 200 and new.json() == old.json()
    assert new.json()["passed"] is True
    assert list(GateResult.objects.values_list("source", "token__project")) == [("http", "refund-bot CI")] * 2
    assert call(client, "POST", "/api/gate", gate_token, {**ask, "judge": "nobody"}).status_code == 404


def test_both_gate_addresses_are_one_operation_with_one_token_check(client, gate_token, tokens, lead):
    # Each address checked the token in its own words (the old one: "send a valid gate token", "a lead can add
    # one that may"); now both are the API's gate operation, so every refusal is word for word the same.
    ask = {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j"}
    for secret in (None, "", "icw_not-a-token", tokens["push"], tokens["report"]):
        new, old = (call(client, "POST", address, secret, ask) for address in ("/api/gate", "/calibration/api/gate"))
        assert new.status_code == old.status_code and new.status_code in (401, 403) and new.json() == old.json()
    missing = call(client, "POST", "/calibration/api/gate", None, ask).json()["error"]
    assert "send a valid gate token as 'Authorization: Bearer <token>'" in missing  # both tests' words
    assert not GateResult.objects.exists()
    assert call(client, "POST", "/calibration/api/gate", gate_token, ask).status_code == 200  # the negative control


@pytest.mark.parametrize(
    "secret,body,status,fragment",
    [
        (None, {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j"}, 401, "Authorization: Bearer"),
        ("push", {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j"}, 403, "may not gate (its scopes: push)"),
        ("gate", "not json", 400, "not valid JSON"),
        ("gate", {"eval_set": "rc-7", "rubric": "refund@1"}, 400, "judge"),
        ("gate", {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j", "confidence": "high"}, 400, "confidence"),
        ("gate", {"eval_set": "rc-7", "rubric": "other@1", "judge": "j"}, 403, "may only gate on refund@1"),
        ("gate", {"eval_set": "cal", "rubric": "refund@1", "judge": "j"}, 403, "names match 'rc-*'"),
        ("gate", {"eval_set": "rc-7", "rubric": "refund@1", "judge": "j", "min_pass_rate": 0.5}, 400, "policy"),
    ],
)
def test_garbage_gate_requests_get_a_helpful_error_and_record_nothing(
    client, gate_token, tokens, secret, body, status, fragment
):
    token = {"gate": gate_token, "push": tokens["push"], None: None}[secret]
    response = call(client, "POST", "/api/gate", token, body)
    assert response.status_code == status and fragment in json.dumps(response.json())  # calibration's own body
    assert not GateResult.objects.exists()


# -- the schema and the docs page ----------------------------------------------------------------------------


def test_the_openapi_schema_lists_every_endpoint_with_bearer_auth(client):
    schema = client.get("/api/openapi.json").json()
    assert set(schema["paths"]) == {
        "/api/outputs",
        "/api/verdicts",
        "/api/judge-runs",
        "/api/judge-runs/{run_id}",
        "/api/calibration-report",
        "/api/gate",
        "/api/audit-plans",
        "/api/audit-plans/{plan_id}",
        "/api/audit-plans/{plan_id}/next",
        "/api/audit-plans/{plan_id}/close",
        "/api/audit-plan-groups",
        "/api/audit-plan-groups/{group_id}",
        "/api/judge-guidance",
        "/api/gold-split",
        "/api/watches",
        "/api/watches/{watch_id}",
        "/api/watches/{watch_id}/stop",
    }
    scheme = schema["components"]["securitySchemes"]["TokenAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")  # its words: tests/api/test_gate_tokens_panel.py
    assert schema["paths"]["/api/outputs"]["post"]["security"] == [{"TokenAuth": []}]


def test_the_docs_page_serves_swagger_from_our_own_static_files_without_inline_script(client):
    response = client.get("/api/docs")
    page = response.content.decode()
    # Swagger's icons are data: SVG images: allowed on this page only, scripts stay 'self' only.
    policy = dict(d.strip().split(" ", 1) for d in response["Content-Security-Policy"].split(";"))
    assert policy["img-src"] == "'self' data:" and policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert "data:" not in client.get("/accounts/login/")["Content-Security-Policy"]
    assert '<script src="/static/ninja/swagger-ui-bundle.js">' in page and "/static/ninja/swagger-ui.css" in page
    assert not re.search(r"https?://", page)  # no CDN, no outside address at all
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.S)
    executable = [body for attrs, body in scripts if "application/json" not in attrs]
    assert scripts and all(not body.strip() for body in executable)  # every script is a file, none inline
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200
