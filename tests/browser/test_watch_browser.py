"""Issue 39, end to end: a lead starts a watch on the page, an agent's traces arrive from the real OpenTelemetry SDK
(OpenInference's instrumentation of the openai client, the OTLP/HTTP exporter, the live server's receiver, the
worker's trace finisher), the judge grades the outputs on the suite's real Celery worker against the fake model
server, the audit stream reaches annotators (one output labeled on the labeling page, the rest written), the
agent's answers change so the judge and gold fail them, the band moves, the alarm fires, the page shows it above
the chart, and the loopback webhook receiver gets the alert, signed, checked by its own HMAC code.

Kept short: every output audited (share 1) and alpha 0.2, so the pass-rate test alarms within the 10 audited
outputs below (2 passing, 8 failing: 20 labels by two annotators; the same stream's alarm is worked out with the
statistics' replay in tests/watch/test_watch_feed.py)."""

from __future__ import annotations

import json
import time

import openai
import pytest
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from playwright.sync_api import expect

from alerts.models import AlertDestination
from evals.models import Output, Role
from labeling.models import Annotation
from tests.api.test_otel_sdk import run_agent, traced_provider
from tests.factories import all_answers, annotate_directly, make_user
from tests.otel_helpers import traces_token, wait_for_outputs
from tests.watch_helpers import watched_set
from watch import tasks
from watch.models import Watch, WatchAlarm, WatchOutput

from .browser_helpers import screenshot
from .test_audit_browser import label_next, no_horizontal_scroll
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.celery, pytest.mark.django_db(transaction=True)]
WITHIN_S = 120  # a generous ceiling for the worker's steps; never reached when it works
SECRET = "k-watch-e2e"
FAILING = "[[fake:all=FAIL]]"  # the fake judge reads this marker in the output it grades and fails every criterion


def _until(condition, what: str) -> None:
    """Wait for the worker, sending every active watch's update as Celery beat would (but every half second)."""
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        tasks.send_every_update()
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"still waiting for {what} after {WITHIN_S} s")


@pytest.fixture
def worker(workers, receiver, live_server, monkeypatch, settings, judge_key):
    """The suite's real Celery worker, configured as an operator would: the receiver allowed (on loopback), the
    signing secret in its environment, the site's address for links, traces finished after one quiet second."""
    settings.ICEWATER_OTLP_QUIET_SECONDS = 1  # the live server's countdown
    for name, value in {
        "ICEWATER_ALERT_HOSTS": receiver.host,
        "ICEWATER_ALERT_PRIVATE_ADDRESSES": "1",
        "ICEWATER_ALERT_SECRET_VARS": "HOOKS_SIGNING_KEY",
        "HOOKS_SIGNING_KEY": SECRET,
        "ICEWATER_SITE_URL": live_server.url,
        "ICEWATER_OTLP_QUIET_SECONDS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    receiver.secret = SECRET
    return workers(concurrency=2)


@pytest.fixture
def agent(fake_llm):
    """The agent's openai client (its model is the fake server too), instrumented by OpenInference."""
    instrumentor = OpenAIInstrumentor()
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-agent-test", max_retries=0)
    yield client, instrumentor
    instrumentor.uninstrument()
    client.close()


def test_a_watch_on_traced_production_alarms_and_the_signed_alert_reaches_the_receiver(
    client, live_server, new_page, fake_llm, worker, agent, receiver
):
    w = watched_set(fake_llm)
    amy, bo = (make_user(name, Role.ANNOTATOR, workspace=w.workspace) for name in ("amy", "bo"))
    AlertDestination.objects.create(
        workspace=w.workspace, name="ops-hook", kind="webhook", url=receiver.url(), secret_env="HOOKS_SIGNING_KEY"
    )
    token = traces_token(client, w.lead, w.production)

    # The lead starts the watch on the page.
    lead = new_page(1366, 768)
    log_in(lead, live_server.url, w.lead.username)
    lead.goto(live_server.url + "/watches/start")
    lead.get_by_label("Production eval set").select_option(str(w.production.pk))
    lead.get_by_label("Criterion (and its rubric version)").select_option(str(w.criterion.pk))
    lead.get_by_label("Judge config").select_option(str(w.judge.pk))
    lead.get_by_label("Audit share").fill("1")
    lead.get_by_label("Alpha").fill("0.2")
    lead.get_by_role("button", name="Start the watch").click()
    expect(lead.locator("#watch-status")).to_have_text("watching")
    watch = Watch.objects.get()
    assert (watch.minimum, watch.alpha, watch.audit_share) == (0.8, 0.2, 1.0)

    # The agent runs; its spans go out through the SDK's OTLP/HTTP exporter to the live server.
    openai_client, instrumentor = agent
    exporter = OTLPSpanExporter(
        endpoint=f"{live_server.url}/api/otlp/v1/traces", headers={"Authorization": f"Bearer {token}"}
    )
    provider = traced_provider(instrumentor, exporter)
    tracer = provider.get_tracer("support-bot")
    # Two good answers, then the agent changes: its answers carry the marker the fake judge fails.
    questions = [f"Where is my refund for order A-{n}?" for n in (1, 2)]
    questions += [f"Where is my refund for order B-{n}? {FAILING}" for n in range(1, 9)]
    for n, question in enumerate(questions, start=1):
        run_agent(openai_client, tracer, question, session=f"ticket-{n}")
        assert provider.force_flush()
    provider.shutdown()
    wait_for_outputs(w.production, 10)
    outputs = list(Output.objects.filter(case__eval_set=w.production).select_related("case").order_by("pk"))
    assert [o.case.case_id for o in outputs] == [f"ticket-{n}" for n in range(1, 11)]

    # The judge grades them on the worker; every output is drawn and released to the annotators.
    rows = WatchOutput.objects.filter(watch=watch)
    _until(lambda: rows.filter(released=True).exclude(verdict="").count() == 10, "the verdicts and the release")
    assert list(rows.order_by("position").values_list("verdict", flat=True)) == ["PASS"] * 2 + ["FAIL"] * 8

    # An annotator finds the first drawn output in their queue and labels it on the labeling page.
    keys = list(w.rubric_version.criteria.order_by("order").values_list("key", flat=True))
    labeler = new_page(1366, 768)
    log_in(labeler, live_server.url, amy.username)
    assert label_next(labeler, {key: "PASS" for key in keys}) == "ticket-1"
    Annotation.objects.filter(status=Annotation.Status.DRAFT).delete()  # the next one handed out, left as she stops
    # The rest of the gold: two annotators each, agreeing, as the labeling page would write it.
    for output in outputs:
        outcome = "PASS" if FAILING not in output.response else "FAIL"
        for person in (amy, bo):
            if not (output == outputs[0] and person == amy):
                annotate_directly(output, w.rubric_version, person, all_answers(w.rubric_version, outcome))

    # The band moves below the minimum and the alarm fires.
    _until(lambda: WatchAlarm.objects.filter(watch=watch).exists(), "the alarm")
    alarm = WatchAlarm.objects.get(watch=watch)
    assert alarm.what == "pass rate" and alarm.bound == 0.8 and alarm.estimate is not None and alarm.estimate < 0.8

    # The receiver gets the alert once, signed; its own HMAC check accepts it.
    deadline = time.monotonic() + WITHIN_S
    while not receiver.accepted() and time.monotonic() < deadline:
        time.sleep(0.2)
    (got,) = receiver.accepted()
    assert got.signature_ok is True
    body = got.json()
    assert body["kind"] == "watch-alarm" and body["dedupe_key"] == f"watch-{watch.pk}-pass rate"
    assert body["text"] == alarm.message and body["url"] == f"{live_server.url}/watches/{watch.pk}/"
    assert {"name": "What moved", "value": "pass rate"} in body["facts"]
    time.sleep(2)  # room for a second delivery, were one on its way
    assert len(receiver.received) == 1

    # The page shows the alarm first, above the fold, then the chart with the alarm marked.
    for width, height in ((1366, 768), (1920, 1080)):
        page = new_page(width, height)
        log_in(page, live_server.url, w.lead.username)
        page.goto(f"{live_server.url}/watches/{watch.pk}/")
        alarm_item = page.locator("#watch-alarms li").first
        expect(alarm_item).to_contain_text("The pass rate fell below 0.80")
        box = alarm_item.bounding_box()
        assert box is not None and box["y"] + box["height"] <= height, box  # not below the fold
        expect(page.locator("#watch-pass-rate svg .watch-alarm")).to_have_count(1)
        expect(page.locator("#watch-rates svg")).to_be_visible()
        assert no_horizontal_scroll(page)
        screenshot(page, f"watch-alarm-{width}x{height}")
        page.locator("#watch-pass-rate").scroll_into_view_if_needed()
        screenshot(page, f"watch-chart-{width}x{height}")
        page.locator("#watch-rates").scroll_into_view_if_needed()
        screenshot(page, f"watch-rates-{width}x{height}")
    print(json.dumps({"alarm_at_labels": alarm.at_labels, "since_labels": alarm.since_labels}))
