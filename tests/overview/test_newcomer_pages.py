"""What a newcomer reads and where a page lands, on the demo (issue 25): the decision's words, the overview's
pills, a criterion that already gates, the report after Approve and a drilldown after a dispute landing at the
form or item, the rubric page of a first version, the editor's help, imported judges' hashes, 403 wording.

The demo (about 13 s) is loaded once for the module and committed; each test runs in a transaction that is
rolled back, and the module's end flushes the database as a transactional test leaves it.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evals.models import User
from judging.models import JudgeConfig
from tests.factories import labeling_setup
from tests.labeling_helpers import claim_via_next, save_url, submit_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(module_demo):
    return module_demo


@pytest.fixture
def lee(demo, client):
    client.force_login(User.objects.get(username="lee"))
    return client


def report_url(es, rv, judge) -> str:
    return reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])


def verdict_line(page: str, key: str) -> str:
    return page.split(f'id="verdict-{key}"', 1)[1].split("</li>", 1)[0]


def approve(client, rv) -> None:
    client.post(reverse("calibration:approve_rubric", args=[rv.pk]), {"reason": "the definitions are right"})


@pytest.mark.slow
def test_the_decision_says_a_trend_tier_criterions_interval_and_people_who_disagree_once(demo, lee):
    page = lee.get(report_url(*demo)).content.decode()
    trend = verdict_line(page, "within_policy")
    assert "it is in the trend tier, but its interval&#x27;s lower end" in trend and "is not above 0.4" in trend
    assert "for the trend tier about" not in trend
    people = verdict_line(page, "grounded")
    assert "people disagree with each other (they agree only at mean pairwise kappa" in people
    assert people.count("noisy") == 1 and people.count("definition") == 1
    # One pair of annotators is "1 annotator pair", in the verdict and in the criterion's warning alike.
    assert "over 1 annotator pair)" in people
    assert "1 annotator pairs" not in page


@pytest.mark.slow
def test_the_overview_gives_people_who_disagree_a_pill_of_their_own(demo, lee):
    page = lee.get(reverse("calibration:index")).content.decode()
    rows = {
        key: page.split(f"<td><code>{key}</code></td>", 1)[1].split("</tr>", 1)[0] for key in ("grounded", "concise")
    }
    assert "people-disagree" in rows["grounded"] and "tier-unusable" not in rows["grounded"]
    # Negative control: a criterion the judge is bad at keeps the judge's own "unusable".
    assert 'class="pill tier-unusable"' in rows["concise"] and "people-disagree" not in rows["concise"]


@pytest.mark.slow
def test_a_criterion_that_gates_is_listed_as_gating_not_as_may_gate(demo, lee):
    es, rv, judge = demo
    approve(lee, rv)
    before = lee.get(report_url(*demo)).content.decode()
    assert 'data-answer="may_gate"' in verdict_line(before, "correct_amount") and "May gate now" in before
    gating = reverse("calibration:mark_gating", args=[es.pk, rv.pk, judge.pk])
    lee.post(gating, {"reason": "agrees with people on amounts", "criterion": "correct_amount"})
    after = lee.get(report_url(*demo)).content.decode()
    assert 'data-answer="gating"' in verdict_line(after, "correct_amount")
    assert "<h3>Gates now</h3>" in after and "May gate now" not in after
    assert "1 gates now (correct_amount)" in after


@pytest.mark.slow
def test_approve_on_the_report_lands_back_on_the_approval_panel(demo, lee):
    es, rv, judge = demo
    page = lee.get(report_url(*demo)).content.decode()
    form = page.split('class="approve-form"', 1)[1]
    target = re.search(r'name="next" value="([^"]+)"', form).group(1)
    assert target == report_url(*demo) + "#approval-panel"
    response = lee.post(reverse("calibration:approve_rubric", args=[rv.pk]), {"reason": "fit", "next": target})
    assert response.status_code == 302 and response["Location"] == report_url(*demo) + "#approval-panel"
    assert 'id="approval-panel"' in lee.get(response["Location"]).content.decode()


@pytest.mark.slow
def test_a_dispute_lands_back_on_the_disputed_item(demo, lee):
    es, rv, judge = demo
    drilldown = reverse("calibration:drilldown", args=[es.pk, rv.pk, judge.pk, "concise", "false-fail"])
    page = lee.get(drilldown).content.decode()
    ids = re.findall(r'id="output-(\d+)"', page)
    assert len(ids) >= 2
    second = ids[1]  # not the first item: landing at the top would not show it
    dispute = reverse("calibration:dispute_gold", args=[es.pk, rv.pk, judge.pk, "concise", "false-fail"])
    response = lee.post(dispute, {"output": second, "reason": "the reply is short", "next": drilldown})
    assert response.status_code == 302 and response["Location"] == f"{drilldown}#output-{second}"
    item = lee.get(drilldown).content.decode().split(f'id="output-{second}"', 1)[1].split("</article>", 1)[0]
    assert "data-disputed" in item


@pytest.mark.slow
def test_a_first_rubric_version_shows_its_rubric_not_a_diff(demo, lee):
    _, rv, _ = demo
    page = lee.get(reverse("labeling:rubric_version", args=[rv.pk])).content.decode()
    assert "@@" not in page and "Changes since" not in page
    rubric = page.split('id="rubric"', 1)[1].split("</section>", 1)[0]
    for criterion in rv.criteria.all():
        assert f"<code>{criterion.key}</code>" in rubric
    assert rv.criteria.get(key="correct_amount").definition.split(".")[0] in rubric


@pytest.mark.slow
def test_the_rubric_editor_speaks_of_gold_not_of_source_files(demo, lee):
    _, rv, _ = demo
    page = lee.get(reverse("labeling:rubric_edit", args=[rv.pk])).content.decode()
    assert "labeling/gold.py" not in page and not re.search(r"\b\w+/\w+\.py\b", page)
    assert "become gold when no reviewer decided" in page


@pytest.mark.slow
def test_imported_judges_show_no_content_hash_that_would_read_the_same(demo, lee):
    es, rv, judge = demo
    first = JudgeConfig.objects.create(name="inspect-a", backend=JudgeConfig.Backend.IMPORTED, workspace=es.workspace)
    second = JudgeConfig.objects.create(name="inspect-b", backend=JudgeConfig.Backend.IMPORTED, workspace=es.workspace)
    assert first.content_hash == second.content_hash  # why the pages must not show it
    for config in (first, second):
        report = lee.get(report_url(es, rv, config)).content.decode()
        assert f"#{config.content_hash[:8]}" not in report and ">imported</span>" in report
        detail = lee.get(reverse("judging:config", args=[config.pk])).content.decode()
        assert config.content_hash not in detail
    # A judge Icewater runs shows its hash (the negative control).
    assert f"#{judge.content_hash[:8]}" in lee.get(report_url(*demo)).content.decode()


@pytest.mark.slow
def test_a_judge_without_verdicts_on_a_criterion_is_said_so_on_the_report(demo, lee):
    es, rv, _ = demo
    imported = JudgeConfig.objects.create(
        name="inspect-partial", backend=JudgeConfig.Backend.IMPORTED, workspace=es.workspace
    )
    page = lee.get(report_url(es, rv, imported)).content.decode()
    line = verdict_line(page, "correct_amount")
    assert "this judge has no verdicts for correct_amount" in line and 'data-why="no_verdicts"' in line
    assert "label and judge" not in page


def test_a_page_for_two_roles_names_both_in_the_plural(client, annotator):
    client.force_login(annotator)
    response = client.get(reverse("labeling:adjudication_queue"), headers={"HX-Request": "true"})
    assert response.status_code == 403
    assert "reviewers or leads" in response.content.decode()


def test_submitting_one_of_two_answers_of_a_case_names_which(client, annotator):
    from tests.factories import make_output

    eval_set, rv, (first,) = labeling_setup(n_outputs=1)
    make_output(eval_set, case_id="case-001", agent_version="v2")  # a second answer of the same case
    client.force_login(annotator)
    annotation = claim_via_next(client, annotator, eval_set)
    for criterion in rv.criteria.all():
        client.post(
            save_url(annotation), {"criterion": criterion.key, "rubric_version": rv.pk, "outcome": "NOT_APPLICABLE"}
        )
    response = client.post(submit_url(annotation), {"rubric_version": rv.pk}, follow=True)
    messages = [str(m) for m in response.context["messages"]]
    assert any(re.fullmatch(r"Submitted case-001 · answer [12]\.", m) for m in messages), messages
