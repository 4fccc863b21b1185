"""A new token is shown once with ready-to-paste commands for the documented /api/ paths, with this server's
address and real names where known; Swagger's auth text says how to send it; the API names its own parameters."""

from __future__ import annotations

import html
import json
import re
import shlex

import pytest
from django.urls import reverse

from judging.models import JudgeRun
from tests.api_helpers import call
from tests.factories import make_eval_set, make_judge, make_rubric_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def rv(db):
    return make_rubric_version("refund", "1")


def new_token(client, lead, rv, scopes, pattern="*") -> tuple[str, str]:
    """(the secret, the panel's HTML) as a lead creates a token on the gate page."""
    client.force_login(lead)
    data = {"project": "ci", "rubric_version": rv.pk, "eval_set_pattern": pattern, "scopes": scopes}
    response = client.post(reverse("calibration:create_token"), data)
    assert response.status_code == 200
    body = response.content.decode()
    secret = re.search(r'id="new-token">([^<]+)<', body).group(1)
    client.logout()
    return secret, body


def example(body: str, scope: str) -> str:
    found = re.search(rf'<pre class="verdict-raw" id="token-example-{scope}">(.*?)</pre>', body, re.S)
    return html.unescape(found.group(1)) if found else ""


def test_the_gate_example_uses_the_documented_path_this_host_and_real_names(client, lead, rv):
    make_eval_set("rc-1")
    make_eval_set("rc-2")  # the newest eval set the pattern matches
    make_eval_set("other")
    JudgeRun.objects.create(eval_set=make_eval_set("cal"), rubric_version=rv, judge_config=make_judge("gpt-judge"))
    secret, body = new_token(client, lead, rv, ["gate"], pattern="rc-*")
    command = example(body, "gate")
    assert command.startswith("curl -X POST http://testserver/api/gate ")
    assert "/calibration/api/gate" not in body
    words = shlex.split(command.replace("\\\n", " "))
    assert words[words.index("-H") + 1] == f"Authorization: Bearer {secret}"
    assert json.loads(words[words.index("-d") + 1]) == {"eval_set": "rc-2", "rubric": "refund@1", "judge": "gpt-judge"}
    assert 'data-copy="new-token"' in body and 'data-copy="token-example-gate"' in body


def test_the_example_runs_as_shown(client, lead, rv):
    """The command, replayed word for word, reaches the gate with the token (it cannot decide yet: 409)."""
    make_eval_set("rc-7")
    JudgeRun.objects.create(eval_set=make_eval_set("cal"), rubric_version=rv, judge_config=make_judge("gpt-judge"))
    _, body = new_token(client, lead, rv, ["gate"], pattern="rc-7")
    words = shlex.split(example(body, "gate").replace("\\\n", " "))
    url, token = words[3], words[words.index("-H") + 1].removeprefix("Authorization: Bearer ")
    response = call(client, "POST", url.removeprefix("http://testserver"), token, words[words.index("-d") + 1])
    assert response.status_code == 409 and response.json()["passed"] is None


def test_unknown_names_stay_placeholders_and_each_scope_gets_its_call(client, lead, rv):
    _, body = new_token(client, lead, rv, ["push", "report"], pattern="nightly-*")
    push, report = example(body, "push"), example(body, "report")
    assert "http://testserver/api/outputs?eval_set=EVAL_SET" in push and "--data-binary @outputs.jsonl" in push
    assert "http://testserver/api/calibration-report?eval_set=EVAL_SET&rubric=refund%401&judge=JUDGE" in report
    assert example(body, "gate") == "" and example(body, "judge") == ""


def test_swaggers_auth_text_shows_how_to_send_the_token(client):
    schemes = client.get("/api/openapi.json").json()["components"]["securitySchemes"]
    (scheme,) = schemes.values()
    assert scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "icw_..."
    assert "Authorization: Bearer <token>" in scheme["description"]
    assert "/api/gates/" in scheme["description"]
