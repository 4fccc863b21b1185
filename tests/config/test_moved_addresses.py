"""Pages served from the room their address names: the overview pages at /progress/, /sets/<id>/ and /outputs/<id>/,
the gate page with its token panel at /api/gates/. Their first addresses under /calibration/ redirect for good (301,
308 for a form's POST, the query string kept), so bookmarks and links in people's notes keep working; the new
addresses keep the role checks the old ones had."""

from __future__ import annotations

import pytest
from django.urls import reverse

from api.models import GateToken
from tests.factories import make_eval_set, make_output, make_rubric_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    es = make_eval_set("support")
    rv = make_rubric_version("refund", "1")
    return {"es": es, "rv": rv, "output": make_output(es, case_id="c-1")}


def moved(world) -> list[tuple[str, str]]:
    """(old address, new address) of every page that moved, each with a query string to keep."""
    es, rv, output = world["es"].pk, world["rv"].pk, world["output"].pk
    return [
        (f"/calibration/progress/?eval_set={es}&rubric_version={rv}", f"/progress/?eval_set={es}&rubric_version={rv}"),
        (f"/calibration/sets/{es}/?show=disagreement&page=2", f"/sets/{es}/?show=disagreement&page=2"),
        (f"/calibration/outputs/{output}/?rubric_version={rv}", f"/outputs/{output}/?rubric_version={rv}"),
        ("/calibration/gates/?page=2", "/api/gates/?page=2"),
    ]


def test_the_new_addresses_are_the_url_names_of_the_pages(world):
    es, output = world["es"].pk, world["output"].pk
    assert reverse("overview:progress") == "/progress/"
    assert reverse("overview:eval_set", args=[es]) == f"/sets/{es}/"
    assert reverse("overview:output", args=[output]) == f"/outputs/{output}/"
    assert reverse("calibration:gates") == "/api/gates/"
    assert reverse("calibration:create_token") == "/api/gates/tokens"
    assert reverse("calibration:revoke_token", args=[7]) == "/api/gates/tokens/7/revoke"


def test_every_old_address_redirects_for_good_with_its_query_string(client, world):
    for old, new in moved(world):
        response = client.get(old)
        assert (response.status_code, response["Location"]) == (301, new), old
        assert client.head(old)["Location"] == new


def test_a_form_posted_to_its_old_target_is_sent_on_with_its_method(client):
    for old, new in [
        ("/calibration/gates/tokens", "/api/gates/tokens"),
        ("/calibration/gates/tokens/3/revoke", "/api/gates/tokens/3/revoke"),
    ]:
        response = client.post(old, {"project": "ci"})
        assert (response.status_code, response["Location"]) == (308, new), old


def test_a_lead_still_creates_a_token_through_the_old_form_target(client, lead, world):
    client.force_login(lead)
    data = {"project": "ci", "rubric_version": world["rv"].pk, "eval_set_pattern": "*", "scopes": ["gate"]}
    response = client.post("/calibration/gates/tokens", data, follow=True)
    assert response.redirect_chain == [("/api/gates/tokens", 308)] and response.status_code == 200
    assert GateToken.objects.filter(project="ci", created_by=lead).count() == 1


def test_the_new_addresses_render_for_reviewers_and_leads(client, world, reviewer, lead):
    for user in (reviewer, lead):
        client.force_login(user)
        for _, new in moved(world):
            response = client.get(new)
            assert response.status_code == 200, (user.username, new)
            assert response["Content-Type"].startswith("text/html")


def test_annotators_are_still_refused_at_the_new_addresses_and_through_the_old_ones(client, world, annotator):
    """Negative control: the move kept the role checks. An annotator gets the 403 they got before, at the new address
    and at the end of the old one's redirect; someone not logged in is sent to log in."""
    for old, _ in moved(world):
        response = client.get(old, follow=True)
        assert response.redirect_chain[-1][0].startswith("/accounts/login/"), old
    client.force_login(annotator)
    for old, new in moved(world):
        assert client.get(new).status_code == 403, new
        response = client.get(old, follow=True)
        assert response.redirect_chain == [(new, 301)] and response.status_code == 403, old


def test_the_gate_page_under_api_answers_as_a_page_not_as_the_json_api(client, lead):
    """/api/ is the JSON API's, whose last pattern answers any other address there with a JSON 404; the gate page's
    patterns come first, and a GET on its form's target gets the page that says so, as every form's target does."""
    client.force_login(lead)
    response = client.get("/api/gates/tokens")
    assert response.status_code == 405 and response["Content-Type"].startswith("text/html") and response.content
    missing = client.get("/api/gates-nothing")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"


def test_a_client_over_the_failed_token_limit_still_opens_the_gate_page(client, lead, settings):
    """The limit on failed tokens is the JSON API's (config/token_throttle.py), not the gate page's under /api/."""
    settings.API_TOKEN_FAILURE_LIMIT = 1
    wrong = client.post("/api/gate", "{}", content_type="application/json", HTTP_AUTHORIZATION="Bearer icw_wrong")
    assert wrong.status_code == 401
    assert client.post("/api/gate", "{}", content_type="application/json").status_code == 429
    client.force_login(lead)
    assert client.get("/api/gates/").status_code == 200
