"""The release gate from the browser: the same decision as the command line and HTTP, recorded as "web"."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from api.models import GateToken, hash_token
from calibration.models import GateResult
from tests.factories import (
    bulk_verdicts,
    default_workspace,
    make_eval_set,
    make_judge,
    make_rubric_version,
    mark_as_gating,
)

pytestmark = pytest.mark.django_db
RUN = reverse("calibration:gate_run")


@pytest.fixture
def candidate(lead):
    cal, rc = make_eval_set("cal"), make_eval_set("rc-1")
    rv, judge = make_rubric_version("refund", "1"), make_judge("gpt-judge")
    mark_as_gating(rv, judge, ["correct_amount"], cal, by=lead)
    mark_as_gating(rv, judge, ["next_step"], cal, by=lead, min_pass_rate=0.8)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 35}, "next_step": {"PASS": 30, "FAIL": 5}})
    return rc, rv, judge


def form(rc, rv, judge, **extra) -> dict:
    return {"eval_set": rc.pk, "rubric_version": rv.pk, "judge_config": judge.pk, **extra}


def test_a_lead_runs_the_gate_and_gets_what_the_command_line_and_http_say(client, lead, candidate):
    rc, rv, judge = candidate
    client.force_login(lead)
    response = client.post(RUN, form(*candidate))
    web = GateResult.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("calibration:gate_result", args=[web.pk])
    assert (web.source, web.asked_by, web.decision) == ("web", lead, "failed")
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command(
            "gate", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json", stdout=out
        )
    secret = GateToken.new_secret()
    GateToken.objects.create(
        workspace=default_workspace(),
        project="ci",
        rubric_version=rv,
        token_hash=hash_token(secret),
        hint=secret[:8],
        created_by=lead,
    )
    http = Client().post(
        reverse("calibration:api_gate"),
        {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert web.result == json.loads(out.getvalue()) == http.json()
    assert list(GateResult.objects.order_by("id").values_list("source", flat=True)) == ["web", "cli", "http"]


def test_the_result_page_draws_each_criterion_names_the_binding_one_and_the_policy(client, lead, candidate):
    client.force_login(lead)
    page = client.get(client.post(RUN, form(*candidate))["Location"])
    body = page.content.decode()
    # correct_amount: 35/35 clears 0.90; next_step: 30/35, Wilson lower 0.706 < its lead's 0.8.
    assert body.count('<svg class="gchart') == 2 and body.count('<svg class="echart') == 2
    assert 'id="binding-criterion">next_step<' in body and "1 of 2 criteria met" in body
    assert "Policy: each criterion's own, as its lead set it" in body
    assert "python manage.py gate --workspace default --eval-set rc-1 --rubric refund@1 --judge gpt-judge" in body
    assert 'class="gchart unmet"' in body and 'class="gchart met"' in body


def test_a_tightened_gate_is_kept_with_what_was_asked(client, lead, candidate):
    client.force_login(lead)
    client.post(RUN, form(*candidate, min_pass_rate="0.95"))
    result = GateResult.objects.get()
    assert result.min_pass_rate == 0.95 and result.decision == "failed"
    assert all(c["min_pass_rate"] == 0.95 for c in result.result["criteria"])


def test_a_looser_threshold_than_the_leads_is_refused_and_nothing_is_stored(client, lead, candidate):
    client.force_login(lead)
    response = client.post(RUN, form(*candidate, min_pass_rate="0.5"))
    assert response.status_code == 422
    assert "a caller may only tighten the gate policy" in response.content.decode()
    assert "Nothing was stored." in response.content.decode()
    assert not GateResult.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"eval_set": "999999"}, "Choose an eval set that exists."),
        ({"rubric_version": "abc"}, "Choose a rubric version that exists"),
        ({"judge_config": ""}, "This field is required."),
        ({"confidence": "1.5"}, "confidence must be a number strictly between 0 and 1"),
        ({"max_error_rate": "nan"}, "Enter a finite number."),
        ({"min_pass_rate": "lots"}, "Enter a number."),
    ],
)
def test_garbage_gets_a_clear_message_and_nothing_is_stored(client, lead, candidate, change, message):
    client.force_login(lead)
    response = client.post(RUN, {**form(*candidate), **change})
    assert response.status_code == 422 and message in response.content.decode()
    assert not GateResult.objects.exists()


def test_a_gate_that_cannot_decide_is_recorded_and_says_why(client, lead, candidate):
    rc, rv, judge = candidate
    client.force_login(lead)
    other = make_judge("other-judge")
    page = client.get(client.post(RUN, form(rc, rv, other))["Location"])
    result = GateResult.objects.get()
    assert result.decision == "undecided" and result.source == "web"
    assert (
        "Cannot decide: no criteria of refund@1 are approved as gating with judge other-judge" in page.content.decode()
    )


def test_the_form_starts_from_the_link_or_the_newest_gating_instrument(client, lead, candidate):
    rc, rv, judge = candidate
    client.force_login(lead)
    body = client.get(RUN).content.decode()
    assert f'<option value="{rv.pk}" selected>' in body and f'<option value="{judge.pk}" selected>' in body
    assert f'<option value="{rc.pk}" selected>' in body  # the newest run of that judge: the release candidate
    assert client.get(RUN + "?eval_set=abc&judge_config=-1").status_code == 200  # garbage preselects nothing


def test_only_leads_run_the_gate_reviewers_read_results_annotators_see_nothing(
    client, lead, reviewer, annotator, candidate
):
    client.force_login(lead)
    client.post(RUN, form(*candidate))
    result_url = reverse("calibration:gate_result", args=[GateResult.objects.get().pk])
    client.force_login(reviewer)
    assert client.get(RUN).status_code == 403 and client.post(RUN, form(*candidate)).status_code == 403
    assert client.get(result_url).status_code == 200
    client.force_login(annotator)
    assert client.get(result_url).status_code == 403 and client.post(RUN, form(*candidate)).status_code == 403
    client.logout()
    assert client.get(result_url)["Location"].startswith(reverse("login"))
    assert GateResult.objects.count() == 1
    assert client.get(reverse("calibration:gate_result", args=[999999])).status_code == 302  # login first


def test_an_unknown_result_is_404(client, lead):
    client.force_login(lead)
    assert client.get(reverse("calibration:gate_result", args=[999999])).status_code == 404


def test_the_gate_page_needs_the_csrf_token(lead, candidate):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    assert strict.post(RUN, form(*candidate)).status_code == 403
    assert not GateResult.objects.exists()


def test_the_gate_results_list_links_each_result_and_says_who_asked(client, lead, candidate):
    client.force_login(lead)
    client.post(RUN, form(*candidate))
    body = client.get(reverse("calibration:gates")).content.decode()
    assert reverse("calibration:gate_result", args=[GateResult.objects.get().pk]) in body
    assert "Gate page · lead" in body and reverse("calibration:gate_run") in body


def test_the_result_page_shows_the_bound_that_decided_by_name(client, lead):
    # The case: Wilson 0.790, corrected 0.809, the policy decides on the corrected bound.
    criterion = {"criterion": "correct_amount", "n": 40, "passes": 35, "errors": 0, "pass_rate": 0.875}
    criterion |= {"wilson_lower": 0.790, "corrected_lower": 0.809, "min_pass_rate": 0.8, "confidence": 0.95}
    criterion |= {"error_rate": 0.0, "max_error_rate": 0.02, "met": True, "decide_on": "corrected_lower"}
    record = GateResult.objects.create(
        workspace=default_workspace(),
        decision="passed",
        source="cli",
        eval_set_name="rc-1",
        rubric_ref="refund@1",
        judge_name="j",
        result={"criteria": [criterion]},
    )
    client.force_login(lead)
    body = client.get(reverse("calibration:gate_result", args=[record.pk])).content.decode()
    assert "lower bound that decided" in body
    assert '0.809 <span class="muted small">corrected</span>' in body
    assert ">0.790<" not in body and "0.790 " not in body  # the Wilson bound did not decide: not in its place
