"""Sending alerts to real receivers on loopback (tests/alert_helpers.py): each try made in this process with
`alerts.sending.attempt`, as the Celery task makes it (tests/alerts/test_alert_worker.py runs the task itself)."""

from __future__ import annotations

import socket
import time

import pytest
from django.utils import timezone

from alerts.delivery import send_alert
from alerts.messages import AlertMessage
from alerts.models import AlertDelivery, AlertDestination, DeliveryStatus
from alerts.sending import attempt
from alerts.transport import post
from tests.alert_helpers import Answer
from tests.factories import default_workspace, make_workspace

SECRET_VAR = "HOOKS_SIGNING_KEY"
SECRET = "whsec-loopback-1"
MESSAGE = AlertMessage(
    kind="watch-alarm",
    title="Pass rate below the minimum",
    text="The corrected pass rate fell below 0.80.",
    url="https://icewater.example.com/alerts/",
    facts=(("Criterion", "correct_amount"),),
    dedupe_key="watch-1-alarm-1",
)


@pytest.fixture
def allowed(settings, receiver, monkeypatch):
    """The operator allows the receiver's host and private addresses (it is on loopback); the secret is set."""
    settings.ICEWATER_ALERT_HOSTS = [receiver.host]
    settings.ICEWATER_ALERT_PRIVATE_ADDRESSES = True
    settings.ICEWATER_ALERT_SECRET_VARS = [SECRET_VAR]
    settings.ICEWATER_ALERT_RETRY_DELAYS = (0.0, 0.0)  # three tries, no waiting
    settings.ICEWATER_ALERT_TIMEOUT_SECONDS = 1
    monkeypatch.setenv(SECRET_VAR, SECRET)
    receiver.secret = SECRET
    return settings


def webhook(receiver, workspace=None, **fields) -> AlertDestination:
    values = {"name": "ops-hook", "kind": "webhook", "url": receiver.url(), "secret_env": SECRET_VAR, **fields}
    return AlertDestination.objects.create(workspace=workspace or default_workspace(), **values)


def run_to_the_end(delivery: AlertDelivery) -> AlertDelivery:
    """Every try the delivery gets, one after another, as the worker would make them (no waits here)."""
    for _ in range(10):
        if attempt(delivery.pk, now=timezone.now() + timezone.timedelta(hours=2)) is None:
            break
    delivery.refresh_from_db()
    return delivery


def test_a_signed_alert_reaches_the_receiver_which_checks_it_with_its_own_code(db, allowed, receiver):
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.SENT and delivery.attempts == 1 and delivery.last_status_code == 200
    (got,) = receiver.received
    assert got.signature_ok is True
    assert got.path == "/hook"
    assert got.headers["X-Icewater-Delivery"] == str(delivery.pk)
    body = got.json()
    assert body["title"] == MESSAGE.title and body["dedupe_key"] == "watch-1-alarm-1" and body["workspace"] == "default"
    assert body["facts"] == [{"name": "Criterion", "value": "correct_amount"}]
    assert [(a.number, a.outcome, a.status_code) for a in delivery.attempt_log.all()] == [(1, "sent", 200)]


def test_a_wrong_secret_fails_the_receivers_check_and_is_not_retried(db, allowed, receiver, monkeypatch):
    # Negative control of the receiver's check: the same code refuses a body signed under another secret.
    monkeypatch.setenv(SECRET_VAR, "not-the-shared-secret")
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert [r.signature_ok for r in receiver.received] == [False]
    assert delivery.status == DeliveryStatus.FAILED and delivery.last_status_code == 401
    assert "answered HTTP 401: signature refused" in delivery.last_error
    assert "not-the-shared-secret" not in delivery.last_error


def test_a_refusal_then_success_is_retried_and_delivered_once(db, allowed, receiver):
    receiver.answers = [Answer(500), Answer(200)]
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.SENT and delivery.attempts == 2
    assert [r.answered for r in receiver.received] == [500, 200]
    assert len(receiver.accepted()) == 1
    assert [(a.outcome, a.status_code) for a in delivery.attempt_log.all()] == [("retry", 500), ("sent", 200)]
    # The same alert raised again is the same delivery: the destination hears it once.
    assert send_alert(default_workspace(), MESSAGE) == [delivery]
    assert AlertDelivery.objects.count() == 1


def test_a_receiver_that_always_fails_gets_every_try_then_the_delivery_fails(db, allowed, receiver):
    receiver.answers = [Answer(503)]
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 3
    assert len(receiver.received) == 3
    log = [(a.number, a.outcome, a.status_code) for a in delivery.attempt_log.all()]
    assert log == [(1, "retry", 503), (2, "retry", 503), (3, "failed", 503)]
    assert delivery.last_error.endswith("(gave up after 3 tries)")


def test_a_client_error_fails_at_once(db, allowed, receiver):
    receiver.answers = [Answer(400)]
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1 and len(receiver.received) == 1


def test_retry_after_sets_the_next_try(db, allowed, receiver):
    receiver.answers = [Answer(429, {"Retry-After": "120"})]
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    before = timezone.now()
    outcome = attempt(delivery.pk)
    assert outcome is not None and outcome.status == DeliveryStatus.QUEUED and outcome.retry_in == 120.0
    delivery.refresh_from_db()
    assert 119 <= (delivery.next_attempt_at - before).total_seconds() <= 125
    assert attempt(delivery.pk) is None  # not due yet: nothing is sent early
    assert len(receiver.received) == 1


def test_a_redirect_is_not_followed(db, allowed, receiver):
    from tests.alert_helpers import Receiver

    elsewhere = Receiver()
    try:
        receiver.answers = [Answer(307, {"Location": elsewhere.url("/stolen")})]
        webhook(receiver)
        (delivery,) = send_alert(default_workspace(), MESSAGE)
        delivery = run_to_the_end(delivery)
        assert elsewhere.received == []
        assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1
        assert f"a redirect to 127.0.0.1:{elsewhere.port}; redirects are not followed" in delivery.last_error
    finally:
        elsewhere.stop()


def test_a_host_taken_off_the_list_is_refused_at_send_time(db, allowed, receiver):
    webhook(receiver)
    allowed.ICEWATER_ALERT_HOSTS = ["hooks.slack.com"]
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.REFUSED and receiver.received == []
    assert f"{receiver.host} is not a host alerts may be sent to (ICEWATER_ALERT_HOSTS allows" in delivery.last_error


def test_a_private_address_is_refused_unless_the_operator_allows_them(db, allowed, receiver):
    webhook(receiver)
    allowed.ICEWATER_ALERT_PRIVATE_ADDRESSES = False
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.REFUSED and receiver.received == []
    assert "resolves to 127.0.0.1, a loopback address" in delivery.last_error
    assert "ICEWATER_ALERT_PRIVATE_ADDRESSES=1" in delivery.last_error


def test_the_name_is_resolved_once_and_the_checked_address_is_the_one_connected(db, allowed, receiver, monkeypatch):
    """DNS rebinding: a name whose second answer differs from its first (127.0.0.2, where nothing listens, stands
    for an inside address). The sender asks once and connects to the address it checked, so the receiver at the
    first answer gets the request, with the name in its Host header."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        asked.append(host)
        if host == "hooks.example.net":
            first = asked.count(host) == 1
            return real("127.0.0.1" if first else "127.0.0.2", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    answer = post(f"http://hooks.example.net:{receiver.port}/hook", b"{}", {}, allow_private=True, timeout=1)
    assert answer.status == 401  # the receiver got it (and refused the unsigned body)
    assert asked.count("hooks.example.net") == 1
    assert receiver.received[0].headers["Host"] == f"hooks.example.net:{receiver.port}"


def test_a_receiver_that_does_not_answer_in_time_is_tried_again(db, allowed, receiver):
    receiver.answers = [Answer(200, delay_s=2.5), Answer(200)]
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    started = time.monotonic()
    outcome = attempt(delivery.pk)
    assert time.monotonic() - started < 2.4  # the 1 s timeout, not the receiver's 2.5 s
    assert outcome is not None and outcome.status == DeliveryStatus.QUEUED
    delivery.refresh_from_db()
    assert "timed out" in delivery.last_error


def test_the_secret_variable_is_read_at_send_time_and_must_be_set(db, allowed, receiver, monkeypatch):
    webhook(receiver)
    monkeypatch.delenv(SECRET_VAR)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    delivery = run_to_the_end(delivery)
    assert delivery.status == DeliveryStatus.REFUSED and receiver.received == []
    assert f"the environment variable {SECRET_VAR} that should hold the webhook's signing secret is not set" in (
        delivery.last_error
    )


def test_a_delivery_is_claimed_once(db, allowed, receiver):
    webhook(receiver)
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    AlertDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.SENDING)  # another worker has it
    assert attempt(delivery.pk) is None
    AlertDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.QUEUED)
    assert attempt(delivery.pk).status == DeliveryStatus.SENT
    assert attempt(delivery.pk) is None  # a duplicate task after the send
    assert len(receiver.received) == 1


def test_slack_gets_its_own_format_unsigned(db, allowed, receiver):
    receiver.secret = None
    AlertDestination.objects.create(
        workspace=default_workspace(), name="slack", kind="slack", url=receiver.url("/services/T/B/x")
    )
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    assert run_to_the_end(delivery).status == DeliveryStatus.SENT
    body = receiver.received[0].json()
    assert set(body) == {"text", "blocks"} and body["blocks"][0]["text"]["text"] == MESSAGE.title
    assert "X-Icewater-Signature" not in receiver.received[0].headers


def test_an_alert_goes_to_each_enabled_destination_of_its_own_workspace_only(db, allowed, receiver):
    webhook(receiver, name="a")
    webhook(receiver, name="b")
    webhook(receiver, name="off", enabled=False)
    webhook(receiver, workspace=make_workspace("other"), name="theirs")
    deliveries = send_alert(default_workspace(), MESSAGE)
    assert [d.destination_name for d in deliveries] == ["a", "b"]


def test_email_goes_through_djangos_smtp_backend_to_a_real_server(db, allowed, smtp_server):
    allowed.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    allowed.EMAIL_HOST, allowed.EMAIL_PORT = "127.0.0.1", smtp_server.port
    allowed.DEFAULT_FROM_EMAIL = "icewater@example.com"
    AlertDestination.objects.create(
        workspace=default_workspace(), name="mail", kind="email", addresses="lead@example.com\nops@example.com"
    )
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    assert run_to_the_end(delivery).status == DeliveryStatus.SENT
    ((sender, to, raw),) = smtp_server.messages
    assert sender == "icewater@example.com" and to == ["lead@example.com", "ops@example.com"]
    assert b"Subject: [Icewater] Pass rate below the minimum" in raw
    assert b"Criterion  correct_amount" in raw and b"https://icewater.example.com/alerts/" in raw


def test_email_to_a_mail_server_that_is_down_is_tried_again(db, allowed):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    allowed.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    allowed.EMAIL_HOST, allowed.EMAIL_PORT = "127.0.0.1", closed
    AlertDestination.objects.create(workspace=default_workspace(), name="mail", kind="email", addresses="a@example.com")
    (delivery,) = send_alert(default_workspace(), MESSAGE)
    outcome = attempt(delivery.pk)
    assert outcome is not None and outcome.status == DeliveryStatus.QUEUED
    delivery.refresh_from_db()
    assert "the mail server did not take it (ConnectionRefusedError" in delivery.last_error


def test_a_name_with_an_address_that_does_not_answer_is_reached_at_the_next_checked_one(
    db, allowed, receiver, monkeypatch
):
    """A name with an IPv6 and an IPv4 address, and a receiver listening on the IPv4 one only (127.0.0.2 stands
    for the silent one here): the try goes on to the next address it checked."""
    real = socket.getaddrinfo

    def two_addresses(host, port, *args, **kwargs):
        if host == "hooks.example.net":
            return real("127.0.0.2", port, *args, **kwargs) + real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", two_addresses)
    answer = post(f"http://hooks.example.net:{receiver.port}/hook", b"{}", {}, allow_private=True, timeout=1)
    assert answer.status == 401 and len(receiver.received) == 1


def test_an_alert_without_a_usable_dedupe_key_is_refused(db, allowed):
    for key in ("", "k" * 201):
        with pytest.raises(ValueError, match="an alert's dedupe_key has 1 to 200 characters"):
            send_alert(default_workspace(), AlertMessage("test", "t", "x", "", (), key))
    assert AlertDelivery.objects.count() == 0


def test_a_destination_switched_off_or_removed_after_the_alert_sends_nothing(db, allowed, receiver):
    off, gone = webhook(receiver, name="off"), webhook(receiver, name="gone")
    by_name = {d.destination_name: d for d in send_alert(default_workspace(), MESSAGE)}
    AlertDestination.objects.filter(pk=off.pk).update(enabled=False)
    gone.delete()
    switched_off, removed = run_to_the_end(by_name["off"]), run_to_the_end(by_name["gone"])
    assert receiver.received == []
    assert (removed.status, removed.destination_name) == (DeliveryStatus.REFUSED, "gone")
    assert removed.last_error == "the destination was removed before the alert was sent"
    assert switched_off.status == DeliveryStatus.REFUSED
    assert switched_off.last_error == "the destination off is switched off: switch it on to send to it"
