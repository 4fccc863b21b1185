"""In Chromium, against the real OpenID provider (tests/oidc_provider/): a person signs in at the provider's
login page, lands on Home, logs out of Icewater and of the provider; each refusal is a page that says what
happened and what to do, and makes no account."""

from __future__ import annotations

import copy

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from evals.models import MembershipSource, Role, User
from signin.issuer import issuer_origin
from signin.provider import forget_discovery
from tests.factories import make_workspace
from tests.oidc_helpers import memberships, providers

from .browser_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.subprocess, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def use_provider(live_server, settings, tmp_path):
    """use_provider(misbehave=""): a provider for the live server, and Icewater's settings pointing at it."""
    forget_discovery()
    make_workspace("refund-support", "Refund support")  # the workspace the tests' role map names
    with providers(tmp_path) as start:

        def use(misbehave: str = "", **overrides):
            provider = start(misbehave, base_urls=(live_server.url,))
            for name, value in provider.settings(**overrides).items():
                setattr(settings, name, value)
            # What config/settings.py adds to the policy for a configured issuer.
            policy = copy.deepcopy(django_settings.CONTENT_SECURITY_POLICY)
            policy["DIRECTIVES"]["form-action"] = ["'self'", issuer_origin(provider.issuer)]
            settings.CONTENT_SECURITY_POLICY = policy
            return provider

        yield use
    forget_discovery()


def sign_in_at_the_provider(page, base_url: str, login: str) -> None:
    page.goto(base_url + "/accounts/login/")
    page.get_by_role("link", name="Sign in with your company account").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("anything")
    page.get_by_role("button", name="Sign-in").click()


def test_a_person_signs_in_at_the_provider_lands_on_home_and_logs_out_of_both(live_server, new_page, use_provider):
    use_provider()
    page = new_page()
    sign_in_at_the_provider(page, live_server.url, "alice")
    expect(page).to_have_url(live_server.url + "/")
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()
    expect(page.locator("header")).to_contain_text("alice")
    assert memberships("alice") == {"refund-support": (Role.ANNOTATOR, MembershipSource.OIDC)}
    screenshot(page, "oidc_signed_in_home")

    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Yes, sign me out").click()  # the provider's own logout page
    expect(page).to_have_url(live_server.url + "/accounts/login/")
    page.goto(live_server.url + "/")
    expect(page).to_have_url(live_server.url + "/accounts/login/?next=/")
    # The provider's session ended too: signing in again asks for the login at the provider.
    page.get_by_role("link", name="Sign in with your company account").click()
    expect(page.locator("input[name=login]")).to_be_visible()


REFUSALS = [
    # (misbehave, login, headline on the page)
    ("foreign-key", "alice", "The sign-in could not be verified"),
    ("expired", "alice", "The sign-in had expired"),
    ("audience", "alice", "The sign-in was meant for another application"),
    ("token-issuer", "alice", "The sign-in came from the wrong identity provider"),
    ("", "ursula", "Your email address is not verified"),
    ("", "otto", "You have no workspace in Icewater"),
]


@pytest.mark.parametrize(("misbehave", "login", "headline"), REFUSALS, ids=[f"{m or 'ok'}-{u}" for m, u, _ in REFUSALS])
def test_a_refused_sign_in_is_a_page_saying_what_happened_and_what_to_do(
    live_server, new_page, use_provider, misbehave, login, headline
):
    use_provider(misbehave)
    page = new_page()
    sign_in_at_the_provider(page, live_server.url, login)
    expect(page.get_by_role("heading", name="Sign-in refused")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text(headline)
    expect(page.get_by_text("no account and no workspace membership were made")).to_be_visible()
    assert not User.objects.exists()
    if login == "otto":
        screenshot(page, "oidc_refused_no_workspace")
    page.get_by_role("link", name="Back to sign-in").click()
    expect(page).to_have_url(live_server.url + "/accounts/login/")


def test_a_reloaded_callback_is_refused_as_replayed(live_server, new_page, use_provider):
    use_provider()
    page = new_page()
    callbacks: list[str] = []
    page.on("request", lambda request: callbacks.append(request.url) if "/oidc/callback/" in request.url else None)
    sign_in_at_the_provider(page, live_server.url, "alice")
    expect(page).to_have_url(live_server.url + "/")
    page.goto(callbacks[0])
    expect(page.get_by_role("alert")).to_contain_text("This sign-in was already used or was not started here")


def test_a_provider_under_another_name_is_refused_before_the_person_leaves(
    live_server, new_page, use_provider, settings
):
    provider = use_provider()
    settings.ICEWATER_OIDC_ISSUER = provider.issuer.replace("127.0.0.1", "localhost")
    page = new_page()
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_role("link", name="Sign in with your company account").click()
    expect(page).to_have_url(live_server.url + "/oidc/start/")
    expect(page.get_by_role("alert")).to_contain_text("The sign-in came from the wrong identity provider")


def test_with_password_sign_in_off_the_login_page_offers_only_the_company_sign_in(live_server, new_page, use_provider):
    use_provider(ICEWATER_PASSWORD_LOGIN=False)
    page = new_page()
    page.goto(live_server.url + "/accounts/login/")
    expect(page.get_by_role("link", name="Sign in with your company account")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_count(0)
    screenshot(page, "oidc_login_page_password_off")
