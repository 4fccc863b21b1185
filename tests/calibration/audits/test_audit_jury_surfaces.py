"""The jury predictor's choice and table on every surface (issue 38 item 1): the start form, the plan page,
`manage.py audit_plan create --also-judge` and `show`, the API's body and answers; roles and workspaces."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from api.models import TokenScope
from calibration.models import AuditPlan, AuditPlanSignal, GatingMark
from labeling.models import AuditOrder
from tests.api_helpers import call, create_token
from tests.audit_helpers import KEY, candidate, gold, in_order, plan_on
from tests.factories import add_verdict, make_judge, make_run, make_user, make_workspace

pytestmark = pytest.mark.django_db
START = reverse("calibration:audit_plan_start")
# The plan page's queries, as tests/calibration/audits/test_audit_pages.py pins them: the table adds none (it is
# part of the stored figures).
PLAN_PAGE_QUERIES = 5


def with_instrument(n: int = 20):
    """A candidate, and an instrument config with a verdict on each of its outputs (PASS on the even ones)."""
    c = candidate(n=n)
    instrument = make_judge("instrument")
    run = make_run(c.eval_set, c.rubric_version, instrument, agent_version="default")
    for i, output in enumerate(c.outputs):
        add_verdict(run, output, KEY, "PASS" if i % 2 == 0 else "FAIL")
    return c, instrument


def plan_url(plan) -> str:
    return reverse("calibration:audit_plan", args=[plan.pk])


# --- the start form ------------------------------------------------------------------------------


def test_the_lead_picks_extra_configs_on_the_start_form_and_they_are_frozen(client):
    c, instrument = with_instrument()
    client.force_login(c.lead)
    assert 'id="audit-extra-judges"' in client.get(START).content.decode()
    form = {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, "extra_judges": [instrument.pk]}
    response = client.post(START, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    plan = AuditPlan.objects.get()
    assert plan.predictor == "jury"
    assert list(plan.signals.values_list("judge_config__name", flat=True)) == ["gpt-judge", "instrument"]


@pytest.mark.parametrize(
    ("pick", "words"),
    [
        ("other_workspace", "Choose judge configs of this workspace."),
        ("own_judge", "is the plan&#x27;s own judge"),
        ("stratified", "uniform design only"),
    ],
)
def test_a_bad_pick_on_the_form_is_refused_with_clear_words_and_nothing_started(client, pick, words):
    c, instrument = with_instrument(n=8)
    form = {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, "extra_judges": [instrument.pk]}
    if pick == "other_workspace":
        form["extra_judges"] = [make_judge("outside", workspace=make_workspace()).pk]
    elif pick == "own_judge":
        form["extra_judges"] = [c.judge.pk]
    else:
        form["design"] = "stratified"
    client.force_login(c.lead)
    response = client.post(START, form)
    body = response.content.decode()
    assert response.status_code == 422 and words in body, body[:3000]
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists() and not AuditPlanSignal.objects.exists()
    assert f'<option value="{c.eval_set.pk}" selected>' in body  # what the lead chose stays chosen


def test_annotators_may_not_start_a_jury_plan(client):
    c, instrument = with_instrument(n=8)
    client.force_login(make_user("ann", "annotator"))
    form = {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, "extra_judges": [instrument.pk]}
    assert client.post(START, form).status_code == 403
    assert not AuditPlan.objects.exists()


# --- the plan page -------------------------------------------------------------------------------


def test_the_plan_page_shows_the_signals_table_in_a_bounded_number_of_queries(client):
    c, instrument = with_instrument(n=40)
    plan = plan_on(c, release=40, extra_judges=[instrument])
    for i, output in enumerate(in_order(plan)[:10]):
        gold(c, output, "PASS" if i % 3 else "FAIL")
    client.force_login(c.lead)
    client.get(plan_url(plan))  # the worker (played here) computes the figures of this gold
    with CaptureQueriesContext(connection) as queries:
        page = client.get(plan_url(plan)).content.decode()
    assert len(queries) == PLAN_PAGE_QUERIES, [q["sql"][:80] for q in queries.captured_queries]
    table = page.split('id="audit-predictor"', 1)[1].split("</section>", 1)[0]
    assert 'Predictor <span class="muted small">(jury, uniform design)' in table
    assert 'gpt-judge <span class="muted small">the plan&#x27;s judge' in table
    assert 'instrument <span class="muted small">extra judge config' in table
    assert "The jury together" in table and 'id="audit-signals"' in table
    # A reviewer reads it too; an annotator never sees the judge's correlation with gold.
    client.force_login(make_user("rev", "reviewer"))
    assert 'id="audit-signals"' in client.get(plan_url(plan)).content.decode()
    client.force_login(make_user("ann", "annotator"))
    assert client.get(plan_url(plan)).status_code == 403


def test_another_workspaces_plan_page_answers_404(client):
    c, instrument = with_instrument(n=8)
    plan = plan_on(c, extra_judges=[instrument])
    elsewhere = make_workspace()
    client.force_login(make_user("lead2", "lead", workspace=elsewhere))
    assert client.get(plan_url(plan)).status_code == 404


# --- the command ---------------------------------------------------------------------------------


def command(*args: str) -> str:
    out = StringIO()
    call_command("audit_plan", *args, stdout=out)
    return out.getvalue()


CREATE = ["create", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge"]


def test_the_command_takes_also_judge_and_show_prints_the_table():
    c, instrument = with_instrument()
    plan_id = int(command(*CREATE, "--criterion", KEY, "--by", "lee", "--also-judge", "instrument"))
    plan = AuditPlan.objects.get(pk=plan_id)
    assert list(plan.signals.values_list("judge_config__name", flat=True)) == ["gpt-judge", "instrument"]
    shown = json.loads(command("show", str(plan_id), "--format", "json"))
    assert shown["predictor"]["kind"] == "jury"
    assert [s["name"] for s in shown["predictor"]["signals"]] == ["gpt-judge", "instrument"]
    assert "predictor: the jury: the vote share of gpt-judge's samples" in command("show", str(plan_id))
    assert "instrument (extra judge config, vote share)" in command("show", str(plan_id))


def test_the_command_refuses_an_unknown_or_repeated_config_and_starts_nothing():
    c, instrument = with_instrument(n=8)
    with pytest.raises(CommandError, match="nowhere"):
        command(*CREATE, "--criterion", KEY, "--by", "lee", "--also-judge", "nowhere")
    with pytest.raises(CommandError, match="named twice"):
        command(*CREATE, "--criterion", KEY, "--by", "lee", "--also-judge", "instrument", "--also-judge", "instrument")
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()


# --- the API -------------------------------------------------------------------------------------

ASK = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge", "criterion": KEY}


def test_the_api_takes_also_judges_and_answers_the_predictor(client):
    c, instrument = with_instrument()
    token = create_token(client, c.lead, [TokenScope.AUDIT], c.rubric_version)
    response = call(client, "POST", "/api/audit-plans", token, {**ASK, "also_judges": ["instrument"]})
    assert response.status_code == 201, response.json()
    plan = AuditPlan.objects.get()
    assert response.json()["predictor"]["kind"] == "jury"
    shown = call(client, "GET", f"/api/audit-plans/{plan.pk}", token).json()
    assert [s["name"] for s in shown["predictor"]["signals"]] == ["gpt-judge", "instrument"]
    listed = call(client, "GET", "/api/audit-plans", token, eval_set="rc-1").json()["plans"][0]
    assert (listed["design"], listed["predictor"], listed["also_judges"]) == ("uniform", "jury", ["instrument"])


@pytest.mark.parametrize(
    ("also", "status", "words"),
    [
        (["outside"], 404, "outside"),  # another workspace's config is as unknown as one that never was
        (["gpt-judge"], 409, "is the plan's own judge"),
        ("instrument", 400, "also_judges"),  # not a list
    ],
)
def test_the_api_refuses_a_bad_also_judges_and_writes_nothing(client, also, status, words):
    c, instrument = with_instrument(n=8)
    make_judge("outside", workspace=make_workspace())
    token = create_token(client, c.lead, [TokenScope.AUDIT], c.rubric_version)
    response = call(client, "POST", "/api/audit-plans", token, {**ASK, "also_judges": also})
    assert response.status_code == status and words in json.dumps(response.json())
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()
