"""A NUL character (%00) in a page's query parameters is a 400 that says so, not a 500 from PostgreSQL.

Query strings are decoded with replacement characters, so NUL is the one character that reaches a filter, and
PostgreSQL refuses to compare a text holding one ("cannot contain NUL (0x00) bytes"): the report, its exports
and drilldowns (agent_version) and a judge run's verdicts (criterion) answered 500.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import calibration_set, make_eval_set, make_judge, make_rubric_version, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages(client, lead):
    rv = make_rubric_version("refund", "1")
    cal, judge = make_eval_set("cal"), make_judge("j")
    calibration_set(
        cal, rv, judge, [{"correct_amount": ("PASS", "PASS", "PASS")}, {"correct_amount": ("FAIL", "FAIL", "PASS")}]
    )
    run = make_run(cal, rv, judge)
    ids = (cal.pk, rv.pk, judge.pk)
    client.force_login(lead)
    return {
        "report": (reverse("calibration:report", args=ids), "agent_version"),
        "export.json": (reverse("calibration:export", args=(*ids, "json")), "agent_version"),
        "export.csv": (reverse("calibration:export", args=(*ids, "csv")), "agent_version"),
        "drilldown": (reverse("calibration:drilldown", args=(*ids, "correct_amount", "false-pass")), "agent_version"),
        "verdicts": (reverse("judging:run_verdicts", args=[run.pk]), "criterion"),
    }


@pytest.mark.parametrize("page", ["report", "export.json", "export.csv", "drilldown", "verdicts"])
def test_a_nul_in_a_query_parameter_is_a_400_with_a_message(client, pages, page):
    url, name = pages[page]
    refused = client.get(f"{url}?{name}=v1%00")
    assert refused.status_code == 400
    body = refused.content.decode()
    assert f"NUL character (%00) in its &#x27;{name}&#x27; parameter" in body and "remove it from the address" in body
    assert client.get(f"{url}?{name}=v1").status_code == 200  # the negative control: the same without NUL


def test_htmx_gets_the_reason_as_text(client, pages):
    url, name = pages["verdicts"]
    refused = client.get(f"{url}?{name}=a%00", HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and refused["Content-Type"].startswith("text/plain")
    assert refused.content.decode().startswith("The address has a NUL character (%00) in its 'criterion' parameter")


def test_a_nul_in_a_parameter_name_is_refused_too(client, pages):
    url, _ = pages["report"]
    assert client.get(f"{url}?agent%00version=v1").status_code == 400


def test_other_bad_requests_keep_djangos_page_which_says_nothing(client, pages, settings):
    settings.ALLOWED_HOSTS = ["icewater.example"]
    response = client.get(pages["report"][0], HTTP_HOST="attacker.example")
    assert response.status_code == 400 and "attacker.example" not in response.content.decode()
