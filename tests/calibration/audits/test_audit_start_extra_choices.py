"""The start form lists as extra judge configs (the jury) only this workspace's configs with verdicts of a criterion
that gates here (issue 38 item 1): the eval set and criterion are chosen on the same page, so the finer rule (verdicts
of that criterion on that candidate) stays the server's, refused with its own words; one query lists them, however
many configs and verdicts."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.models import AuditPlan, GatingMark
from tests.audit_helpers import KEY, candidate
from tests.factories import add_verdict, bulk_verdicts, make_eval_set, make_judge, make_run, make_workspace

pytestmark = pytest.mark.django_db
START = reverse("calibration:audit_plan_start")
OTHER = "next_step"  # the rubric's second criterion: it does not gate


def judged(c, name: str, key: str = KEY, eval_set=None, workspace=None):
    """A config with a verdict of `key` on the candidate's first output (or on `eval_set`'s)."""
    jc = make_judge(name, **({"workspace": workspace} if workspace else {}))
    target = eval_set or c.eval_set
    run = make_run(target, c.rubric_version, jc, agent_version="default")
    output = c.outputs[0] if eval_set is None else target.cases.first().outputs.first()
    add_verdict(run, output, key, "PASS")
    return jc


def listed(body: str) -> list[str]:
    start = body.index('id="audit-extra-judges"')
    select = body[start : body.index("</select>", start)]
    return re.findall(r"<option value=\"\d+\"[^>]*>([^<]+)</option>", select)


def test_only_configs_with_verdicts_of_a_gating_criterion_are_listed(client):
    c = candidate(n=6)
    judged(c, "instrument")
    judged(c, "other-criterion", key=OTHER)  # verdicts, but of a criterion that does not gate: not listed
    make_judge("idle")  # no verdicts at all: not listed
    judged(c, "outside", workspace=make_workspace())  # another workspace's: never listed
    client.force_login(c.lead)
    # The plan's own judge has verdicts of the gating criterion too: listed (the server refuses it by name).
    assert listed(client.get(START).content.decode()) == ["gpt-judge", "instrument"]


def test_a_listed_config_without_verdicts_on_the_chosen_candidate_is_refused_by_the_server_s_words(client):
    c = candidate(n=6)
    elsewhere = make_eval_set("rc-0")
    bulk_verdicts(elsewhere, c.rubric_version, c.judge, {KEY: {"PASS": 2}})
    only_elsewhere = judged(c, "elsewhere", eval_set=elsewhere)
    client.force_login(c.lead)
    assert "elsewhere" in listed(client.get(START).content.decode())
    form = {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, "extra_judges": [only_elsewhere.pk]}
    response = client.post(START, form)
    body = response.content.decode()
    assert response.status_code == 422 and "elsewhere has no verdicts of correct_amount" in body, body[:2000]
    assert not AuditPlan.objects.exists()
    assert f'<option value="{only_elsewhere.pk}" selected>' in body  # the lead's pick stays picked


def test_a_config_not_listed_is_still_refused_with_clear_words_not_as_invalid(client):
    c = candidate(n=6)
    idle = make_judge("idle")
    client.force_login(c.lead)
    form = {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, "extra_judges": [idle.pk]}
    body = client.post(START, form).content.decode()
    assert "idle has no verdicts of correct_amount" in body and "Choose judge configs" not in body


def test_the_start_page_lists_them_in_as_many_queries_however_many_configs(client):
    c = candidate(n=6)
    client.force_login(c.lead)

    def count() -> int:
        client.get(START)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(START).status_code == 200
        return len(queries)

    judged(c, "a")
    one = count()
    for name in ("b", "c", "d", "e"):
        judged(c, name)
    make_judge("idle")
    assert count() == one
