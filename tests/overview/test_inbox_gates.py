"""Lead Home's gate lines: a failure says which agent version, repeats are one line, and a call that named
something unknown is the caller's mistake, listed apart from the failures of releases."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from api.models import GateToken
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import GateResult
from calibration.stats.policy import Tightening
from tests.factories import make_eval_set, make_judge, make_rubric_version

pytestmark = pytest.mark.django_db
HOME = reverse("home")


def section(body: str, kind: str) -> list[str]:
    match = re.search(rf'<ul class="inbox" data-kind="{kind}">(.*?)</ul>', body, re.S)
    items = re.findall(r"<li>(.*?)</li>", match.group(1), re.S) if match else []
    return [" ".join(re.sub(r"<[^>]+>", " ", item).split()) for item in items]


@pytest.fixture
def instrument():
    return make_eval_set("rc-1"), make_rubric_version("refund", "1"), make_judge("gpt-judge")


def failed(instrument, agent_version: str, binding: str = "correct_amount") -> GateResult:
    es, rv, judge = instrument
    return GateResult.objects.create(
        decision="failed",
        source="http",
        eval_set=es,
        rubric_version=rv,
        judge_config=judge,
        eval_set_name=es.name,
        rubric_ref=rv.ref,
        judge_name=judge.name,
        agent_version=agent_version,
        binding_criterion=binding,
    )


def test_identical_failures_are_one_line_with_the_agent_version_and_how_often(client, lead, instrument):
    for _ in range(3):
        newest = failed(instrument, "v2")
    failed(instrument, "v3")
    client.force_login(lead)
    lines = section(client.get(HOME).content.decode(), "gate_failed")
    assert len(lines) == 2
    assert lines[0].startswith(
        "the gate failed refund@1 with gpt-judge on rc-1, agent version v3 (binding: correct_amount)"
    )
    assert "times" not in lines[0]
    assert lines[1].startswith(
        "the gate failed refund@1 with gpt-judge on rc-1, agent version v2 (binding: correct_amount) (3 times)"
    )
    body = client.get(HOME).content.decode()
    assert reverse("calibration:gate_result", args=[newest.pk]) in body  # the line links to the newest of the three
    assert re.search(r"Recent gate failures\s*<span[^>]*>\(2\)</span>", body)


def test_a_call_naming_an_unknown_eval_set_is_listed_apart_from_failures(client, lead, instrument):
    es, rv, judge = instrument
    token = GateToken.objects.create(
        project="nightly", rubric_version=rv, token_hash="0" * 64, hint="icw_0000", scopes=["gate"], created_by=lead
    )
    for _ in range(2):
        gate_and_record(
            GateRequest("rc-1x", rv.ref, judge.name, None, Tightening()), source=GateResult.Source.HTTP, token=token
        )
    # A gate that could not decide on an instrument that exists is a release's news (negative control).
    gate_and_record(GateRequest("rc-1", rv.ref, judge.name, "v2", Tightening()), source=GateResult.Source.CLI)
    client.force_login(lead)
    body = client.get(HOME).content.decode()
    failures, mistakes = section(body, "gate_failed"), section(body, "gate_misnamed")
    assert len(failures) == 1 and failures[0].startswith(
        "the gate could not decide refund@1 with gpt-judge on rc-1, agent version v2:"
    )
    assert "rc-1x" not in " ".join(failures)
    assert len(mistakes) == 1 and html.unescape(mistakes[0]).startswith(
        "a gate call from token nightly named what does not exist: unknown eval set 'rc-1x' (2 times)"
    )
    assert "Gate calls that named something unknown" in body
