"""The alerts page (/alerts/): a lead's destinations and the delivery log; reviewers read, annotators are refused,
another workspace's destination is as missing as one that never was."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from alerts.models import AlertDelivery, AlertDestination, DeliveryAttempt, DeliveryStatus
from evals.models import Role
from tests.factories import default_workspace, make_user, make_workspace
from tests.workspace_helpers import same_answer

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def operator(settings):
    settings.ICEWATER_ALERT_HOSTS = ["hooks.slack.com", "127.0.0.1:9999"]
    settings.ICEWATER_ALERT_PRIVATE_ADDRESSES = True
    settings.ICEWATER_ALERT_SECRET_VARS = ["HOOKS_SIGNING_KEY"]
    return settings


@pytest.fixture
def as_lead(client, lead):
    client.force_login(lead)
    return client


def hook(workspace=None, name="ops", **fields) -> AlertDestination:
    values = {"kind": "webhook", "url": "http://127.0.0.1:9999/hook", "secret_env": "HOOKS_SIGNING_KEY", **fields}
    return AlertDestination.objects.create(workspace=workspace or default_workspace(), name=name, **values)


def test_annotators_are_refused_and_reviewers_read_the_log_without_the_forms(client, annotator, reviewer, operator):
    hook()
    client.force_login(annotator)
    assert client.get(reverse("alerts:page")).status_code == 403
    assert client.post(reverse("alerts:add"), {"name": "x", "kind": "email", "addresses": "a@b.co"}).status_code == 403
    client.force_login(reviewer)
    page = client.get(reverse("alerts:page"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Delivery log" in text and "ops" in text
    assert "127.0.0.1:9999" not in text  # a webhook's address is the lead's to see
    assert "Add a destination" not in text and "Send a test alert" not in text
    assert client.post(reverse("alerts:test", args=[AlertDestination.objects.get().pk])).status_code == 403
    assert AlertDelivery.objects.count() == 0


def test_a_lead_adds_a_destination_with_an_htmx_post_that_carries_the_csrf_token(lead, operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    page = client.get(reverse("alerts:page")).content.decode()
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)
    fields = {"name": "ops", "kind": "slack", "url": "https://hooks.slack.com/services/T0/B0/secretpart"}
    assert client.post(reverse("alerts:add"), fields, **HTMX).status_code == 403  # no token: refused
    answer = client.post(reverse("alerts:add"), fields, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert answer.status_code == 200
    text = answer.content.decode()
    assert text.lstrip().startswith('<div id="alerts-main">')  # the part htmx swaps, not the whole page
    assert "Destination ops added." in text
    assert "https://hooks.slack.com/…" in text and "secretpart" not in text  # a Slack URL is its credential
    made = AlertDestination.objects.get()
    assert (made.workspace, made.kind, made.created_by) == (default_workspace(), "slack", lead)


def test_a_host_off_the_list_is_refused_at_the_form_naming_the_setting(as_lead, operator):
    fields = {"name": "ops", "kind": "webhook", "url": "https://evil.example.com/in", "secret_env": "HOOKS_SIGNING_KEY"}
    answer = as_lead.post(reverse("alerts:add"), fields)
    assert answer.status_code == 422
    text = answer.content.decode()
    assert "evil.example.com is not a host alerts may be sent to (ICEWATER_ALERT_HOSTS allows:" in text
    assert 'value="https://evil.example.com/in"' in text  # what the lead typed is still there
    assert AlertDestination.objects.count() == 0


def test_a_private_address_is_refused_at_the_form(as_lead, operator):
    operator.ICEWATER_ALERT_PRIVATE_ADDRESSES = False
    fields = {"name": "ops", "kind": "webhook", "url": "http://127.0.0.1:9999/hook", "secret_env": "HOOKS_SIGNING_KEY"}
    text = as_lead.post(reverse("alerts:add"), fields).content.decode()
    assert "resolves to 127.0.0.1, a loopback address" in text and "ICEWATER_ALERT_PRIVATE_ADDRESSES=1" in text
    assert AlertDestination.objects.count() == 0


def test_a_reserved_secret_variable_and_bad_addresses_are_refused(as_lead, operator):
    fields = {"name": "ops", "kind": "webhook", "url": "http://127.0.0.1:9999/h", "secret_env": "DATABASE_URL"}
    assert "DATABASE_URL is reserved" in as_lead.post(reverse("alerts:add"), fields).content.decode()
    fields = {"name": "mail", "kind": "email", "addresses": "lead@example.com, not-an-address"}
    assert (
        "&#x27;not-an-address&#x27; is not an email address"
        in as_lead.post(reverse("alerts:add"), fields).content.decode()
    )
    assert AlertDestination.objects.count() == 0


def test_names_are_unique_in_a_workspace_but_not_across(as_lead, operator):
    hook(name="ops")
    hook(workspace=make_workspace("other"), name="mail")
    answer = as_lead.post(reverse("alerts:add"), {"name": "ops", "kind": "email", "addresses": "a@example.com"})
    assert "this workspace has a destination &#x27;ops&#x27; already" in answer.content.decode()
    answer = as_lead.post(reverse("alerts:add"), {"name": "mail", "kind": "email", "addresses": "a@example.com"})
    assert answer.status_code == 302
    assert AlertDestination.objects.filter(name="mail").count() == 2


def test_edit_switch_off_and_remove_keep_the_log(as_lead, operator):
    destination = hook()
    delivery = AlertDelivery.objects.create(
        workspace=default_workspace(),
        destination=destination,
        destination_name="ops",
        dedupe_key="k1",
        message={"kind": "test", "title": "Old alert", "text": "", "url": "", "facts": [], "dedupe_key": "k1"},
        status=DeliveryStatus.SENT,
        attempts=1,
        next_attempt_at="2026-12-07T00:00:00Z",
    )
    edit = reverse("alerts:edit", args=[destination.pk])
    assert as_lead.get(edit).status_code == 200
    fields = {"name": "ops-renamed", "kind": "email", "addresses": "lead@example.com"}
    assert as_lead.post(edit, fields).status_code == 302
    destination.refresh_from_db()
    assert (destination.name, destination.kind, destination.url, destination.secret_env) == (
        "ops-renamed",
        "email",
        "",
        "",
    )
    as_lead.post(reverse("alerts:enable", args=[destination.pk]), {"enabled": "0"})
    destination.refresh_from_db()
    assert destination.enabled is False
    as_lead.post(reverse("alerts:remove", args=[destination.pk]))
    assert not AlertDestination.objects.exists()
    delivery.refresh_from_db()
    assert delivery.destination is None and delivery.destination_name == "ops"
    assert "Old alert" in as_lead.get(reverse("alerts:page")).content.decode()


def test_send_a_test_alert_records_a_delivery_for_that_destination(
    as_lead, operator, django_capture_on_commit_callbacks
):
    destination = hook()
    hook(name="another")
    with django_capture_on_commit_callbacks() as queued:
        answer = as_lead.post(reverse("alerts:test", args=[destination.pk]), **HTMX)
    assert "A test alert to ops is on its way" in answer.content.decode()
    (delivery,) = AlertDelivery.objects.all()
    assert delivery.destination == destination and delivery.message["kind"] == "test"
    assert delivery.message["url"] == "http://testserver/alerts/"
    assert len(queued) == 1  # the first try is queued when the transaction commits


def test_the_log_shows_each_destinations_status_and_every_try(as_lead, operator, django_assert_max_num_queries):
    for name in ("a", "b"):
        destination = hook(name=name)
        delivery = AlertDelivery.objects.create(
            workspace=default_workspace(),
            destination=destination,
            destination_name=name,
            dedupe_key="watch-1",
            message={
                "kind": "watch-alarm",
                "title": "Pass rate fell",
                "text": "",
                "url": "",
                "facts": [],
                "dedupe_key": "watch-1",
            },
            status=DeliveryStatus.FAILED if name == "a" else DeliveryStatus.SENT,
            attempts=2,
            next_attempt_at="2026-12-07T00:00:00Z",
        )
        for number, status in ((1, 500), (2, 500 if name == "a" else 200)):
            DeliveryAttempt.objects.create(
                delivery=delivery,
                number=number,
                started_at="2026-12-07T00:00:00Z",
                outcome="retry" if number == 1 else ("failed" if name == "a" else "sent"),
                status_code=status,
                duration_ms=12,
            )
    with django_assert_max_num_queries(12):
        text = as_lead.get(reverse("alerts:page")).content.decode()
    assert text.count("Pass rate fell") == 1  # one alert, two destinations under it
    assert "Failed" in text and "Sent" in text
    assert text.count("(HTTP 500)") == 3 and text.count("(HTTP 200)") == 1


def test_another_workspaces_destination_answers_as_a_missing_one(as_lead, operator):
    theirs = hook(workspace=make_workspace("other"), name="theirs")
    missing = theirs.pk + 1000
    for name, method in (("edit", "get"), ("edit", "post"), ("enable", "post"), ("remove", "post"), ("test", "post")):
        call = getattr(as_lead, method)
        assert same_answer(
            call(reverse(f"alerts:{name}", args=[theirs.pk])), call(reverse(f"alerts:{name}", args=[missing]))
        )
        assert call(reverse(f"alerts:{name}", args=[theirs.pk])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.enabled and AlertDelivery.objects.count() == 0
    assert "theirs" not in as_lead.get(reverse("alerts:page")).content.decode()


def test_a_lead_of_another_workspace_sees_only_its_destinations(client, operator):
    other = make_workspace("other")
    client.force_login(make_user("lead-b", Role.LEAD, workspace=other))
    client.get(reverse("alerts:page") + "?workspace=other")
    hook()
    assert client.get(reverse("alerts:page")).content.decode().count("No destinations yet") == 1


def test_the_log_polls_while_a_delivery_is_under_way_and_stops_after(as_lead, operator):
    destination = hook()
    message = {"kind": "test", "title": "t", "text": "", "url": "", "facts": [], "dedupe_key": "k"}
    delivery = AlertDelivery.objects.create(
        workspace=default_workspace(),
        destination=destination,
        destination_name="ops",
        dedupe_key="k",
        message=message,
        next_attempt_at="2026-12-07T00:00:00Z",
    )
    text = as_lead.get(reverse("alerts:log")).content.decode()
    assert text.lstrip().startswith('<section class="card" id="delivery-log" hx-get=') and "every 2s" in text
    AlertDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.SENT)
    text = as_lead.get(reverse("alerts:log")).content.decode()
    assert "hx-get" not in text and "Sent" in text
