"""The judge workbench in two workspaces (issue 36): alpha's lead cannot compare, run, promote or edit the
guidance of beta's judge versions, nor take an example from beta's outputs; each such request answers as one
naming a missing object, and nothing is written."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Role
from judging.models import JudgeConfig, JudgeRun
from tests.factories import set_role
from tests.workspace_helpers import KEY, build, same_answer, unmasked

pytestmark = pytest.mark.django_db

MISSING = 987654321
PARTS = ("judge", "eval_set", "rubric_version")


@pytest.fixture
def worlds():
    return build("alpha"), build("beta")


def _version_urls(ids: dict) -> dict[str, str]:
    args = [ids[p] for p in PARTS]
    return {
        "version": reverse("calibration:workbench_version", args=args),
        "run": reverse("calibration:workbench_run", args=[*args, "development"]),
        "edit": reverse("calibration:guidance_edit", args=[*args, KEY]),
    }


def test_beta_s_ids_in_a_workbench_address_answer_as_missing_ones(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    runs = JudgeRun.objects.count()
    for part in PARTS:
        foreign, gone = _version_urls(alpha.ids | {part: beta.ids[part]}), _version_urls(alpha.ids | {part: MISSING})
        for name in foreign:
            for method in ("get", "post"):
                first = getattr(client, method)(foreign[name], {"action": "start"})
                second = getattr(client, method)(gone[name], {"action": "start"})
                assert same_answer(first, second), (part, name, method)
                assert first.status_code in (404, 405), (part, name, method)
    assert JudgeRun.objects.count() == runs
    # Negative control: alpha's own version's workbench and editor open.
    for name in ("version", "edit"):
        assert client.get(_version_urls(alpha.ids)[name]).status_code == 200, name


def test_comparing_with_beta_s_versions_answers_as_with_missing_ones(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    base = {"eval_set": alpha.ids["eval_set"], "rubric_version": alpha.ids["rubric_version"], "b": alpha.ids["judge"]}
    for field, kind in (("eval_set", "eval_set"), ("rubric_version", "rubric_version"), ("a", "judge"), ("b", "judge")):
        for name, method in (("calibration:version_compare", "get"), ("calibration:version_compare_held_out", "post")):
            call = getattr(client, method)
            foreign = call(reverse(name), base | {field: beta.ids[kind]})
            missing = call(reverse(name), base | {field: MISSING})
            assert foreign.status_code == 422 and same_answer(foreign, missing), (field, name)
            assert field in foreign.context["form"].errors
    page = client.get(reverse("calibration:version_compare"))
    form = page.context["form"]
    for name in ("a", "b"):
        assert set(form.fields[name].queryset.values_list("pk", flat=True)) == {alpha.ids["judge"]}
    assert beta.only_name not in page.content.decode()


def test_an_example_from_beta_s_output_is_refused_as_a_missing_output(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    versions = JudgeConfig.objects.count()

    def save(output_id: int):
        data = {
            "action": "save",
            "instructions": "Check the amount against the order.",
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "0",
            "form-0-output_id": str(output_id),
            "form-0-outcome": "PASS",
            "form-0-quote": "refund",
            "form-0-response": "Your refund is on its way.",
        }
        answer = client.post(_version_urls(alpha.ids)["edit"], data)
        # The answer names the id it was given: compare the two with each id in its place.
        return answer, unmasked(answer.content).replace(str(output_id).encode(), b"<ID>")

    (foreign, foreign_body), (missing, missing_body) = save(beta.ids["output"]), save(MISSING)
    assert foreign.status_code == missing.status_code == 422
    assert foreign_body == missing_body
    said = f"criteria.{KEY}.examples[0].output_id: there is no output"
    assert foreign.context["error"] == f"{said} {beta.ids['output']}"
    assert missing.context["error"] == f"{said} {MISSING}"
    assert JudgeConfig.objects.count() == versions
    # Negative control: alpha's own output passes this check (and is refused later for its own reason).
    own, _ = save(alpha.ids["output"])
    assert "there is no output" not in own.context["error"]


def test_a_lead_in_beta_who_annotates_in_alpha_cannot_open_alpha_s_workbench(client, worlds):
    alpha, beta = worlds
    person = beta.people[Role.LEAD]
    set_role(person, Role.ANNOTATOR, alpha.workspace)
    client.force_login(person)
    assert client.get(reverse("calibration:version_compare") + "?workspace=alpha").status_code == 403
    for name, url in _version_urls(alpha.ids).items():
        assert client.get(url).status_code in (403, 405), name
    assert client.get(reverse("calibration:version_compare") + "?workspace=beta").status_code == 200
    assert client.get(_version_urls(beta.ids)["version"]).status_code == 200
