"""The release gate over HTTP with per-project tokens scoped to a rubric version and eval set pattern, and the
page of gate results."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.urls import reverse

from api.models import GateToken
from calibration.models import GateResult
from tests import api_helpers
from tests.factories import (
    bulk_verdicts,
    default_workspace,
    make_eval_set,
    make_judge,
    make_rubric_version,
    mark_as_gating,
)

pytestmark = pytest.mark.django_db
API = "/calibration/api/gate"


@pytest.fixture
def world(lead):
    cal, rc = make_eval_set("cal"), make_eval_set("rc-1")
    rv = make_rubric_version("refund", "1")
    judge = make_judge("gpt-judge")
    mark_as_gating(rv, judge, ["correct_amount"], cal, by=lead)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 50}})
    return cal, rc, rv, judge


def create_token(client, lead, rubric_version, pattern: str = "rc-*") -> str:
    """Create a gate-scoped token the way a lead does, through the page, and read it off the page."""
    return api_helpers.create_token(client, lead, ["gate"], rubric_version, pattern)


@pytest.fixture
def token(client, world, lead) -> str:
    return create_token(client, lead, world[2])


def ask(client, secret: str | None, body, **headers):
    if secret is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(API, data=data, content_type="application/json", **headers)


GOOD = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge"}


def test_a_token_is_shown_once_and_stored_only_as_a_hash(client, token, lead):
    stored = GateToken.objects.get()
    assert token.startswith("icw_") and len(token) > 40
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {stored.project, stored.hint, stored.token_hash}
    assert stored.hint == token[:8] and stored.created_by == lead
    client.force_login(lead)
    assert token not in client.get(reverse("calibration:gates")).content.decode()


def test_ci_asks_the_gate_with_the_token(client, token):
    response = ask(client, token, {**GOOD, "min_pass_rate": 0.9})
    assert response.status_code == 200
    result = response.json()
    assert list(result) == [
        "passed",
        "binding_criterion",
        "met_count",
        "gating_count",
        "failed_criteria",
        "criteria",
        "provenance",
    ]
    assert result["passed"] is True and result["criteria"][0]["passes"] == 50
    record = GateResult.objects.get()
    assert record.source == "http" and record.token.project == "refund-bot CI" and record.decision == "passed"
    assert GateToken.objects.get().last_used_at is not None
    failed = ask(client, token, {**GOOD, "min_pass_rate": 0.99, "confidence": 0.99})
    assert failed.status_code == 200 and failed.json()["passed"] is False


def test_the_gate_cannot_decide_over_http_either(client, token):
    make_judge("ungated")  # a judge with no gating criteria: nothing to decide on
    response = ask(client, token, {**GOOD, "judge": "ungated"})
    assert response.status_code == 409
    assert response.json() == {
        "error": "no criteria of refund@1 are approved as gating with judge ungated",
        "problems": [],
        "passed": None,
    }
    assert GateResult.objects.get().decision == "undecided"


@pytest.mark.parametrize(
    "change,error",
    [
        ({"judge": "nobody"}, "unknown judge config 'nobody'"),
        ({"eval_set": "rc-404"}, "unknown eval set 'rc-404'"),
    ],
)
def test_an_unknown_name_over_http_does_not_list_the_names_that_exist(client, token, change, error):
    make_eval_set("rc-secret-launch")
    make_judge("internal-judge-b")
    response = ask(client, token, {**GOOD, **change})
    body = response.content.decode()
    # 404 as for the report and judge runs (it was 409 before); "passed" stays null for clients that read it.
    assert response.status_code == 404 and response.json() == {"error": error, "problems": [], "passed": None}
    for other in ("(known", "cal", "rc-1", "rc-secret-launch", "gpt-judge", "internal-judge-b"):
        assert other not in body
    assert GateResult.objects.get().reason == error


def test_a_looser_threshold_over_http_is_refused_with_400_and_nothing_is_stored(client, token):
    for loose in ({"min_pass_rate": 0.5}, {"max_error_rate": 0.5}, {"confidence": 0.5}):
        response = ask(client, token, {**GOOD, **loose})
        assert response.status_code == 400
        assert "a caller may only tighten the gate policy" in response.json()["error"]
        assert f"{next(iter(loose))} 0.5" in response.json()["error"]
    assert not GateResult.objects.exists()
    tighter = ask(client, token, {**GOOD, "min_pass_rate": 0.92, "max_error_rate": 0.01, "confidence": 0.96})
    assert tighter.status_code == 200
    assert {k: tighter.json()["criteria"][0][k] for k in ("min_pass_rate", "max_error_rate", "confidence")} == {
        "min_pass_rate": 0.92,
        "max_error_rate": 0.01,
        "confidence": 0.96,
    }
    record = GateResult.objects.get()
    assert (record.min_pass_rate, record.max_error_rate, record.confidence) == (0.92, 0.01, 0.96)


@pytest.mark.parametrize(
    "auth,status,message",
    [
        (None, 401, "send a valid gate token"),
        ("icw_wrong", 401, "send a valid gate token"),
        ("", 401, "send a valid gate token"),
    ],
)
def test_bad_tokens_are_refused(client, world, auth, status, message):
    response = ask(client, auth, GOOD)
    assert response.status_code == status and message in response.json()["error"]
    assert not GateResult.objects.exists()


def test_a_revoked_token_stops_working(client, token, lead):
    client.force_login(lead)
    client.post(reverse("calibration:revoke_token", args=[GateToken.objects.get().pk]))
    client.logout()
    response = ask(client, token, GOOD)
    assert response.status_code == 401 and "revoked" in response.json()["error"]
    assert not GateResult.objects.exists()


def test_a_token_only_gates_its_own_project(client, token):
    make_rubric_version("billing", "1")
    response = ask(client, token, {**GOOD, "rubric": "billing@1"})
    assert response.status_code == 403
    assert response.json() == {"error": "this token may only gate on refund@1", "problems": []}
    assert not GateResult.objects.exists()


def test_a_token_for_rubric_version_1_cannot_gate_version_2(client, token, world, lead):
    cal, _, _, judge = world
    rv2 = make_rubric_version("refund", "2")
    mark_as_gating(rv2, judge, ["correct_amount"], cal, by=lead)
    bulk_verdicts(make_eval_set("rc-2"), rv2, judge, {"correct_amount": {"PASS": 50}})
    v2 = {**GOOD, "rubric": "refund@2", "eval_set": "rc-2"}
    response = ask(client, token, v2)
    assert response.status_code == 403 and response.json()["error"] == "this token may only gate on refund@1"
    assert not GateResult.objects.exists()
    assert ask(client, create_token(client, lead, rv2), v2).status_code == 200  # the positive control


def test_a_token_only_gates_the_eval_sets_its_pattern_matches(client, token, world):
    cal = world[0]
    bulk_verdicts(cal, world[2], world[3], {"correct_amount": {"PASS": 50}})
    response = ask(client, token, {**GOOD, "eval_set": "cal"})
    assert response.status_code == 403
    assert response.json()["error"] == "this token may only gate eval sets whose names match 'rc-*'"
    assert ask(client, token, {**GOOD, "eval_set": "RC-1"}).status_code == 403  # names are case-sensitive
    assert not GateResult.objects.exists()
    assert ask(client, token, GOOD).status_code == 200


@pytest.mark.parametrize(
    "body,fragment",
    [
        ("not json", "the body was refused: body: not valid JSON (Expecting value at line 1, column 1)"),
        ("[1, 2]", "the body was refused: body: must be a JSON object"),
        ({"rubric": "refund@1", "judge": "gpt-judge"}, "bad parameters: eval_set: is missing"),
        ({**GOOD, "min_pass_rate": "high"}, "min_pass_rate: Input should be a valid number"),
        ({**GOOD, "confidence": 1.5}, "confidence: Input should be less than 1"),
        ({**GOOD, "confidence": 0}, "confidence: Input should be greater than 0"),
        ({**GOOD, "max_error_rate": -1}, "max_error_rate: Input should be greater than or equal to 0"),
        ({**GOOD, "rubric": "refund"}, "rubric: must be written NAME@VERSION"),
        ({**GOOD, "eval_set": ""}, "eval_set: String should have at least 1 character"),
        ({**GOOD, "eval_set": 7}, "eval_set: Input should be a valid string"),
        ({**GOOD, "min_pass_rate": True}, "min_pass_rate: Input should be a valid number"),
    ],
)
def test_bad_bodies_get_a_clear_400_and_store_nothing(client, token, body, fragment):
    response = ask(client, token, body)
    assert response.status_code == 400
    assert fragment in response.json()["error"]
    assert not GateResult.objects.exists()


def test_only_post_and_no_session_login(client, token, lead):
    assert client.get(API).status_code == 405
    client.force_login(lead)  # a browser session is not a gate token
    assert ask(client, None, GOOD).status_code == 401


def test_token_management_is_for_leads(client, world, reviewer, lead):
    client.force_login(reviewer)
    data = {"project": "x", "rubric_version": world[2].pk, "eval_set_pattern": "*"}
    assert client.post(reverse("calibration:create_token"), data).status_code == 403
    assert not GateToken.objects.exists()
    client.force_login(lead)
    garbage = {"project": " ", "rubric_version": 999, "eval_set_pattern": "rc-\n*"}
    response = client.post(reverse("calibration:create_token"), garbage, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and not GateToken.objects.exists()  # htmx swaps only 2xx
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card" id="token-panel">')
    assert "This field is required" in body or "Name the project" in body
    assert "Select a valid choice" in body and "Give a pattern of printable characters" in body
    token = GateToken.objects.create(
        workspace=default_workspace(),
        project="p",
        rubric_version=world[2],
        token_hash="0" * 64,
        hint="icw_abcd",
        created_by=lead,
    )
    client.force_login(reviewer)
    client.post(reverse("calibration:revoke_token", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_gate_results_page_shows_every_decision(client, token, reviewer):
    ask(client, token, GOOD)
    ask(client, token, {**GOOD, "min_pass_rate": 0.999})
    ask(client, token, {**GOOD, "eval_set": "rc-nope"})
    client.force_login(reviewer)
    body = client.get(reverse("calibration:gates")).content.decode()
    assert body.count("decision-passed") == 1 and body.count("decision-failed") == 1
    assert "Cannot decide: unknown eval set &#x27;rc-nope&#x27;" in body
    assert "refund-bot CI" in body and "1 of 1" in body and "0 of 1" in body
    assert "<code>refund@1</code></td><td><code>rc-*</code>" in body  # the token's scope
    assert "the lead's policy, the caller asked for min pass rate 0.999" in body
