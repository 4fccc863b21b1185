"""Blind labeling: an annotator never sees another person's labels, the gold label or a judge verdict,
on any page or endpoint, however the URL is tampered with; and only annotators label at all (reviewers and
leads can read verdicts and other people's labels). Roles are checked on the server."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from evals.models import Criterion
from judging.models import JudgeConfig, JudgeRun, Verdict
from labeling.models import Annotation, GoldLabel, Label
from tests.factories import annotate_directly, labeling_setup, make_user
from tests.labeling_helpers import next_url, page_url, save_url, submit_url

pytestmark = pytest.mark.django_db

GOLD_RATIONALE = "zq-gold-rationale-7731 only the reviewer wrote this"
JUDGE_TEXT = "zq-judge-verdict-5519 the judge said so"


@pytest.fixture
def world(annotator, annotator2, reviewer):
    """Output 1: annotator2 submitted (slot A), a gold label exists, a judge gave verdicts.
    Output 2: another annotator submitted. The annotator's Next gives them slot B of output 1."""
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    other = make_user("zq-other-annotator")
    annotate_directly(outputs[0], rv, annotator2, {"correct_amount": ("FAIL", "refund of $40.00")})
    annotate_directly(outputs[1], rv, other, {"correct_amount": ("PASS", "NONE")})
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    GoldLabel.objects.create(
        output=outputs[0], rubric_version=rv, criterion=criterion, outcome="FAIL", decided_by=reviewer,
        rationale=GOLD_RATIONALE,
    )  # fmt: skip
    config = JudgeConfig.objects.create(name="zq-judge", backend="instrument")
    run = JudgeRun.objects.create(eval_set=eval_set, rubric_version=rv, judge_config=config)
    for output in outputs:
        Verdict.objects.create(
            run=run, output=output, rubric_version=rv, criterion=criterion, judge_config=config,
            judge_config_hash=config.content_hash, outcome="FAIL", evidence=JUDGE_TEXT, raw_output=JUDGE_TEXT,
        )  # fmt: skip
    return eval_set, rv, outputs, criterion


def assert_blind(body: str) -> None:
    assert GOLD_RATIONALE not in body
    assert JUDGE_TEXT not in body
    assert "zq-other-annotator" not in body and "ann2" not in body
    assert "hl-a" not in body.replace("mark.hl-a", "") and "hl-b" not in body.replace("mark.hl-b", "")


def test_the_labeling_page_shows_only_my_own_answers(client, annotator, world):
    eval_set, rv, outputs, criterion = world
    client.force_login(annotator)
    client.post(next_url(eval_set))
    mine = Annotation.objects.get(annotator=annotator)
    assert (mine.output, mine.slot) == (outputs[0], 2)  # the output annotator2 labeled
    page = client.get(page_url(mine)).content.decode()
    assert_blind(page)
    assert " checked" not in page  # the other annotators' FAIL and PASS are nowhere
    assert "Not answered yet." in page


def test_the_save_partial_and_my_work_show_only_my_own_answers(client, annotator, world):
    eval_set, rv, outputs, criterion = world
    client.force_login(annotator)
    client.post(next_url(eval_set))
    mine = Annotation.objects.get(annotator=annotator)
    data = {"criterion": "next_step", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    r = client.post(save_url(mine), data, HTTP_HX_REQUEST="true")
    assert r.status_code == 200  # a refused save would pass the blind check without showing anything
    assert 'id="criterion-next_step"' in r.content.decode() and "Saved" in r.content.decode()
    assert Label.objects.get(annotation=mine).outcome == "PASS"
    assert_blind(r.content.decode())
    for name in ("labeling:my_work", "home"):
        assert_blind(client.get(reverse(name)).content.decode())


def test_an_annotator_cannot_open_another_persons_annotation(client, annotator, annotator2, world):
    eval_set, rv, outputs, criterion = world
    theirs = Annotation.objects.get(annotator=annotator2)
    client.force_login(annotator)
    for response in (
        client.get(page_url(theirs)),
        client.get(page_url(theirs) + "?correct=1"),
        client.post(save_url(theirs), {"criterion": "correct_amount", "outcome": "PASS", "rubric_version": rv.pk}),
        client.post(submit_url(theirs), {"rubric_version": rv.pk}),
    ):
        assert response.status_code == 404
        assert_blind(response.content.decode())
    assert list(Label.objects.filter(annotation=theirs).values_list("outcome", flat=True)) == ["FAIL"]


def test_not_even_a_lead_reads_someone_elses_annotation_through_the_labeling_page(client, lead, annotator2, world):
    theirs = Annotation.objects.get(annotator=annotator2)
    client.force_login(lead)
    response = client.get(page_url(theirs))
    assert response.status_code == 403  # labeling pages are for annotators; the 404 below is for other annotators
    assert "FAIL" not in response.content.decode() and "refund of $40.00" not in response.content.decode()


def test_one_annotators_draft_never_reaches_the_second_annotators_page(client, annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    first = Annotation.objects.get(annotator=annotator)
    data = {"criterion": "next_step", "outcome": "FAIL", "evidence": "within 5 business days", "rubric_version": rv.pk}
    assert client.post(save_url(first), data, HTTP_HX_REQUEST="true").status_code == 200
    assert 'data-saved="within 5 business days"' in client.get(page_url(first)).content.decode()  # its author's

    other = Client(enforce_csrf_checks=True)
    other.force_login(annotator2)
    other.post(next_url(eval_set), {"csrfmiddlewaretoken": csrf_token_of(other)})
    second = Annotation.objects.get(annotator=annotator2)
    assert (second.output, second.slot) == (output, 2)
    page = other.get(page_url(second)).content.decode()
    assert " checked" not in page and 'data-saved-outcome="FAIL"' not in page
    assert "within 5 business days</textarea>" not in page and 'data-saved="within' not in page
    assert save_url(first) not in page

    # The page's CSRF token is one the server accepts for this session, and a post without it is refused.
    answer = {"criterion": "correct_amount", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    assert other.post(save_url(second), answer).status_code == 403
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert other.post(save_url(second), {**answer, "csrfmiddlewaretoken": token}).status_code == 302
    assert Label.objects.get(annotation=second).outcome == "PASS"
    assert Label.objects.get(annotation=first).evidence == "within 5 business days"


def csrf_token_of(client: Client) -> str:
    page = client.get(reverse("home")).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


# --- Only annotators label (the blind rule per person) -------------------------------------------


@pytest.fixture(params=["reviewer", "lead", "superuser"])
def staff_member(request, reviewer, lead):
    if request.param == "superuser":  # an annotator by role, but a superuser sees everything
        return make_superuser()
    return {"reviewer": reviewer, "lead": lead}[request.param]


def make_superuser():
    user = make_user("zq-admin")
    user.is_superuser = user.is_staff = True
    user.save()
    return user


def test_reviewers_and_leads_pressing_next_get_no_annotation(client, annotator, staff_member, world):
    eval_set, rv, outputs, criterion = world
    before = Annotation.objects.count()
    client.force_login(staff_member)
    response = client.post(next_url(eval_set))
    assert response.status_code == 403
    assert "Only annotators label" in response.content.decode()
    assert Annotation.objects.count() == before
    assert not Annotation.objects.filter(annotator=staff_member).exists()
    client.force_login(annotator)  # negative control: an annotator's Next reserves a slot
    assert client.post(next_url(eval_set)).status_code == 302
    assert Annotation.objects.filter(annotator=annotator).count() == 1


def test_reviewers_and_leads_cannot_open_save_or_submit_even_their_own_annotation(client, staff_member, world):
    eval_set, rv, outputs, criterion = world
    # E.g. a draft from before they were made a reviewer or lead.
    mine = annotate_directly(outputs[1], rv, staff_member, {"correct_amount": ("PASS", "NONE")}, submit=False)
    client.force_login(staff_member)
    data = {"criterion": "next_step", "outcome": "FAIL", "evidence": "NONE", "rubric_version": rv.pk}
    for response in (
        client.get(page_url(mine)),
        client.get(page_url(mine) + "?correct=1"),
        client.post(save_url(mine), data),
        client.post(save_url(mine), data, HTTP_HX_REQUEST="true"),
        client.post(submit_url(mine), {"rubric_version": rv.pk}),
        client.get(reverse("labeling:my_work")),
    ):
        assert response.status_code == 403
    assert list(Label.objects.filter(annotation=mine).values_list("criterion__key", flat=True)) == ["correct_amount"]
    mine.refresh_from_db()
    assert mine.status == Annotation.Status.DRAFT
    # Negative control: made an annotator again, the same person may (a lead's decision, see docs/labeling.md).
    type(staff_member).objects.filter(pk=staff_member.pk).update(role="annotator", is_superuser=False)
    assert client.post(save_url(mine), data).status_code == 302
    assert Label.objects.filter(annotation=mine).count() == 2


def test_the_menus_offer_labeling_to_annotators_only(client, annotator, staff_member, world):
    client.force_login(staff_member)
    page = client.get(reverse("home")).content.decode()
    assert ">Next</button>" not in page and ">My work</a>" not in page
    assert "Labeling is for annotators" in page
    client.force_login(annotator)
    page = client.get(reverse("home")).content.decode()
    assert ">Next</button>" in page and ">My work</a>" in page


def test_an_annotator_is_refused_every_staff_page(client, annotator, world):
    eval_set, rv, outputs, criterion = world
    client.force_login(annotator)
    adjudicate = reverse("labeling:adjudicate", args=[outputs[0].pk, criterion.pk])
    for response in (
        client.get(reverse("labeling:adjudication_queue")),
        client.get(reverse("labeling:adjudication_queue") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}"),
        client.get(adjudicate),
        client.post(adjudicate, {"outcome": "PASS", "rationale": "x", "based_on": 1}),
        client.get(reverse("overview:progress")),
        client.get(reverse("overview:progress") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}"),
        client.get(reverse("labeling:queues")),
        client.post(reverse("labeling:queue_move", args=[eval_set.pk]), {"rubric_version": rv.pk}),
    ):
        assert response.status_code == 403
        assert_blind(response.content.decode())
    assert GoldLabel.objects.get().outcome == "FAIL"


def _patterns(resolver: URLResolver, prefix: str = ""):
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p


def _fill(route: str, ids: dict[str, int]) -> str:
    """A concrete path for a route like 'judging/runs/<int:run_id>/': every id an object that exists."""
    import re

    def value(match: re.Match) -> str:
        converter, name = match.group(1) or "str", match.group(2)
        if converter == "int":
            return str(ids.get(name, ids["default"]))
        return "x"

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


def test_judge_and_calibration_pages_are_closed_to_annotators(client, annotator, world):
    """Whatever judging/ and calibration/ grow, an annotator gets no page of theirs (they show verdicts)."""
    eval_set, rv, outputs, criterion = world
    verdict = Verdict.objects.first()
    ids = {
        "run_id": verdict.run_id,
        "verdict_id": verdict.pk,
        "config_id": verdict.judge_config_id,
        "eval_set_id": eval_set.pk,
        "eval_set": eval_set.pk,
        "rubric_version_id": rv.pk,
        "rubric_version": rv.pk,
        "judge": verdict.judge_config_id,
        "output_id": outputs[0].pk,
        "criterion_id": criterion.pk,
        "default": verdict.pk,
    }
    routes = [(r, p) for r, p in _patterns(get_resolver()) if r.startswith(("judging/", "calibration/"))]
    assert routes, "no judging/ or calibration/ pages found: this test would prove nothing"
    client.force_login(annotator)
    opened = []
    for route, _ in routes:
        for method in (client.get, client.post):
            response = method(_fill(route, ids))
            body = response.content.decode(errors="replace")
            if response.status_code < 300 or JUDGE_TEXT in body or GOLD_RATIONALE in body:
                opened.append((method.__name__, route, response.status_code))
    assert not opened, f"annotators can open: {opened}"
