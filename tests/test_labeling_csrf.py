"""labeling.csrf.page_token: Django's masked CSRF token, with the mask drawn in one read. Django's middleware
must accept it exactly as its own, and the mask must be uniform over the alphabet."""

from __future__ import annotations

import collections
import itertools
import re
import secrets

import pytest
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, _unmask_cipher_token
from django.test import Client, RequestFactory

from labeling.csrf import page_token, random_chars
from labeling.models import Annotation, Label

from .labeling_helpers import fast_passwords, labeling_setup, next_url, page_url, save_url  # noqa: F401

SECRET = "abcdefghijklmnopqrstuvwxyzABCDEF"


def test_the_token_unmasks_to_the_requests_secret_and_renews_the_cookie():
    request = RequestFactory().get("/")
    request.META["CSRF_COOKIE"] = SECRET
    tokens = {page_token(request) for _ in range(50)}
    assert len(tokens) == 50  # a fresh mask every time
    for token in tokens:
        assert len(token) == 2 * CSRF_SECRET_LENGTH and set(token) <= set(CSRF_ALLOWED_CHARS)
        assert _unmask_cipher_token(token) == SECRET
    assert request.META["CSRF_COOKIE_NEEDS_UPDATE"] is True


def test_without_a_secret_yet_django_makes_one():
    request = RequestFactory().get("/")
    token = page_token(request)
    secret = request.META["CSRF_COOKIE"]
    assert len(secret) == CSRF_SECRET_LENGTH and _unmask_cipher_token(token) == secret


def counts_are_uniform(chars: str) -> bool:
    # 256,000 characters over 62: 4,129 expected each, standard deviation 64; allow 6 of them either way.
    counts = collections.Counter(chars)
    return set(counts) == set(CSRF_ALLOWED_CHARS) and all(3745 <= n <= 4513 for n in counts.values())


def test_the_mask_is_uniform_over_the_alphabet_and_a_biased_draw_is_caught():
    assert counts_are_uniform(random_chars(256_000))
    # Negative control: every byte mapped (256 = 4 x 62 + 8), so the first 8 characters come 5/4 as often
    # (5,000 expected): the check catches the bias the module's rejection of bytes 248-255 avoids.
    biased = "".join(CSRF_ALLOWED_CHARS[b % 62] for b in secrets.token_bytes(256_000))
    assert not counts_are_uniform(biased)
    # The module's own path on a draw of every byte value in turn: exactly uniform once 248-255 are dropped.
    every_byte = itertools.cycle(range(256))
    counts = collections.Counter(random_chars(62 * 1000, draw=lambda n: bytes(next(every_byte) for _ in range(n))))
    assert set(counts.values()) == {1000}


@pytest.mark.django_db
def test_the_middleware_accepts_the_pages_token_and_refuses_a_tampered_one(annotator):
    eval_set, rv, (output,) = labeling_setup()
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator)
    client.get("/")  # the CSRF cookie
    client.post(next_url(eval_set), {"csrfmiddlewaretoken": client.cookies["csrftoken"].value})
    mine = Annotation.objects.get(annotator=annotator)
    page = client.get(page_url(mine))
    assert "csrftoken" in page.cookies  # renewed, as get_token would have it
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())[1]
    data = {"criterion": "next_step", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    swapped = CSRF_ALLOWED_CHARS[(CSRF_ALLOWED_CHARS.index(token[-1]) + 1) % len(CSRF_ALLOWED_CHARS)]
    assert client.post(save_url(mine), {**data, "csrfmiddlewaretoken": token[:-1] + swapped}).status_code == 403
    assert not Label.objects.exists()
    assert client.post(save_url(mine), {**data, "csrfmiddlewaretoken": token}).status_code == 302
    assert Label.objects.get().outcome == "PASS"
