"""Where alerts go is a decision the workspace's leads must be able to trace: adding, changing, switching and
removing a destination each write one audit event (evals/audit_log.py) in that workspace, naming who; a refused
change writes none; a Slack webhook's path (its credential) never reaches the log."""

from __future__ import annotations

import pytest
from django.urls import reverse

from alerts.models import AlertDestination
from evals.models import AuditAction, AuditEvent, Role
from tests.factories import default_workspace, make_user, make_workspace

pytestmark = pytest.mark.django_db
SLACK = "https://hooks.slack.com/services/T000/B000/SECRETPATH"


@pytest.fixture
def lead_b(settings):
    settings.ICEWATER_ALERT_HOSTS = ["hooks.slack.com"]
    default_workspace()  # the other workspace, which must stay without events
    return make_user("lead-b", Role.LEAD, workspace=make_workspace("team-b"))


def _log() -> list[tuple[str, str, str, str]]:
    rows = AuditEvent.objects.order_by("pk")
    return list(rows.values_list("workspace__slug", "actor_name", "action", "summary"))


def test_each_change_of_a_destination_on_the_page_is_one_event_naming_the_lead(client, lead_b):
    client.force_login(lead_b)
    client.post(reverse("alerts:add"), {"name": "ops", "kind": "slack", "url": SLACK})
    destination = AlertDestination.objects.get()
    edited = {"name": "ops-2", "kind": "slack", "url": SLACK}
    assert client.post(reverse("alerts:edit", args=[destination.pk]), edited).status_code == 302
    client.post(reverse("alerts:enable", args=[destination.pk]), {"enabled": "0"})
    client.post(reverse("alerts:remove", args=[destination.pk]))
    assert not AlertDestination.objects.exists()
    assert _log() == [
        ("team-b", "lead-b", AuditAction.ALERT_DESTINATION_ADDED, "Alert destination ops added (slack)"),
        ("team-b", "lead-b", AuditAction.ALERT_DESTINATION_CHANGED, "Alert destination ops changed (now ops-2)"),
        ("team-b", "lead-b", AuditAction.ALERT_DESTINATION_CHANGED, "Alert destination ops-2 switched off"),
        ("team-b", "lead-b", AuditAction.ALERT_DESTINATION_REMOVED, "Alert destination ops-2 removed"),
    ]
    details = list(AuditEvent.objects.values_list("detail", flat=True))
    assert all(d["to"] == "https://hooks.slack.com/…" and d["destination"] == destination.pk for d in details)
    assert not any("SECRETPATH" in str(d) for d in details)


def test_a_refused_destination_writes_no_event(client, lead_b):
    client.force_login(lead_b)
    answer = client.post(reverse("alerts:add"), {"name": "evil", "kind": "webhook", "url": "https://evil.example.com/"})
    assert answer.status_code == 422 and not AlertDestination.objects.exists()
    assert _log() == []


def test_the_command_records_its_changes_without_a_person(lead_b, settings):
    from django.core.management import call_command

    call_command("alert_destination", "add", "leads", kind="email", addresses="a@example.com", workspace="team-b")
    call_command("alert_destination", "remove", "leads", workspace="team-b")
    assert [(actor, action) for _, actor, action, _ in _log()] == [
        ("", AuditAction.ALERT_DESTINATION_ADDED),
        ("", AuditAction.ALERT_DESTINATION_REMOVED),
    ]
    assert AuditEvent.objects.first().detail["to"] == "a@example.com"  # type: ignore[union-attr]
