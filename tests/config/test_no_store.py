"""Pages with state are never served from the browser cache.

Back after submitting a case showed the old draft ("Reserved for you · 0/4 answered", empty boxes), as if the
work were lost: the page came from the browser's cache. Labeling, adjudication and decision pages answer with
`Cache-Control: no-store` (Django's never_cache), so Back asks the server again and shows what is true now.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from api.models import GateToken
from evals.models import Criterion
from tests.factories import all_answers, annotate_directly, labeling_setup, make_judge
from tests.labeling_helpers import claim_via_next, page_url

pytestmark = pytest.mark.django_db


def assert_not_cached(response, name: str) -> None:
    assert response.status_code == 200, name
    directives = {d.strip() for d in response.get("Cache-Control", "").split(",")}
    assert {"no-store", "private"} <= directives, f"{name}: Cache-Control {response.get('Cache-Control')!r}"


@pytest.fixture
def world(annotator, annotator2):
    """A case two annotators answered differently (so there is something to adjudicate) and a third in progress."""
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    annotate_directly(outputs[0], rv, annotator, all_answers(rv, "PASS"))
    annotate_directly(outputs[0], rv, annotator2, all_answers(rv, "FAIL"))
    return eval_set, rv, outputs[0], Criterion.objects.filter(rubric_version=rv).order_by("order").first()


def test_the_annotation_page_and_my_work_are_not_cached(client, world, annotator):
    eval_set, *_ = world
    annotation = claim_via_next(client, annotator, eval_set)
    assert_not_cached(client.get(page_url(annotation)), "annotation page")
    assert_not_cached(client.get(reverse("labeling:my_work")), "my work")
    assert_not_cached(client.get(reverse("home")), "home (the annotator's queues and Next)")


def test_adjudication_pages_and_the_rubric_editor_are_not_cached(client, world, lead):
    eval_set, rv, output, criterion = world
    client.force_login(lead)
    pages = {
        "queues": reverse("labeling:queues"),
        "adjudication queue": reverse("labeling:adjudication_queue")
        + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}",
        "adjudication item": reverse("labeling:adjudicate", args=[output.pk, criterion.pk]),
        "rubric version": reverse("labeling:rubric_version", args=[rv.pk]),
        "rubric editor": reverse("labeling:rubric_edit", args=[rv.pk]),
    }
    for name, url in pages.items():
        assert_not_cached(client.get(url), name)


def test_decision_pages_are_not_cached(client, world, lead):
    eval_set, rv, _, criterion = world
    judge = make_judge("gpt-judge")
    args = [eval_set.pk, rv.pk, judge.pk]
    client.force_login(lead)
    pages = {
        "report (approval and gating forms)": reverse("calibration:report", args=args),
        "drilldown (dispute form)": reverse("calibration:drilldown", args=[*args, criterion.key, "false-pass"]),
        "gates": reverse("calibration:gates"),
        "gate run": reverse("calibration:gate_run"),
    }
    for name, url in pages.items():
        assert_not_cached(client.get(url), name)


def test_a_refused_form_is_not_cached_either(client, world, annotator):
    # A submit refused for missing answers re-renders the page with what the person typed.
    eval_set, *_ = world
    annotation = claim_via_next(client, annotator, eval_set)
    response = client.post(reverse("labeling:submit", args=[annotation.pk]), {})
    assert response.status_code in (200, 400, 409, 422)
    assert "no-store" in response.get("Cache-Control", "")


def test_a_new_gate_tokens_secret_is_not_cached(client, world, lead):
    # The token's secret is shown once, on the page this POST answers: it must not stay in the browser's cache
    # (create_token has said so itself since tokens were made; kept here with the other pages).
    eval_set, rv, *_ = world
    client.force_login(lead)
    response = client.post(
        reverse("calibration:create_token"),
        {"project": "ci", "rubric_version": rv.pk, "scopes": ["gate"], "eval_set_pattern": "*"},
    )
    assert response.status_code == 200 and "no-store" in response.get("Cache-Control", "")
    assert GateToken.objects.count() == 1  # the secret was made and shown


def test_pages_without_state_keep_their_caching(client):
    # The negative control: the login page and the health check are not decorated.
    assert "no-store" not in client.get(reverse("labeling:healthz")).get("Cache-Control", "")
