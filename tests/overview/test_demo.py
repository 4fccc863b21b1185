"""The demo shows every calibration situation honestly, and its README walk ends in a gating decision."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from calibration.models import GateResult, GatingMark
from calibration.report.compose import calibration_report, criterion_tiers
from calibration.stats.metrics import HUMAN_MIN_KAPPA, MIN_N
from evals.models import EvalSet, Output, RubricVersion, User, Workspace
from judging.models import JudgeConfig, JudgeRun
from labeling.models import LabelingQueue
from overview.demo.logins import DEMO_WORKSPACE
from overview.management.commands.load_demo import DEMO_DIR, EVAL_SET, JUDGE, LLM_JUDGE
from tests.factories import default_workspace, make_eval_set

pytestmark = [pytest.mark.slow, pytest.mark.django_db]  # slow: each test loads the whole demo

# Where each demo criterion is meant to land (overview/demo/generate.py says why).
INTENDED_TIERS = {"correct_amount": "gate", "within_policy": "trend", "concise": "unusable", "grounded": "unusable"}
PEOPLE_DISAGREE = "grounded"


@pytest.fixture
def demo():
    call_command("load_demo", verbosity=0, stdout=StringIO())
    es = EvalSet.objects.get(name=EVAL_SET)
    rv = LabelingQueue.objects.get(eval_set=es, is_current=True).rubric_version
    return es, rv, JudgeConfig.objects.get(name=JUDGE)


def report_url(es, rv, judge) -> str:
    return reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])


def test_the_demo_puts_each_criterion_in_its_intended_situation(demo, client):
    es, rv, judge = demo
    assert 300 <= Output.objects.filter(case__eval_set=es).count() <= 400
    rows = {r.criterion: r for r in calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).rows}
    assert {k: r.tier for k, r in rows.items()} == INTENDED_TIERS
    # Home's cheaper path to the tiers lands each criterion in the same place.
    assert criterion_tiers(eval_set=es, rubric_version=rv, judge_config=judge) == INTENDED_TIERS
    assert all(r.judge.n >= MIN_N for r in rows.values())  # no criterion is merely "insufficient"
    # The gate-tier criterion clears the gate threshold with its whole interval, so no warning clouds the walk.
    assert rows["correct_amount"].judge.kappa_ci[0] >= 0.6
    # People disagree on exactly one criterion; on the others the gold is trustworthy.
    assert rows[PEOPLE_DISAGREE].human.kappa < HUMAN_MIN_KAPPA
    assert "humans_disagree" in {w.code for w in rows[PEOPLE_DISAGREE].warnings}
    others = [r for k, r in rows.items() if k != PEOPLE_DISAGREE]
    assert all(r.human.kappa >= HUMAN_MIN_KAPPA for r in others)
    # Maria backs each wrong amount with the policy tool's figure as a second quote: outside the response.
    labels = [json.loads(line) for line in (DEMO_DIR / "labels.jsonl").read_text().splitlines()]
    backed = [x for x in labels if isinstance(x.get("evidence"), list) and x["criterion"] == "correct_amount"]
    assert backed and all(x["annotator"] == "maria" and x["outcome"] == "FAIL" for x in backed)
    assert rows["correct_amount"].human_quotes_outside_response == len(backed)
    assert {k: r.human_quotes_outside_response for k, r in rows.items() if k != "correct_amount"} == dict.fromkeys(
        set(rows) - {"correct_amount"}, 0
    )
    # The lead's page says the same.
    client.force_login(User.objects.get(username="lee"))
    page = client.get(report_url(es, rv, judge)).content.decode()
    for key, tier in INTENDED_TIERS.items():
        row = page.split(f'id="criterion-{key}"', 1)[1].split("</tbody>", 1)[0]
        assert f'class="pill tier-{tier}"' in row, key


def test_the_demo_ships_an_llm_judge_that_reads_an_allowed_key(demo, settings):
    llm = JudgeConfig.objects.get(name=LLM_JUDGE)
    assert llm.backend == "openai" and llm.api_key_env in settings.JUDGE_KEY_VARS


def test_the_readme_walk_reaches_a_gating_decision_without_an_override(demo, client):
    es, rv, judge = demo
    client.force_login(User.objects.get(username="lee"))
    reason = {"reason": "demo walk: the judge agrees with people on refund amounts"}
    client.post(reverse("calibration:approve_rubric", args=[rv.pk]), reason)
    assert RubricVersion.objects.get(pk=rv.pk).status == RubricVersion.Status.APPROVED
    gating = reverse("calibration:mark_gating", args=[es.pk, rv.pk, judge.pk])

    # A negative control: an unusable criterion is refused without an override, and nothing is marked.
    refused = client.post(gating, {**reason, "criterion": "concise"})
    assert "only gate-tier criteria can gate" in refused.content.decode()
    assert not GatingMark.objects.exists()

    client.post(gating, {**reason, "criterion": "correct_amount"})
    mark = GatingMark.objects.get()
    assert (mark.criterion.key, mark.tier, mark.override) == ("correct_amount", "gate", False)


def test_the_readme_walks_gate_fails_the_whole_set_and_the_older_agent_and_passes_the_newer_one(demo, client):
    """The README's numbers, read off `gate --format json` on the demo: correct_amount's corrected lower bound is
    0.81 on all 310 judged outputs, 0.71 for v1.3 (its planted wrong amounts) and 0.88 for v1.4."""
    es, rv, judge = demo
    client.force_login(User.objects.get(username="lee"))
    reason = {"reason": "demo walk: the judge agrees with people on refund amounts"}
    client.post(reverse("calibration:approve_rubric", args=[rv.pk]), reason)
    gating = reverse("calibration:mark_gating", args=[es.pk, rv.pk, judge.pk])
    # The walk decides on the corrected bound, as the README says (new marks decide on an audit by default).
    client.post(
        gating, {**reason, "criterion": "correct_amount", "min_pass_rate": "0.85", "decide_on": "corrected_lower"}
    )
    assert GatingMark.objects.get().min_pass_rate == 0.85

    form = client.get(reverse("calibration:gate_run")).content.decode()
    assert '<option value="v1.3">v1.3</option>' in form and '<option value="v1.4">v1.4</option>' in form

    def gate(agent_version: str) -> str:
        asked = {"eval_set": es.pk, "rubric_version": rv.pk, "judge_config": judge.pk, "agent_version": agent_version}
        response = client.post(reverse("calibration:gate_run"), asked)
        assert response.status_code == 302, response.content.decode()[:2000]
        return GateResult.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1])).decision

    assert gate("") == GateResult.Decision.FAILED
    assert gate("v1.3") == GateResult.Decision.FAILED
    assert gate("v1.4") == GateResult.Decision.PASSED
    # A version typed by hand that has no outputs is refused by the form, and nothing is recorded.
    before = GateResult.objects.count()
    typed = {"eval_set": es.pk, "rubric_version": rv.pk, "judge_config": judge.pk, "agent_version": "v9"}
    refused = client.post(reverse("calibration:gate_run"), typed)
    assert refused.status_code == 422 and "Choose an agent version that has outputs." in refused.content.decode()
    assert GateResult.objects.count() == before


def test_the_demo_loads_without_its_llm_judge_where_the_key_allowlist_leaves_its_variable_out(settings):
    settings.JUDGE_KEY_VARS = ["SOME_OTHER_KEY"]
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert f"Judge {LLM_JUDGE} not added" in out.getvalue() and "OPENAI_API_KEY" in out.getvalue()
    assert not JudgeConfig.objects.filter(name=LLM_JUDGE).exists()
    assert JudgeConfig.objects.filter(name=JUDGE).exists()
    assert Output.objects.filter(case__eval_set__workspace__slug=DEMO_WORKSPACE).count() == 360


def test_an_earlier_demos_database_is_refused_with_what_to_do_and_nothing_imported(tmp_path):
    earlier = tmp_path / "rubric.yaml"
    earlier.write_text(
        'name: refund-support\nversion: "1"\ninstruction: An earlier demo.\ncriteria:\n'
        "  - key: next_step\n    definition: The reply says what happens next.\n"
    )
    call_command("add_workspace", DEMO_WORKSPACE, stdout=StringIO())
    call_command("import_rubric", str(earlier), stdout=StringIO())
    with pytest.raises(CommandError, match="earlier Icewater demo.*fresh database.*Nothing was imported"):
        call_command("load_demo", stdout=StringIO())
    assert not EvalSet.objects.exists() and not JudgeConfig.objects.exists()


def test_a_demo_loaded_before_workspaces_is_refused_with_what_to_do_and_nothing_imported():
    # What the migration made of a demo loaded before workspaces: its rows in the workspace `default`.
    make_eval_set(EVAL_SET, workspace=default_workspace())
    with pytest.raises(CommandError, match="demo from before workspaces.*fresh database.*Nothing was imported"):
        call_command("load_demo", stdout=StringIO())
    assert EvalSet.objects.count() == 1 and not Workspace.objects.filter(slug=DEMO_WORKSPACE).exists()
    # Negative control: once the workspace refund-support exists, the demo loads there, beside the other
    # workspace's eval set of the same name.
    call_command("add_workspace", DEMO_WORKSPACE, stdout=StringIO())
    call_command("load_demo", verbosity=0, stdout=StringIO())
    assert EvalSet.objects.filter(name=EVAL_SET).count() == 2


def test_loading_the_demo_again_adds_nothing_and_says_so():
    # `make run` on a data folder that has the demo: it used to print "Demo loaded" and judge the demo again.
    first, again = StringIO(), StringIO()
    call_command("load_demo", stdout=first)
    runs = list(JudgeRun.objects.values_list("pk", flat=True))
    call_command("load_demo", stdout=again)
    assert "Demo loaded: workspace refund-support: eval set refund-support-demo" in first.getvalue()
    assert "Demo already loaded, nothing added: workspace refund-support: eval set" in again.getvalue()
    assert "Demo loaded:" not in again.getvalue()
    assert list(JudgeRun.objects.values_list("pk", flat=True)) == runs
