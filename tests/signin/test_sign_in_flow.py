"""Sign-in with OpenID Connect against a real provider (tests/oidc_provider/), through Django's test client:
the code flow with PKCE, the account made at the first sign-in, roles refreshed at each, and logging out of
both Icewater and the provider."""

from __future__ import annotations

import base64
import hashlib
import logging

import pytest
import requests
from django.test import override_settings

from evals.models import Membership, MembershipSource, Role, User
from signin.role_map import parse_role_map
from tests.factories import make_user, make_workspace
from tests.oidc_helpers import CLIENT_SECRET, end_provider_session, memberships, query_of, sign_in_at_provider

pytestmark = [pytest.mark.django_db, pytest.mark.subprocess, pytest.mark.usefixtures("workspaces")]
OIDC, LOCAL = MembershipSource.OIDC, MembershipSource.LOCAL

APP = "http://testserver"


def sign_in(client, login: str) -> tuple[object, str]:
    """Start at Icewater, log in at the provider as `login`; the callback's answer and its URL."""
    start = client.get("/oidc/start/")
    assert start.status_code == 302
    callback_url = sign_in_at_provider(requests.Session(), start["Location"], login, APP)
    return client.get(callback_url.removeprefix(APP)), callback_url


def test_the_code_flow_sends_a_pkce_challenge_a_state_and_a_nonce(client, start_provider):
    provider = start_provider()
    with override_settings(**provider.settings()):
        start = client.get("/oidc/start/")
    sent = query_of(start["Location"])
    assert start["Location"].startswith(f"{provider.issuer}/auth?")
    assert sent["response_type"] == "code" and sent["client_id"] == "icewater"
    assert sent["redirect_uri"] == f"{APP}/oidc/callback/"
    assert sent["scope"] == "openid email profile"
    assert sent["code_challenge_method"] == "S256"
    # The challenge is the S256 of the verifier the session keeps for this state (RFC 7636, section 4.2).
    kept = client.session["oidc_states"][sent["state"]]
    digest = hashlib.sha256(kept["code_verifier"].encode()).digest()
    assert sent["code_challenge"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert kept["nonce"] == sent["nonce"] and len(sent["nonce"]) >= 32 and len(sent["state"]) >= 32


def test_a_first_sign_in_makes_the_account_with_the_role_the_map_gives(client, start_provider, caplog):
    provider = start_provider()
    caplog.set_level(logging.INFO, logger="icewater.signin")
    with override_settings(**provider.settings()):
        answer, _ = sign_in(client, "alice")
        assert answer.status_code == 302 and answer["Location"] == "/"
        home = client.get("/")
    alice = User.objects.get(username="alice")
    assert (alice.email, alice.has_usable_password()) == ("alice@example.com", False)
    assert memberships("alice") == {"refund-support": (Role.ANNOTATOR, OIDC)}
    assert home.status_code == 200 and home.context["user"] == alice
    assert "signed in with OpenID Connect: user 'alice' as refund-support:annotator" in caplog.text
    assert CLIENT_SECRET not in caplog.text


def test_memberships_are_what_the_groups_give_now_refreshed_at_every_sign_in(client, start_provider, workspaces):
    provider = start_provider()
    old_team = make_workspace("old-team")
    # Since their last sign-in: a lead made lena an annotator in Icewater; alice kept a membership the provider
    # gave her once (old-team), and a lead added her to side-project.
    make_user("lena", Role.ANNOTATOR, workspace=workspaces["refund-support"])
    alice = make_user("alice", Role.LEAD, workspace=workspaces["side-project"])
    Membership.objects.create(user=alice, workspace=old_team, role=Role.LEAD, source=OIDC)
    with override_settings(**provider.settings()):
        assert sign_in(client, "lena")[0].status_code == 302
        client.logout()
        assert sign_in(client, "alice")[0].status_code == 302
    # lena's groups: refund-leads and refund-annotators name one workspace; the higher role wins, and the
    # provider now keeps that membership.
    assert memberships("lena") == {"refund-support": (Role.LEAD, OIDC)}
    # alice: the map's workspace; the provider's old one gone; the lead's own stays.
    assert memberships("alice") == {"refund-support": (Role.ANNOTATOR, OIDC), "side-project": (Role.LEAD, LOCAL)}
    assert User.objects.count() == 2  # matched by username, none made twice

    # The map changes (refund-annotators now review in side-project too): the next sign-in follows it.
    changed = "refund-annotators=refund-support:annotator,refund-annotators=side-project:reviewer"
    client.logout()
    with override_settings(**provider.settings(ICEWATER_OIDC_ROLE_MAP=parse_role_map(changed))):
        assert sign_in(client, "alice")[0].status_code == 302
    assert memberships("alice") == {"refund-support": (Role.ANNOTATOR, OIDC), "side-project": (Role.REVIEWER, OIDC)}


def test_a_mapped_workspace_that_does_not_exist_is_skipped_and_logged(client, start_provider, caplog):
    provider = start_provider()
    two = parse_role_map("refund-annotators=refund-support:annotator,refund-annotators=nowhere:lead")
    with override_settings(**provider.settings(ICEWATER_OIDC_ROLE_MAP=two)):
        assert sign_in(client, "alice")[0].status_code == 302
    assert memberships("alice") == {"refund-support": (Role.ANNOTATOR, OIDC)}
    assert "ICEWATER_OIDC_ROLE_MAP names workspaces that do not exist: nowhere" in caplog.text


def test_an_account_without_an_address_signs_in_without_one(client, start_provider):
    provider = start_provider()
    with override_settings(**provider.settings()):
        assert sign_in(client, "nomail")[0].status_code == 302
    assert User.objects.get(username="nomail").email == ""


def test_logging_out_ends_the_icewater_session_and_the_providers(client, start_provider):
    provider = start_provider()
    at_provider = requests.Session()
    with override_settings(**provider.settings()):
        start = client.get("/oidc/start/")
        callback = sign_in_at_provider(at_provider, start["Location"], "alice", APP)
        assert client.get(callback.removeprefix(APP)).status_code == 302
        id_token = client.session["oidc_id_token"]
        out = client.post("/accounts/logout/")
        assert out.status_code == 302 and out["Location"].startswith(f"{provider.issuer}/session/end?")
        sent = query_of(out["Location"])
        assert sent == {
            "id_token_hint": id_token,
            "client_id": "icewater",
            "post_logout_redirect_uri": f"{APP}/accounts/login/",
        }
        assert "_auth_user_id" not in client.session  # Icewater's session ended before the provider's
        assert client.get("/").status_code == 302
        back = end_provider_session(at_provider, out["Location"])
        assert back == f"{APP}/accounts/login/"
        # The provider's session is gone too: a new sign-in asks for the login again (a control: before the
        # logout, the same request went straight back to Icewater).
        again = at_provider.get(client.get("/oidc/start/")["Location"], allow_redirects=True, timeout=10)
        assert 'name="login"' in again.text


def test_the_provider_session_alone_signs_in_again_without_a_login(client, start_provider):
    """The control for the test above: without the provider's logout, its session answers at once."""
    provider = start_provider()
    at_provider = requests.Session()
    with override_settings(**provider.settings()):
        callback = sign_in_at_provider(at_provider, client.get("/oidc/start/")["Location"], "alice", APP)
        assert client.get(callback.removeprefix(APP)).status_code == 302
        client.logout()
        again = at_provider.get(client.get("/oidc/start/")["Location"], allow_redirects=False, timeout=10)
        while again.status_code in (302, 303) and not again.headers["Location"].startswith(APP):
            again = at_provider.get(again.headers["Location"], allow_redirects=False, timeout=10)
        assert again.headers["Location"].startswith(f"{APP}/oidc/callback/?code=")


def test_without_a_provider_the_sign_in_pages_do_not_exist_and_logout_stays_local(client, django_user_model):
    assert client.get("/oidc/start/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    client.force_login(django_user_model.objects.create_user("pat", password="a-long-password"))
    out = client.post("/accounts/logout/")
    assert out.status_code == 302 and out["Location"] == "/accounts/login/"
    assert "company-sign-in" not in client.get("/accounts/login/").content.decode()
