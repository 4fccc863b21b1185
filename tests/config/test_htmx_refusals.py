"""A refused htmx request says why in words the page can show; other requests keep Django's own pages."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from config.errors import CSRF_REFUSED
from evals.access import LABELING_REFUSED, SIGNED_OUT
from evals.models import Role
from labeling.models import Annotation, Label
from tests.factories import labeling_setup, set_role
from tests.labeling_helpers import next_url, save_url

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def draft(client, annotator):
    eval_set, rv, _ = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    data = {"criterion": "correct_amount", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    assert client.post(save_url(annotation), data, **HTMX).status_code == 200
    return annotation, {**data, "outcome": "FAIL"}


def stored(annotation) -> list[tuple[str, str]]:
    return list(Label.objects.filter(annotation=annotation).values_list("outcome", "evidence"))


def assert_plain(response, status: int, message: str) -> None:
    assert response.status_code == status
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == message


def test_a_save_by_someone_no_longer_an_annotator_says_the_blind_rule(client, annotator, draft):
    annotation, changed = draft
    set_role(annotator, Role.REVIEWER)
    assert_plain(client.post(save_url(annotation), changed, **HTMX), 403, LABELING_REFUSED)
    page = client.post(save_url(annotation), changed)  # without htmx: the 403 page says the same
    assert page.status_code == 403 and "<h1>Not allowed</h1>" in page.content.decode()
    assert "Only annotators label" in page.content.decode()
    assert stored(annotation) == [("PASS", "NONE")]


def test_a_save_after_the_session_ended_says_so_instead_of_carrying_the_login_page(client, draft):
    annotation, changed = draft
    client.logout()
    assert_plain(client.post(save_url(annotation), changed, **HTMX), 403, SIGNED_OUT)
    page = client.post(save_url(annotation), changed)  # a plain post is sent to the login page as before
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert stored(annotation) == [("PASS", "NONE")]


def test_a_save_with_a_stale_csrf_token_is_refused_in_words(annotator, draft):
    annotation, changed = draft
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(annotator)
    assert_plain(strict.post(save_url(annotation), changed, **HTMX), 403, CSRF_REFUSED)
    page = strict.post(save_url(annotation), changed)
    assert page.status_code == 403 and "CSRF verification failed" in page.content.decode()
    assert stored(annotation) == [("PASS", "NONE")]


def test_a_csrf_token_from_the_page_still_saves(annotator, draft):
    """Negative control: the check itself is Django's, unchanged; a page's own token passes it."""
    annotation, changed = draft
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(annotator)
    page = strict.get(reverse("labeling:annotate", args=[annotation.pk])).content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    response = strict.post(save_url(annotation), {**changed, "csrfmiddlewaretoken": token}, **HTMX)
    assert response.status_code == 200 and stored(annotation) == [("FAIL", "NONE")]


def test_staff_htmx_posts_are_refused_in_words_too(client, annotator, lead):
    url = reverse("calibration:create_token")
    client.force_login(annotator)
    response = client.post(url, {"project": "x"}, **HTMX)
    assert response.status_code == 403 and response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == "This page is for leads."
    client.logout()
    assert_plain(client.post(url, {"project": "x"}, **HTMX), 403, SIGNED_OUT)
