"""The audit log page (/members/log/) and its exports: a workspace's leads only, that workspace's events only."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.audit_log import record
from evals.models import AuditAction, Role
from overview.audit_log_views import EVENTS_PER_PAGE
from tests.factories import default_workspace, make_user, make_workspace, set_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_b():
    return make_workspace("team-b")


@pytest.fixture
def both(lead, team_b):
    """Two events here and one in team-b, whose summary must never show here."""
    here = default_workspace()
    record(here, lead, AuditAction.RUBRIC_APPROVED, "approved refund@1", reason="definitions reviewed")
    record(here, None, AuditAction.MEMBER_ADDED, "=HYPERLINK(1) added ann as annotator", user=7)
    record(team_b, None, AuditAction.TOKEN_CREATED, "secret-of-team-b created a token", token=3)
    return here


def export(client, kind: str, **query) -> str:
    response = client.get(reverse("overview:audit_log_export"), {"format": kind, **query})
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def test_leads_read_their_workspace_events_newest_first(client, lead, both):
    client.force_login(lead)
    text = client.get(reverse("overview:audit_log")).content.decode()
    assert text.index("added ann as annotator") < text.index("approved refund@1")  # newest first
    assert "definitions reviewed" in text and "secret-of-team-b" not in text


def test_the_filter_shows_one_action_and_an_unknown_one_is_a_400(client, lead, both):
    client.force_login(lead)
    text = client.get(reverse("overview:audit_log"), {"action": "rubric_approved"}).content.decode()
    assert "approved refund@1" in text and "added ann" not in text
    refused = client.get(reverse("overview:audit_log"), {"action": "rubric_deleted"})
    assert refused.status_code == 400 and "No action is called &#x27;rubric_deleted&#x27;" in refused.content.decode()


def test_the_log_pages(client, lead):
    for i in range(EVENTS_PER_PAGE + 1):
        record(default_workspace(), lead, AuditAction.MEMBER_ADDED, f"event number {i:03d}")
    client.force_login(lead)
    first = client.get(reverse("overview:audit_log")).content.decode()
    second = client.get(reverse("overview:audit_log"), {"page": 2}).content.decode()
    assert "event number 050" in first and "event number 000" not in first
    assert "event number 000" in second and "Page 2 of 2" in second


def test_the_csv_export_holds_this_workspace_only_and_no_formula(client, lead, both):
    client.force_login(lead)
    rows = list(csv.DictReader(io.StringIO(export(client, "csv"))))
    assert [r["action"] for r in rows] == ["member_added", "rubric_approved"]
    assert rows[0]["summary"] == "'=HYPERLINK(1) added ann as annotator"  # a spreadsheet shows it as text
    assert rows[0]["actor"] == "" and rows[1]["actor"] == "lead"
    assert json.loads(rows[1]["detail"]) == {"reason": "definitions reviewed"}


def test_the_json_lines_export_holds_this_workspace_only(client, lead, both):
    client.force_login(lead)
    lines = [json.loads(line) for line in export(client, "jsonl").splitlines()]
    assert [line["summary"] for line in lines] == ["=HYPERLINK(1) added ann as annotator", "approved refund@1"]
    assert lines[0]["detail"] == {"user": 7} and set(lines[0]) == {"created_at", "actor", "action", "summary", "detail"}
    filtered = [json.loads(line) for line in export(client, "jsonl", action="member_added").splitlines()]
    assert [line["action"] for line in filtered] == ["member_added"]


def test_the_export_is_named_after_the_workspace_and_refuses_an_unknown_format(client, lead, both):
    client.force_login(lead)
    response = client.get(reverse("overview:audit_log_export"), {"format": "csv"})
    assert response["Content-Disposition"] == 'attachment; filename="audit-log-default.csv"'
    assert client.get(reverse("overview:audit_log_export"), {"format": "xlsx"}).status_code == 400


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER])
def test_only_leads_of_the_workspace_in_use_read_or_export_it(client, both, team_b, role):
    person = make_user("pat", role)
    set_role(person, Role.LEAD, team_b)
    client.force_login(person)
    assert client.get(reverse("overview:audit_log")).status_code == 403
    assert client.get(reverse("overview:audit_log_export"), {"format": "csv"}).status_code == 403
    # Working in team-b, where they lead: team-b's events only, never the default workspace's.
    text = client.get(reverse("overview:audit_log"), {"workspace": "team-b"}).content.decode()
    assert "secret-of-team-b" in text and "approved refund@1" not in text
    assert "approved refund@1" not in export(client, "jsonl") + export(client, "csv")


def test_the_page_costs_the_same_queries_with_few_or_many_events_and_workspaces(client, lead):
    client.force_login(lead)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("overview:audit_log")).status_code == 200
        return len(captured)

    record(default_workspace(), lead, AuditAction.MEMBER_ADDED, "one")
    queries()  # the first request of the session also saves the workspace in it
    few = queries()
    for i in range(60):
        record(make_workspace(f"w{i}"), None, AuditAction.WORKSPACE_CREATED, "elsewhere")
        record(default_workspace(), lead, AuditAction.MEMBER_ADDED, f"event {i}")
    assert queries() == few == 4  # the user, their memberships (the session is in Redis); the count, the page
