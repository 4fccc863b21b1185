"""The login page names the demo accounts anyone can sign in as, while they keep the public password (issue 41
item 5): `make run HOST=0.0.0.0` shares the demo with a whole network, and the README prints the password."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from evals.models import Role, User
from tests.factories import make_user

pytestmark = pytest.mark.django_db

PUBLIC = "icewater-demo"  # the README's "The password of every demo user is `icewater-demo`"
DEMO = [("maria", Role.ANNOTATOR), ("deshawn", Role.ANNOTATOR), ("ana", Role.ANNOTATOR), ("rita", Role.REVIEWER),
        ("lee", Role.LEAD)]  # fmt: skip


def make_demo_accounts() -> None:
    for name, role in DEMO:
        make_user(name, role, password=PUBLIC)


def notice(client) -> str:
    """The demo notice's text on the login page, "" when there is none."""
    page = client.get(reverse("login")).content.decode()
    start = page.find('class="warning demo-logins"')
    return "" if start < 0 else page[start : page.index("</div>", start)]


def test_the_login_page_names_every_demo_account_and_the_public_password_and_says_how_to_take_them_back(client):
    make_demo_accounts()
    text = notice(client)
    assert "Demo accounts with a public password" in text
    for name, _ in DEMO:
        assert f"<strong>{name}</strong>" in text
    assert "<strong>lee</strong> (a lead, with the admin)" in text and "<strong>rita</strong> (a lead" not in text
    assert f"<code>{PUBLIC}</code>" in text
    assert "manage.py changepassword NAME" in text and "untick Active" in text


def test_a_server_without_the_demo_accounts_shows_no_notice(client):
    # The negative control: same page, other accounts (one with the public password), no demo names.
    make_user("ann", Role.ANNOTATOR, password=PUBLIC)
    assert notice(client) == ""
    assert "Log in" in client.get(reverse("login")).content.decode()


def test_an_account_with_its_own_password_or_deactivated_drops_out_and_the_last_one_ends_the_notice(client):
    make_demo_accounts()
    assert "<strong>lee</strong>" in notice(client)  # the answer below must not come from a stale cache
    lee = User.objects.get(username="lee")
    lee.set_password("a-password-of-lees-own")
    lee.save()
    maria = User.objects.get(username="maria")
    maria.is_active = False
    maria.save()
    text = notice(client)
    assert "<strong>deshawn</strong>, <strong>ana</strong> or <strong>rita</strong>" in text
    assert "lee" not in text and "maria" not in text
    for name in ("deshawn", "ana", "rita"):
        account = User.objects.get(username=name)
        account.set_password(f"{name}-own-password")
        account.save()
    assert notice(client) == ""


@pytest.mark.slow
def test_loading_the_demo_again_keeps_the_password_and_the_deactivation_someone_gave_a_demo_account(client):
    # `make run` loads the demo at every start: it used to give every demo account the public password back.
    make_demo_accounts()
    lee, maria = User.objects.get(username="lee"), User.objects.get(username="maria")
    lee.set_password("a-password-of-lees-own")
    lee.save()
    maria.is_active = False
    maria.save()
    call_command("load_demo", verbosity=0, stdout=StringIO())
    lee.refresh_from_db()
    maria.refresh_from_db()
    assert lee.check_password("a-password-of-lees-own") and not lee.check_password(PUBLIC)
    assert not maria.is_active
    assert User.objects.get(username="ana").check_password(PUBLIC)  # untouched ones keep the public password
    text = notice(client)
    assert "<strong>ana</strong>" in text and "lee" not in text and "maria" not in text
