"""Probe run pages: roles enforced on the server, CSRF, htmx progress that stops, garbage refused, examples."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import JudgeRun, ProbedOutput, ProbeRun, Verdict
from judging.probes import runs as probe_runs
from judging.probes.transforms import PADDING_BEFORE
from tests.factories import make_eval_set, make_instrumented, make_output
from tests.probe_helpers import probe_in_process

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def probed():
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    return scope, probe_in_process(scope, ["padding", "wrong_amount"])


def urls(probe_run: ProbeRun) -> dict[str, str]:
    return {
        "index": reverse("judging:probes"),
        "detail": reverse("judging:probe_run", args=[probe_run.pk]),
        "status": reverse("judging:probe_status", args=[probe_run.pk]),
        "examples": reverse("judging:probe_examples", args=[probe_run.pk, "padding", "substance"]),
    }


def start_form(scope, **overrides) -> dict:
    form = {
        "eval_set": scope.eval_set.name,
        "agent_version": "",
        "rubric_version": scope.rubric_version.pk,
        "judge_config": scope.judge_config.pk,
        "probes": ["padding", "injection"],
        "sample": "",
    }
    form.update(overrides)
    return {k: v for k, v in form.items() if v is not None}


def test_annotators_get_403_everywhere_and_strangers_are_sent_to_log_in(client, annotator, probed):
    _, probe_run = probed
    posts = [reverse("judging:start_probe_run"), reverse("judging:probe_cancel", args=[probe_run.pk])]
    for url in urls(probe_run).values():
        assert client.get(url).status_code == 302 and "login" in client.get(url)["Location"]
    client.force_login(annotator)
    for url in urls(probe_run).values():
        assert client.get(url).status_code == 403
    for url in posts:
        assert client.post(url).status_code == 403


def test_reviewers_read_but_cannot_start_or_cancel(client, reviewer, probed):
    scope, probe_run = probed
    client.force_login(reviewer)
    for url in urls(probe_run).values():
        assert client.get(url).status_code in (200, 286)
    assert "Start the probe run" not in client.get(urls(probe_run)["index"]).content.decode()
    assert client.post(reverse("judging:start_probe_run"), start_form(scope)).status_code == 403
    assert client.post(reverse("judging:probe_cancel", args=[probe_run.pk])).status_code == 403
    assert ProbeRun.objects.count() == 1


def test_a_lead_starts_a_probe_run_and_every_arm_is_queued(client, lead, monkeypatch):
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    queued = []
    monkeypatch.setattr("judging.runner.enqueue_lanes", lambda run_id, lanes=2: queued.append(run_id) or True)
    client.force_login(lead)
    response = client.post(reverse("judging:start_probe_run"), start_form(scope, sample="4"))
    probe_run = ProbeRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("judging:probe_run", args=[probe_run.pk])
    assert (probe_run.started_by, probe_run.mode, probe_run.outputs, probe_run.sample_size) == (lead, "celery", 4, 4)
    assert [p["name"] for p in probe_run.plan] == ["padding", "injection"]
    # Each arm's lanes, queued once the probe run was committed (a test in a transaction would see none).
    assert len(queued) == 3 and sorted(queued) == sorted(probe_run.judge_runs.values_list("pk", flat=True))
    page = client.get(response["Location"]).content.decode()
    assert f'hx-get="{reverse("judging:probe_status", args=[probe_run.pk])}"' in page  # polls while queued
    assert "Cancel the probe run" in page


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"probes": ["padding", "shouting"]}, "Select a valid choice. shouting is not one of the available choices."),
        ({"probes": None}, "This field is required."),
        ({"sample": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"sample": "-2"}, "greater than or equal to 1"),
        ({"sample": "lots"}, "Enter a whole number."),
        ({"sample": "100001"}, "less than or equal to 100000"),
        ({"eval_set": "nope"}, "Select a valid choice."),
        ({"agent_version": "v9"}, "no outputs of agent version &#x27;v9&#x27;"),
    ],
)
def test_a_bad_start_is_explained_and_creates_nothing(client, lead, overrides, message):
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    client.force_login(lead)
    response = client.post(reverse("judging:start_probe_run"), start_form(scope, **overrides))
    assert response.status_code == 400 and message in response.content.decode()
    assert not ProbeRun.objects.exists() and not JudgeRun.objects.exists() and not ProbedOutput.objects.exists()


def test_a_bad_probe_setting_is_shown_on_the_form_and_nothing_starts(client, lead, settings):
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    settings.PROBES = ["nowhere.PROBE"]
    client.force_login(lead)
    response = client.post(reverse("judging:start_probe_run"), start_form(scope))
    assert response.status_code == 400 and "ICEWATER_PROBES: cannot import &#x27;nowhere.PROBE&#x27;" in (
        response.content.decode()
    )
    assert not ProbeRun.objects.exists()


def test_starting_and_cancelling_need_a_csrf_token(lead):
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    assert strict.post(reverse("judging:start_probe_run"), start_form(scope)).status_code == 403
    assert not ProbeRun.objects.exists()
    token = strict.get(reverse("judging:probes")).cookies["csrftoken"].value
    response = strict.post(reverse("judging:start_probe_run"), {**start_form(scope), "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    probe_run = ProbeRun.objects.get()
    cancel = reverse("judging:probe_cancel", args=[probe_run.pk])
    assert strict.post(cancel).status_code == 403 and probe_runs.status_of(probe_run) == "queued"
    assert strict.post(cancel, {"csrfmiddlewaretoken": token}).status_code == 302
    assert probe_runs.status_of(probe_run) == "cancelled"


def test_the_status_panel_polls_while_active_and_stops_with_the_results(client, reviewer, probed):
    scope, probe_run = probed
    client.force_login(reviewer)
    done = client.get(urls(probe_run)["status"], HTTP_HX_REQUEST="true")
    body = done.content.decode()
    assert done.status_code == 286 and 'id="probe-status"' in body and "hx-get" not in body
    assert "fooled_by_padding" in body and "blind_to_wrong_amount" in body and "<html" not in body
    assert urls(probe_run)["examples"] + "?show=fail_to_pass" in body
    JudgeRun.objects.filter(probe_run=probe_run, probe="padding").update(status="running")
    going = client.get(urls(probe_run)["status"], HTTP_HX_REQUEST="true")
    assert going.status_code == 200 and "hx-get" in going.content.decode()
    assert "fooled_by_padding" not in going.content.decode()  # results once every arm has ended


def test_the_status_panel_costs_the_same_queries_whatever_the_size(client, reviewer):
    small = probe_in_process(make_instrumented(name="a"), ["padding"])
    client.force_login(reviewer)
    client.get(urls(small)["status"])
    with CaptureQueriesContext(connection) as few:
        client.get(urls(small)["status"])
    scope = make_instrumented(name="b", judge="instruments-b")
    for i in range(15):
        make_output(scope.eval_set, case_id=f"more-{i}", response=f"Refund of $40.00 for order {i}. It is done.")
    large = probe_in_process(scope, ["padding", "sycophancy", "wrong_amount"])
    with CaptureQueriesContext(connection) as many:
        client.get(urls(large)["status"])
    assert len(few) == len(many), [q["sql"][:90] for q in many]


def test_the_examples_show_both_transcripts_with_both_verdicts_escaped(client, reviewer):
    scope = make_instrumented(eval_set=make_eval_set("probed"))
    make_output(scope.eval_set, case_id="evil", response="Refund of $40.00 <script>alert(1)</script> done.")
    probe_run = probe_in_process(scope, ["padding"])
    client.force_login(reviewer)
    body = client.get(urls(probe_run)["examples"] + "?show=fail_to_pass").content.decode()
    assert "11</strong> pairs: FAIL turned PASS" in body
    assert body.count("As it is") == 10 and body.count(PADDING_BEFORE[:40]) == 10  # one page: 10 of 11
    assert "original FAIL" in body and "padding PASS" in body
    second = client.get(urls(probe_run)["examples"] + "?show=fail_to_pass&page=2").content.decode()
    assert second.count("As it is") == 1 and "evil" in second
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in second and "<script>alert(1)" not in second
    none = client.get(urls(probe_run)["examples"] + "?show=pass_to_fail").content.decode()
    assert "No pairs here." in none
    odd = client.get(urls(probe_run)["examples"] + "?show=<b>&page=zz")
    assert odd.status_code == 200 and "pairs whose verdict flipped" in odd.content.decode()


def test_examples_of_an_unknown_probe_or_criterion_are_404(client, reviewer, probed):
    _, probe_run = probed
    client.force_login(reviewer)
    for probe, key in (("sycophancy", "substance"), ("padding", "nope"), ("original", "substance")):
        assert client.get(reverse("judging:probe_examples", args=[probe_run.pk, probe, key])).status_code == 404
    assert client.get(reverse("judging:probe_run", args=[probe_run.pk + 99])).status_code == 404


def test_the_examples_page_runs_at_most_a_fixed_number_of_queries(
    client, reviewer, probed, django_assert_max_num_queries
):
    _, probe_run = probed
    client.force_login(reviewer)
    client.get(urls(probe_run)["examples"])
    with django_assert_max_num_queries(12):
        assert client.get(urls(probe_run)["examples"] + "?show=all").status_code == 200


def test_the_judge_pages_keep_probe_arms_apart_and_show_what_an_arm_judged(client, reviewer, probed):
    _, probe_run = probed
    client.force_login(reviewer)
    index = client.get(reverse("judging:index")).content.decode()
    assert reverse("judging:probes") in index
    assert all(reverse("judging:run", args=[r.pk]) not in index for r in probe_run.judge_runs.all())
    arm = probe_run.judge_runs.get(probe="padding")
    run_page = client.get(reverse("judging:run", args=[arm.pk])).content.decode()
    assert "arm of" in run_page and reverse("judging:probe_run", args=[probe_run.pk]) in run_page
    verdict = Verdict.objects.filter(run=arm).first()
    page = client.get(reverse("judging:verdict", args=[verdict.pk])).content.decode()
    assert PADDING_BEFORE[:40] in page and "as the <code>padding</code> probe changed it" in page
    listing = client.get(reverse("judging:probes")).content.decode()
    assert reverse("judging:probe_run", args=[probe_run.pk]) in listing and "Done" in listing


def test_an_unreachable_broker_fails_the_probe_run_and_says_so(client, lead, monkeypatch):
    scope = make_instrumented(eval_set=make_eval_set("probed"))

    def no_broker(*args, **kwargs):
        raise ConnectionRefusedError("no broker")

    monkeypatch.setattr("judging.tasks.run_lane.apply_async", no_broker)
    client.force_login(lead)
    response = client.post(reverse("judging:start_probe_run"), start_form(scope), follow=True)
    assert "could not start" in response.content.decode() and "Celery broker" in response.content.decode()
    assert probe_runs.status_of(ProbeRun.objects.get()) == "failed"
