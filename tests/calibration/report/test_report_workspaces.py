"""The report's pages in two workspaces (issue 36): alpha and beta hold the same things under the same names
(tests/workspace_helpers.build). Alpha's people asking with beta's ids get exactly the answer a missing id
gets; alpha's lists, counts and choices hold none of beta's rows; a role is the role in the workspace in use;
and the figures' cache never answers one workspace with the other's figures."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.urls import reverse

from calibration.report.compose import calibration_report
from evals.models import EvalSet, Role
from evals.workspaces import workspace_id_of
from labeling.models import GoldDispute
from tests.factories import bulk_calibration, make_eval_set, make_judge, make_rubric_version, make_workspace, set_role
from tests.workspace_helpers import KEY, build, same_answer

pytestmark = pytest.mark.django_db

MISSING = 987654321


@pytest.fixture
def worlds():
    return build("alpha"), build("beta")


def _report_urls(ids: dict) -> dict[str, str]:
    instrument = [ids["eval_set"], ids["rubric_version"], ids["judge"]]
    return {
        "report": reverse("calibration:report", args=instrument),
        "json": reverse("calibration:export", args=[*instrument, "json"]),
        "csv": reverse("calibration:export", args=[*instrument, "csv"]),
        "drilldown": reverse("calibration:drilldown", args=[*instrument, KEY, "false-pass"]),
        "annotators": reverse("calibration:annotator_agreement", args=instrument[:2]),
    }


def test_beta_s_ids_in_a_report_s_address_answer_as_missing_ones(client, worlds):
    alpha, beta = worlds
    missing = {k: MISSING for k in beta.ids}
    for role in (Role.REVIEWER, Role.LEAD):
        client.force_login(alpha.people[role])
        for part in ("eval_set", "rubric_version", "judge"):
            # One of beta's ids among alpha's own, and a missing one in its place.
            foreign = _report_urls(alpha.ids | {part: beta.ids[part]})
            gone = _report_urls(alpha.ids | {part: MISSING})
            for name, url in foreign.items():
                if part == "judge" and name == "annotators":
                    continue  # the annotators' page names no judge
                first, second = client.get(url), client.get(gone[name])
                assert first.status_code == 404, (role, part, name)
                assert same_answer(first, second), (role, part, name)
        for name, url in _report_urls(beta.ids).items():
            assert same_answer(client.get(url), client.get(_report_urls(missing)[name])), (role, name)
    # Negative control: alpha's own ids open every page.
    for name, url in _report_urls(alpha.ids).items():
        assert client.get(url).status_code == 200, name


def test_a_dispute_naming_beta_s_output_is_refused_as_a_missing_one(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    url = reverse(
        "calibration:dispute_gold",
        args=[alpha.ids["eval_set"], alpha.ids["rubric_version"], alpha.ids["judge"], KEY, "false-pass"],
    )
    answers = [
        client.post(url, {"output": output, "reason": "looks wrong", "gold_revision": 0})
        for output in (beta.ids["output"], MISSING)
    ]
    assert answers[0].status_code == 404 and same_answer(*answers)
    assert not GoldDispute.objects.exists()
    # And on beta's drilldown with beta's output: the drilldown itself is missing for alpha's lead.
    beta_url = reverse(
        "calibration:dispute_gold",
        args=[beta.ids["eval_set"], beta.ids["rubric_version"], beta.ids["judge"], KEY, "false-pass"],
    )
    missing_url = reverse("calibration:dispute_gold", args=[MISSING, MISSING, MISSING, KEY, "false-pass"])
    data = {"output": beta.ids["output"], "reason": "looks wrong"}
    assert same_answer(client.post(beta_url, data), client.post(missing_url, data))
    assert not GoldDispute.objects.exists()


def test_the_overview_lists_only_the_workspace_s_instruments_and_versions(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    page = client.get(reverse("calibration:index"))
    assert page.status_code == 200
    grids = page.context["grids"]
    assert {g.eval_set.workspace_id for g in grids} == {alpha.workspace.pk}
    assert {c.judge_config.pk for g in grids for c in g.columns} == {alpha.ids["judge"]}
    assert [v.pk for v in page.context["versions"]] == [alpha.ids["rubric_version"]]
    form = page.context["form"]
    for name in ("eval_set", "left_rubric", "left_judge", "right_rubric", "right_judge"):
        choices = list(form.fields[name].queryset)
        assert choices and {workspace_id_of(c) for c in choices} == {alpha.workspace.pk}, name
    assert set(form.fields["eval_set"].queryset) == set(EvalSet.objects.filter(workspace=alpha.workspace))
    assert beta.only_name not in page.content.decode()
    # As beta's lead, the mirror image (a negative control of the scoping: it is per request, not fixed).
    client.force_login(beta.people[Role.LEAD])
    page = client.get(reverse("calibration:index"))
    assert [v.pk for v in page.context["versions"]] == [beta.ids["rubric_version"]]


def test_compare_with_beta_s_ids_answers_as_with_missing_ones(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    a = alpha.ids
    base = {
        "eval_set": a["eval_set"],
        "left_rubric": a["rubric_version"],
        "left_judge": a["judge"],
        "right_rubric": a["rubric_version"],
        "right_judge": a["judge"],
    }
    for field, kind in (("eval_set", "eval_set"), ("right_rubric", "rubric_version"), ("right_judge", "judge")):
        foreign = client.get(reverse("calibration:compare"), base | {field: beta.ids[kind]})
        missing = client.get(reverse("calibration:compare"), base | {field: MISSING})
        assert foreign.status_code == 200 and same_answer(foreign, missing), field
        assert field in foreign.context["form"].errors
        assert not foreign.context["sides"]


def test_a_lead_in_beta_who_annotates_in_alpha_gets_no_report_in_alpha(client, worlds):
    alpha, beta = worlds
    person = beta.people[Role.LEAD]
    set_role(person, Role.ANNOTATOR, alpha.workspace)
    client.force_login(person)
    in_alpha = {name: url + "?workspace=alpha" for name, url in _report_urls(alpha.ids).items()}
    in_alpha["index"] = reverse("calibration:index") + "?workspace=alpha"
    for name, url in in_alpha.items():
        assert client.get(url).status_code == 403, name
    # The same person in beta, where they lead: every page opens (the role is the workspace's, not the person's).
    assert client.get(reverse("calibration:index") + "?workspace=beta").status_code == 200
    for name, url in _report_urls(beta.ids).items():
        assert client.get(url).status_code == 200, name


def test_the_figures_cache_never_answers_one_workspace_with_another_s_figures():
    """Same names everywhere, different gold: each workspace's report is its own, whichever was cached first."""
    cells = {"alpha": (20, 2, 3, 15), "beta": (5, 9, 9, 5)}
    instruments = {}
    for slug in cells:
        ws = make_workspace(slug)
        rv = make_rubric_version("refund", workspace=ws)
        es, jc = make_eval_set("cal", workspace=ws), make_judge("gpt-judge", workspace=ws)
        bulk_calibration(es, rv, jc, {KEY: cells[slug]})
        instruments[slug] = {"eval_set": es, "rubric_version": rv, "judge_config": jc}

    def row(slug):
        return calibration_report(**instruments[slug]).row(KEY)

    caches["default"].clear()
    alone = {slug: row(slug) for slug in cells}  # each computed on its own, then cached
    for first, second in (("beta", "alpha"), ("alpha", "beta")):
        caches["default"].clear()
        row(first)
        assert repr(row(second)) == repr(alone[second])
    tp, fp, fn, tn = cells["alpha"]
    assert alone["alpha"].judge.n == tp + fp + fn + tn
    assert alone["alpha"].judge.kappa != alone["beta"].judge.kappa  # the two really differ: the check can fail
