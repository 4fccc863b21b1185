"""Each refusal of a sign-in, met with a real provider (tests/oidc_provider/) that misbehaves on purpose:
a clear page (403, its reason), no account and no role made or changed, one log line with the reason and no
secret. Each has its control: the same provider's well-behaved twin, or the same person, signs in."""

from __future__ import annotations

import pytest
import requests
from django.test import override_settings

from evals.models import Membership, MembershipSource, Role, User
from signin.role_map import parse_role_map
from tests.factories import make_user
from tests.oidc_helpers import CLIENT_SECRET, memberships, sign_in_at_provider

pytestmark = [pytest.mark.django_db, pytest.mark.subprocess, pytest.mark.usefixtures("workspaces")]

APP = "http://testserver"


def callback_for(client, login: str) -> str:
    start = client.get("/oidc/start/")
    assert start.status_code == 302, start.content[:300]
    return sign_in_at_provider(requests.Session(), start["Location"], login, APP).removeprefix(APP)


def assert_refused(answer, reason: str, caplog) -> None:
    page = answer.content.decode()
    assert answer.status_code == 403, page[:300]
    assert f'data-reason="{reason}"' in page and "Sign-in refused" in page and "Back to sign-in" in page
    lines = [r.getMessage() for r in caplog.records if r.name == "icewater.signin" and "refused" in r.getMessage()]
    assert len(lines) == 1 and f"reason={reason} " in lines[0], lines
    assert CLIENT_SECRET not in caplog.text
    assert "_auth_user_id" not in answer.wsgi_request.session


@pytest.mark.parametrize(
    ("misbehave", "reason"),
    [
        ("foreign-key", "bad-signature"),
        ("expired", "expired"),
        ("audience", "wrong-audience"),
        ("token-issuer", "wrong-issuer"),
    ],
)
def test_an_id_token_that_does_not_verify_is_refused(client, start_provider, caplog, misbehave, reason):
    provider = start_provider(misbehave)
    with override_settings(**provider.settings()):
        answer = client.get(callback_for(client, "alice"))
    assert_refused(answer, reason, caplog)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_the_well_behaved_provider_signs_the_same_person_in(client, start_provider):
    """The control for the misbehaving providers above: the same program, the same person, no misbehaviour."""
    provider = start_provider("")
    with override_settings(**provider.settings()):
        assert client.get(callback_for(client, "alice")).status_code == 302
    assert User.objects.filter(username="alice").exists()


def test_a_provider_serving_another_issuers_discovery_is_refused_before_anyone_leaves(client, start_provider, caplog):
    provider = start_provider()
    # The same provider under another name: its discovery document names http://127.0.0.1:PORT.
    elsewhere = provider.issuer.replace("127.0.0.1", "localhost")
    with override_settings(**provider.settings(ICEWATER_OIDC_ISSUER=elsewhere)):
        answer = client.get("/oidc/start/")
    assert_refused(answer, "wrong-issuer", caplog)
    assert "oidc_states" not in client.session


def test_a_replayed_callback_is_refused_and_changes_nothing(client, start_provider, caplog):
    provider = start_provider()
    with override_settings(**provider.settings()):
        callback = callback_for(client, "alice")
        assert client.get(callback).status_code == 302
        Membership.objects.filter(user__username="alice").update(role=Role.LEAD)  # a replay must not redo it
        client.logout()
        caplog.clear()
        assert_refused(client.get(callback), "replayed", caplog)
    assert memberships("alice") == {"refund-support": (Role.LEAD, MembershipSource.OIDC)}
    assert User.objects.count() == 1


def test_a_callback_this_browser_did_not_start_is_refused(client, start_provider, caplog):
    provider = start_provider()
    with override_settings(**provider.settings()):
        callback = callback_for(client, "alice")
        client.cookies.clear()  # another browser: no session waits for this state
        assert_refused(client.get(callback), "replayed", caplog)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_an_id_token_with_another_sign_ins_nonce_is_refused(client, start_provider, caplog):
    """The ID token carries the nonce sent with its request; a session waiting for another is refused. (With
    PKCE a code cannot be swapped into another sign-in, so the other nonce is put in the session's place.)"""
    provider = start_provider()
    with override_settings(**provider.settings()):
        callback = callback_for(client, "alice")
        session = client.session
        state = next(iter(session["oidc_states"]))
        session["oidc_states"][state]["nonce"] = "a-nonce-from-another-sign-in-request-0123456789"
        session.save()
        answer = client.get(callback)
    assert_refused(answer, "nonce", caplog)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_an_unverified_address_is_refused_unless_the_setting_says_the_provider_never_tells(
    client, start_provider, caplog
):
    provider = start_provider()
    with override_settings(**provider.settings()):
        assert_refused(client.get(callback_for(client, "ursula")), "unverified-email", caplog)
    assert not User.objects.exists() and not Membership.objects.exists()
    with override_settings(**provider.settings(ICEWATER_OIDC_VERIFIED_EMAIL=False)):
        assert client.get(callback_for(client, "ursula")).status_code == 302
    assert User.objects.get(username="ursula").email == "ursula@example.com"


def test_a_person_whose_groups_map_to_no_workspace_is_refused(client, start_provider, caplog):
    provider = start_provider()
    with override_settings(**provider.settings()):
        assert_refused(client.get(callback_for(client, "otto")), "no-workspace", caplog)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_an_existing_account_whose_groups_map_to_nothing_now_is_refused_and_keeps_its_memberships(
    client, start_provider, caplog, workspaces
):
    provider = start_provider()
    otto = make_user("otto", Role.REVIEWER, workspace=workspaces["side-project"])
    Membership.objects.create(user=otto, workspace=workspaces["refund-support"], role=Role.LEAD, source="oidc")
    with override_settings(**provider.settings()):
        assert_refused(client.get(callback_for(client, "otto")), "no-workspace", caplog)
    # Refused, so nothing changed, not even the provider's old membership (the next good sign-in replaces it).
    assert memberships("otto") == {
        "side-project": (Role.REVIEWER, MembershipSource.LOCAL),
        "refund-support": (Role.LEAD, MembershipSource.OIDC),
    }


def test_a_map_whose_workspaces_do_not_exist_is_refused_and_makes_no_account(client, start_provider, caplog):
    provider = start_provider()
    nowhere = parse_role_map("refund-annotators=nowhere:lead")
    with override_settings(**provider.settings(ICEWATER_OIDC_ROLE_MAP=nowhere)):
        assert_refused(client.get(callback_for(client, "alice")), "no-workspace", caplog)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_a_deactivated_account_is_refused(client, start_provider, caplog):
    provider = start_provider()
    User.objects.create_user("alice", is_active=False)
    with override_settings(**provider.settings()):
        assert_refused(client.get(callback_for(client, "alice")), "inactive", caplog)
    assert memberships("alice") == {}


def test_an_error_from_the_provider_is_refused_and_drops_the_state(client, start_provider, caplog):
    provider = start_provider()
    with override_settings(**provider.settings()):
        start = client.get("/oidc/start/")
        state = start["Location"].split("state=")[1].split("&")[0]
        answer = client.get(f"/oidc/callback/?error=access_denied&state={state}")
        assert_refused(answer, "provider-error", caplog)
        assert state not in client.session["oidc_states"]


def test_a_provider_that_does_not_answer_is_a_page_not_a_crash(client, caplog):
    with override_settings(
        ICEWATER_OIDC_ISSUER="http://127.0.0.1:9",  # the discard port: nothing listens
        ICEWATER_OIDC_CLIENT_ID="icewater",
        ICEWATER_OIDC_CLIENT_SECRET=CLIENT_SECRET,
    ):
        assert_refused(client.get("/oidc/start/"), "provider-unreachable", caplog)
