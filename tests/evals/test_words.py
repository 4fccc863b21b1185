"""One vocabulary on the pages ("N/A", "Can't tell"; the stored words only in files and the API), and a favicon."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from evals.models import Role
from evals.templatetags.outcomes import outcome_words
from tests.factories import annotate, annotator, make_eval_set, make_output, make_rubric_version, make_user

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_stored_outcomes_read_as_peoples_words():
    assert outcome_words("NOT_APPLICABLE") == "N/A"
    assert outcome_words("ABSTAIN") == "Can't tell"
    assert [outcome_words(o) for o in ("PASS", "FAIL", "ERROR")] == ["PASS", "FAIL", "ERROR"]
    assert outcome_words(None) == "" and outcome_words("something else") == "something else"


def test_no_template_prints_a_stored_outcome_word_to_people():
    """An outcome printed as text goes through |outcome_words or get_..._display (attributes may hold codes)."""
    printed = re.compile(r">[^<>]*\{\{\s*([\w.]*outcome[\w.]*|o|majority\.0)\s*(\|(?!outcome_words)[^}]*)?\}\}")
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in printed.finditer(line):
                if not re.search(r"get_\w*outcome_display|outcome_text", match.group(0)):
                    offenders.append(f"{path.relative_to(TEMPLATES)}:{number}: {match.group(0)}")
    assert offenders == []


def test_the_check_above_catches_a_raw_outcome():
    """A negative control for the template scan: the same pattern finds the lines this change fixed."""
    printed = re.compile(r">[^<>]*\{\{\s*([\w.]*outcome[\w.]*|o|majority\.0)\s*(\|(?!outcome_words)[^}]*)?\}\}")
    assert printed.search('<span class="pill o-{{ o }}">{{ o }}</span>')
    assert printed.search("<strong>{{ view.agreed_outcome }}</strong>")
    assert not printed.search("<strong>{{ view.agreed_outcome|outcome_words }}</strong>")


@pytest.mark.django_db
def test_the_adjudication_queue_says_cant_tell_not_abstain(client):
    es, rv = make_eval_set(), make_rubric_version()
    key = rv.criteria.order_by("order").first().key
    output = make_output(es)
    annotate(output, rv, annotator("a1"), 0, {key: "ABSTAIN"})
    annotate(output, rv, annotator("a2"), 1, {key: "PASS"})
    client.force_login(make_user("rev", Role.REVIEWER))
    page = client.get(reverse("labeling:adjudication_queue")).content.decode()
    assert "Can&#x27;t tell" in page or "Can't tell" in page
    assert ">ABSTAIN<" not in page


@pytest.mark.django_db
def test_an_agreed_na_is_shown_as_na_on_the_adjudication_page(client):
    es, rv = make_eval_set(), make_rubric_version()
    criterion = rv.criteria.order_by("order").first()
    output = make_output(es)
    annotate(output, rv, annotator("a1"), 0, {criterion.key: "NOT_APPLICABLE"})
    annotate(output, rv, annotator("a2"), 1, {criterion.key: "NOT_APPLICABLE"})
    client.force_login(make_user("rev", Role.REVIEWER))
    page = client.get(reverse("labeling:adjudicate", args=[output.pk, criterion.pk])).content.decode()
    assert "gold is <strong>N/A</strong>" in page
    assert "NOT_APPLICABLE<" not in page


@pytest.mark.django_db
def test_favicon_ico_is_a_small_icon_anyone_can_fetch(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert len(body) < 4096


@pytest.mark.django_db
def test_favicon_ico_takes_only_get(client):
    assert client.post("/favicon.ico").status_code == 405


@pytest.mark.django_db
def test_every_page_names_its_icon(client):
    page = client.get(reverse("login")).content.decode()
    assert re.search(r'<link rel="icon" href="/static/img/favicon[^"]*\.ico"', page)
