"""Login throttling: wrong passwords lock one username from one address out for a while (django-axes).

The policy (config/settings.py, docs/security.md): after 5 wrong passwords in a row for a username from
an address, that pair is refused for 15 minutes, even with the right password; a right password before
that clears the count; a staff lead can unlock early in the admin.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.urls import reverse
from django.utils import timezone

from evals.models import Role
from tests.factories import make_user

RIGHT = "pw-for-tests-1"  # make_user's password
LIMIT = 5  # the documented limit, written out: not read from the settings under test
COOL_OFF_MINUTES = 15


def attempt(client, username, password, address="127.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def logged_in_as(client) -> str | None:
    response = client.get(reverse("home"))
    return response.wsgi_request.user.username if response.status_code == 200 else None


def fail(client, username, times, address="127.0.0.1"):
    return [attempt(client, username, f"wrong-{i}", address).status_code for i in range(times)]


def age_attempts(minutes: int) -> None:
    """What the clock would do: the recorded failures happened `minutes` earlier."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=minutes))


@pytest.mark.django_db
def test_five_wrong_passwords_then_the_right_one_is_refused(client, annotator):
    assert fail(client, "ann", LIMIT - 1) == [200] * (LIMIT - 1)  # the form again, with its error
    assert attempt(client, "ann", "wrong-last").status_code == 429  # the fifth locks
    response = attempt(client, "ann", RIGHT)
    assert response.status_code == 429
    assert logged_in_as(client) is None


@pytest.mark.django_db
def test_four_wrong_passwords_then_the_right_one_still_logs_in(client, annotator):
    fail(client, "ann", LIMIT - 1)
    assert attempt(client, "ann", RIGHT).status_code == 302
    assert logged_in_as(client) == "ann"


@pytest.mark.django_db
def test_the_lockout_page_says_what_happened_for_how_long_and_who_can_unlock(client, annotator):
    fail(client, "ann", LIMIT)
    page = attempt(client, "ann", RIGHT).content.decode()
    assert "Too many wrong passwords" in page
    assert f"After {LIMIT} wrong passwords in a row" in page
    assert f"blocked for {COOL_OFF_MINUTES} minutes" in page
    assert "ask a lead to unlock you" in page
    assert 'name="password"' not in page  # no form that could only fail


@pytest.mark.django_db
def test_another_user_from_the_same_address_is_not_locked_out(client, annotator, annotator2):
    fail(client, "ann", LIMIT)
    assert attempt(client, "ann2", RIGHT).status_code == 302
    assert logged_in_as(client) == "ann2"


@pytest.mark.django_db
def test_the_same_user_from_another_address_is_not_locked_out(client, annotator):
    fail(client, "ann", LIMIT, address="198.51.100.7")
    assert attempt(client, "ann", RIGHT, address="198.51.100.7").status_code == 429
    assert attempt(client, "ann", RIGHT, address="127.0.0.1").status_code == 302


@pytest.mark.django_db
def test_the_cool_off_ends_after_fifteen_minutes_and_not_before(client, annotator):
    fail(client, "ann", LIMIT)
    age_attempts(COOL_OFF_MINUTES - 1)
    assert attempt(client, "ann", RIGHT).status_code == 429
    age_attempts(COOL_OFF_MINUTES + 1)
    assert attempt(client, "ann", RIGHT).status_code == 302
    assert logged_in_as(client) == "ann"


@pytest.mark.django_db
def test_a_right_password_clears_the_count(client, annotator):
    fail(client, "ann", LIMIT - 1)
    assert attempt(client, "ann", RIGHT).status_code == 302
    client.post(reverse("logout"))
    assert fail(client, "ann", LIMIT - 1) == [200] * (LIMIT - 1)
    assert attempt(client, "ann", RIGHT).status_code == 302


@pytest.mark.django_db
def test_garbage_in_the_login_form_is_the_form_again_and_counts_nothing(client, annotator):
    for data in ({}, {"username": "ann"}, {"username": "a" * 10_000, "password": "x"}, {"username": "a\0b"}):
        response = client.post(reverse("login"), data)
        assert response.status_code == 200
        assert 'name="password"' in response.content.decode()
    assert attempt(client, "ann", RIGHT).status_code == 302


@pytest.mark.django_db
def test_a_staff_lead_unlocks_a_locked_out_user_in_the_admin(client, annotator):
    fail(client, "ann", LIMIT)
    lead = make_user("unlocker", Role.LEAD)
    lead.is_staff = True
    lead.save()
    admin = client.__class__()
    admin.force_login(lead)
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "ann" in listing.content.decode()
    pks = [str(pk) for pk in AccessAttempt.objects.values_list("pk", flat=True)]
    confirm = admin.post("/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": pks})
    assert confirm.status_code == 200  # Django's "are you sure" page
    done = admin.post(
        "/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": pks, "post": "yes"}
    )
    assert done.status_code == 302
    assert attempt(client, "ann", RIGHT).status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER])
def test_other_staff_cannot_see_or_unlock_lockouts(client, annotator, role):
    fail(client, "ann", LIMIT)
    staff = make_user(f"staff-{role}", role)
    staff.is_staff = True
    staff.save()
    client.force_login(staff)
    assert client.get("/admin/axes/accessattempt/").status_code == 403
    pks = [str(pk) for pk in AccessAttempt.objects.values_list("pk", flat=True)]
    client.post("/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": pks, "post": "yes"})
    assert AccessAttempt.objects.count() == 1


# --- Behind reverse proxies (ICEWATER_TRUSTED_PROXIES, config/client_ip.py) ---------------------------------

PROXY = "10.0.0.2"  # the nearest proxy: every request reaches Icewater from here


def via_proxy(client, username, password, client_address, forwarded_by_client=""):
    """A login post as it arrives through one proxy that appends the address it saw to X-Forwarded-For."""
    chain = f"{forwarded_by_client}, {client_address}" if forwarded_by_client else client_address
    data = {"username": username, "password": password}
    return client.post(reverse("login"), data, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=chain)


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "expected"),
    [
        (0, PROXY, "203.0.113.9", PROXY),  # no proxy trusted: the header is the client's, not read
        (1, PROXY, "203.0.113.9", "203.0.113.9"),
        (1, PROXY, "6.6.6.6, 203.0.113.9", "203.0.113.9"),  # the client's own prefix is ignored
        (2, PROXY, "6.6.6.6, 203.0.113.9, 10.0.0.1", "203.0.113.9"),  # the outer proxy saw the client
        (2, PROXY, "203.0.113.9", PROXY),  # passed one proxy of two: not trusted, the nearest address
        (1, PROXY, "", PROXY),  # no header
        (1, PROXY, " , not-an-address", PROXY),  # garbage: the nearest address, never the garbage
        (1, PROXY, "2001:db8::1", "2001:db8::1"),
    ],
)
def test_the_client_address_is_read_from_the_right_of_the_forwarded_chain(
    settings, proxies, remote, forwarded, expected
):
    from django.test import RequestFactory

    from config.client_ip import client_ip

    settings.ICEWATER_TRUSTED_PROXIES = proxies
    meta = {"REMOTE_ADDR": remote, **({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})}
    assert client_ip(RequestFactory().get("/", **meta)) == expected


@pytest.mark.django_db
def test_behind_a_trusted_proxy_a_guesser_locks_only_their_own_address(client, settings, annotator):
    settings.ICEWATER_TRUSTED_PROXIES = 1
    guesser, colleague = "198.51.100.7", "203.0.113.9"
    for i in range(LIMIT):
        via_proxy(client, "ann", f"wrong-{i}", guesser)
    assert via_proxy(client, "ann", RIGHT, guesser).status_code == 429
    # Writing another address in front of the chain does not get the guesser a fresh count.
    assert via_proxy(client, "ann", RIGHT, guesser, forwarded_by_client=colleague).status_code == 429
    # ann herself, behind the same proxy, still logs in.
    assert via_proxy(client, "ann", RIGHT, colleague).status_code == 302


@pytest.mark.django_db
def test_without_a_trusted_proxy_everyone_behind_it_shares_one_address(client, annotator):
    """The negative control: the default reads REMOTE_ADDR, so the proxy's address is locked for ann."""
    for i in range(LIMIT):
        via_proxy(client, "ann", f"wrong-{i}", "198.51.100.7")
    assert via_proxy(client, "ann", RIGHT, "203.0.113.9").status_code == 429


def warning_of(response) -> str:
    """The attempts-left line of the login form, or "" (the page's text without tags)."""
    import re

    found = re.search(r'<p class="attempts-left"[^>]*>(.*?)</p>', response.content.decode(), re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)).strip() if found else ""


@pytest.mark.django_db
def test_the_form_says_how_many_attempts_are_left_when_few_remain(client, annotator):
    # Worked out by hand: 5 allowed, so after 3 wrong passwords 2 are left, after 4 one.
    said = [warning_of(attempt(client, "ann", f"wrong-{i}")) for i in range(LIMIT - 1)]
    assert said == [
        "",  # 4 left: a person who mistyped once is not alarmed
        "",  # 3 left
        "2 attempts left before a 15-minute lockout of ann from this address.",
        "1 attempt left before a 15-minute lockout of ann from this address.",
    ]
    assert attempt(client, "ann", "wrong-last").status_code == 429  # and the fifth locks, as it said


@pytest.mark.django_db
def test_attempts_left_count_per_username_and_address(client, annotator):
    fail(client, "ann", LIMIT - 2)
    # Another address has its own count (nothing said); the same address again says 1 left.
    assert warning_of(attempt(client, "ann", "wrong-x", address="10.0.0.9")) == ""
    assert warning_of(attempt(client, "ann", "wrong-y")).startswith("1 attempt left")


@pytest.mark.django_db
def test_a_right_password_starts_the_count_again(client, annotator):
    fail(client, "ann", LIMIT - 2)
    assert attempt(client, "ann", RIGHT).status_code == 302
    client.logout()
    assert warning_of(attempt(client, "ann", "wrong-again")) == ""  # 4 left again
