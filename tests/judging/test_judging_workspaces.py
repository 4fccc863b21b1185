"""The judge and probe pages keep workspaces apart (issue #36): another workspace's run, verdict, config and probe
run answer as missing ones; the lists and the start forms hold one workspace's rows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Role
from judging.models import JudgeConfig, JudgeRun
from tests.factories import set_role
from tests.judging_helpers import CONFIG_FORM
from tests.two_workspaces import JUDGE, MISSING, answer, options, same_as_missing, signed_in

pytestmark = pytest.mark.django_db


def test_every_judge_page_of_another_workspaces_object_answers_as_a_missing_one(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    checks = [
        ("get", "judging:config", [b.judge.pk], False),
        ("get", "judging:run", [b.run.pk], False),
        ("get", "judging:run_progress", [b.run.pk], True),
        ("get", "judging:run_verdicts", [b.run.pk], False),
        ("post", "judging:run_cancel", [b.run.pk], False),
        ("get", "judging:verdict", [b.verdict.pk], False),
        ("get", "judging:probe_run", [b.probe_run.pk], False),
        ("get", "judging:probe_status", [b.probe_run.pk], True),
        ("post", "judging:probe_cancel", [b.probe_run.pk], False),
        ("get", "judging:probe_examples", [b.probe_run.pk, "typos", "correct_amount"], False),
    ]
    for method, name, args, htmx in checks:
        other, missing = reverse(name, args=args), reverse(name, args=[MISSING, *args[1:]])
        status, _ = same_as_missing(client, method, other, missing, htmx=htmx)
        assert status == 404, name
    # Negative control: alpha's own objects open.
    assert client.get(reverse("judging:run", args=[a.run.pk])).status_code == 200
    assert client.get(reverse("judging:verdict", args=[a.verdict.pk])).status_code == 200
    assert client.get(reverse("judging:config", args=[a.judge.pk])).status_code == 200


def test_the_judge_index_lists_and_offers_only_its_workspace(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    body = client.get(reverse("judging:index")).content.decode()
    assert reverse("judging:run", args=[a.run.pk]) in body and reverse("judging:run", args=[b.run.pk]) not in body
    assert options(body, "rubric_version") == {"", str(a.rubric_version.pk)}
    assert str(b.judge.pk) not in options(body, "judge_config")
    probes = client.get(reverse("judging:probes")).content.decode()
    assert reverse("judging:probe_run", args=[a.probe_run.pk]) in probes
    assert reverse("judging:probe_run", args=[b.probe_run.pk]) not in probes


def test_starting_a_run_with_another_workspaces_rubric_or_judge_is_an_invalid_choice(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    before = JudgeRun.objects.count()
    form = {"eval_set": "refund-support", "rubric_version": a.rubric_version.pk, "judge_config": a.judge.pk}
    for field, other in (("rubric_version", b.rubric_version.pk), ("judge_config", b.judge.pk)):
        got = answer(client, "post", reverse("judging:start_run"), {**form, field: other})
        assert got == answer(client, "post", reverse("judging:start_run"), {**form, field: MISSING})
        assert got[0] == 400 and b"Select a valid choice" in got[1]
    assert JudgeRun.objects.count() == before


def test_judge_config_names_are_unique_within_a_workspace_only(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    form = {k: v for k, v in CONFIG_FORM.items() if k != "name"}
    taken = client.post(reverse("judging:config_new"), {**form, "name": JUDGE})  # alpha has one of this name
    assert taken.status_code == 400 and "already has a judge config of this name" in taken.content.decode()
    JudgeConfig.objects.create(name="beta-only", workspace=b.workspace, backend="imported")
    made = client.post(reverse("judging:config_new"), {**form, "name": "beta-only"})
    assert made.status_code == 302, made.content.decode()[-2000:]
    assert JudgeConfig.objects.get(name="beta-only", workspace=a.workspace).created_by == a.lead


def test_a_reviewer_in_one_workspace_and_an_annotator_in_the_other_sees_judges_in_the_first_only(sides):
    a, b = sides
    person = a.reviewer
    set_role(person, Role.ANNOTATOR, b.workspace)
    assert signed_in(person, a.workspace).get(reverse("judging:run", args=[a.run.pk])).status_code == 200
    assert signed_in(person, b.workspace).get(reverse("judging:run", args=[b.run.pk])).status_code == 403
