"""Error pages in the site's look, and a terminal that shows real errors (issue 25 item 5)."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

WRONG_ID = 987654


@pytest.mark.parametrize("debug", [True, False], ids=["debug (make run)", "production"])
def test_a_wrong_id_shows_the_sites_404_page(client, annotator, settings, debug):
    settings.DEBUG = debug
    client.force_login(annotator)
    response = client.get(reverse("labeling:annotate", args=[WRONG_ID]))
    assert response.status_code == 404
    page = response.content.decode()
    assert '<nav class="mainnav"' in page and "ann</span>" in page  # the site's base template, signed in
    assert "There is nothing at this address, or it is not yours to see." in page
    assert "technical_404" not in page and "Django tried these URL patterns" not in page
    assert "Page not found at" not in page


def test_a_wrong_id_on_an_htmx_request_is_one_sentence(client, reviewer):
    client.force_login(reviewer)
    response = client.get(reverse("labeling:adjudicate", args=[WRONG_ID, WRONG_ID]), HTTP_HX_REQUEST="true")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == "There is nothing at this address, or it is not yours to see."


def test_an_unexpected_error_shows_the_sites_500_page_and_logs_its_traceback(client, annotator, settings, caplog):
    settings.ROOT_URLCONF = "tests.error_urls"
    client.raise_request_exception = False
    client.force_login(annotator)
    with caplog.at_level(logging.WARNING):
        response = client.get("/boom/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong" in page and 'class="topbar"' in page and "icewater.css" in page
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "an unexpected failure" in caplog.text and "Traceback" in caplog.text


def test_an_expected_refusal_is_one_line_without_a_traceback(client, annotator, caplog):
    client.force_login(annotator)
    with caplog.at_level(logging.WARNING):
        response = client.get(reverse("labeling:queues"))  # leads only
    assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /queues/"
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


def test_a_wrong_id_is_one_line_too(client, annotator, caplog):
    client.force_login(annotator)
    with caplog.at_level(logging.WARNING):
        client.get(reverse("labeling:annotate", args=[WRONG_ID]))
    assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == [
        f"Not Found: /annotations/{WRONG_ID}/"
    ]
    assert "Traceback" not in caplog.text
