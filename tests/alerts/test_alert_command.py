"""`manage.py alert_destination add|list|remove|test --workspace`: the page's rules from the command line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from alerts.models import AlertDelivery, AlertDestination, DeliveryStatus
from tests.factories import make_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams(settings, receiver, monkeypatch):
    settings.ICEWATER_ALERT_HOSTS = [receiver.host, "hooks.slack.com"]
    settings.ICEWATER_ALERT_PRIVATE_ADDRESSES = True
    settings.ICEWATER_ALERT_SECRET_VARS = ["HOOKS_SIGNING_KEY"]
    settings.ICEWATER_ALERT_RETRY_DELAYS = (0.0,)
    monkeypatch.setenv("HOOKS_SIGNING_KEY", "k-cli")
    receiver.secret = "k-cli"
    return make_workspace("alpha"), make_workspace("beta")


def run(*args) -> str:
    out = StringIO()
    call_command("alert_destination", *args, stdout=out)
    return out.getvalue()


def add_signed_hook(receiver) -> str:
    return run(
        "add",
        "ops",
        "--kind",
        "webhook",
        "--url",
        receiver.url(),
        "--secret-env",
        "HOOKS_SIGNING_KEY",
        "--workspace",
        "alpha",
    )


def test_add_list_test_and_remove(teams, receiver):
    said = add_signed_hook(receiver)
    assert said == "added webhook destination ops to workspace alpha\n"
    run("add", "mail", "--kind", "email", "--addresses", "a@example.com,b@example.com", "--workspace", "alpha")
    assert run("list", "--workspace", "alpha") == (
        f"mail\temail\ton\ta@example.com, b@example.com\nops\twebhook\ton\t{receiver.url()}\n"
    )
    assert run("list", "--workspace", "beta") == ""
    assert run("test", "ops", "--workspace", "alpha") == "test alert to ops: sent (HTTP 200)\n"
    assert [r.signature_ok for r in receiver.received] == [True]
    assert receiver.received[0].json()["kind"] == "test"
    run("remove", "ops", "--workspace", "alpha")
    assert list(AlertDestination.objects.values_list("name", flat=True)) == ["mail"]
    assert AlertDelivery.objects.get().status == DeliveryStatus.SENT  # its log stays


def test_a_host_off_the_list_is_refused_and_nothing_is_added(teams):
    with pytest.raises(
        CommandError, match=r"evil\.example\.com is not a host alerts may be sent to \(ICEWATER_ALERT_HOSTS"
    ):
        run("add", "ops", "--kind", "slack", "--url", "https://evil.example.com/x", "--workspace", "alpha")
    assert not AlertDestination.objects.exists()


def test_another_workspaces_destination_is_as_missing_as_none(teams, receiver):
    run("add", "ops", "--kind", "slack", "--url", receiver.url(), "--workspace", "beta")
    with pytest.raises(CommandError, match="workspace alpha has no alert destination 'ops'"):
        run("test", "ops", "--workspace", "alpha")
    with pytest.raises(CommandError, match="workspace alpha has no alert destination 'ops'"):
        run("remove", "ops", "--workspace", "alpha")
    assert AlertDestination.objects.count() == 1 and receiver.received == []


def test_a_failed_test_says_why_and_fails_the_command(teams, receiver):
    from tests.alert_helpers import Answer

    receiver.answers = [Answer(400)]
    add_signed_hook(receiver)
    with pytest.raises(CommandError, match=r"test alert to ops: failed \(HTTP 400\): 127\.0\.0\.1 answered HTTP 400"):
        run("test", "ops", "--workspace", "alpha")
