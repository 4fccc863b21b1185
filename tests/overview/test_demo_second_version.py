"""The demo's second judge version: precedents from the development split move within_policy from the trend
tier to the gate tier on the held-out split, computed by running it (overview/management/commands/load_demo.py)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from calibration.report.compose import rows_on_outputs
from calibration.stats.metrics import tier_for
from evals.models import EvalSet, RubricVersion, Workspace
from judging.gold_splits import look_count, part_outputs, split_for
from judging.models import GoldSplit, JudgeConfig, JudgeRun, Verdict
from overview.demo.logins import DEMO_WORKSPACE
from overview.management.commands.load_demo import EVAL_SET, IMPROVED, JUDGE, JUDGE_V2, RUBRIC

pytestmark = [pytest.mark.slow, pytest.mark.django_db]  # slow: each test loads the whole demo


@pytest.fixture
def demo():
    call_command("load_demo", verbosity=0, stdout=StringIO())
    es, rv = (
        EvalSet.objects.get(name=EVAL_SET),
        RubricVersion.objects.by_ref(RUBRIC, Workspace.objects.get(slug=DEMO_WORKSPACE)),
    )
    return es, rv, split_for(es, rv)


def test_version_2_is_in_the_gate_tier_on_held_out_where_version_1_is_in_the_trend_tier(demo):
    es, rv, split = demo
    v1, v2 = JudgeConfig.objects.get(name=JUDGE), JudgeConfig.objects.get(name=JUDGE_V2)
    assert v2.derived_from == v1 and v2.version == 2
    examples = v2.guidance[IMPROVED]["examples"]
    assert examples and all(e["outcome"] == "FAIL" and e["split"] == GoldSplit.DEVELOPMENT for e in examples)
    assert set(v2.guidance) == {IMPROVED} and not v2.guidance[IMPROVED]["instructions"]
    held_out = frozenset(part_outputs(split, GoldSplit.HELD_OUT))
    assert not held_out & v2.example_output_ids()
    rows = {
        name: {
            r.criterion: r for r in rows_on_outputs(eval_set=es, rubric_version=rv, judge_config=c, output_ids=held_out)
        }
        for name, c in (("v1", v1), ("v2", v2))
    }
    before, after = rows["v1"][IMPROVED], rows["v2"][IMPROVED]
    # By hand, from the cells on the 148 held-out items with gold (n = 148; 131 gold PASS, 17 gold FAIL):
    # v1: TP 123, false passes 7, TF 10, FF 8. po = 133/148 = 0.8986; judge passes 130/148, so
    #     pe = 0.8851 * 0.8784 + 0.1149 * 0.1216 = 0.7915; kappa = (0.8986 - 0.7915) / (1 - 0.7915) = 0.514: trend.
    # v2: TP 123, false passes 1, TF 16, FF 8. po = 139/148 = 0.9392; judge passes 124/148, so
    #     pe = 0.8851 * 0.8378 + 0.1149 * 0.1622 = 0.7602; kappa = (0.9392 - 0.7602) / (1 - 0.7602) = 0.746: gate.
    assert (before.judge.true_pass, before.judge.false_pass, before.judge.true_fail, before.judge.false_fail) == (
        123,
        7,
        10,
        8,
    )
    assert (after.judge.true_pass, after.judge.false_pass, after.judge.true_fail, after.judge.false_fail) == (
        123,
        1,
        16,
        8,
    )
    assert before.judge.kappa == pytest.approx(0.514, abs=0.001) and after.judge.kappa == pytest.approx(
        0.746, abs=0.001
    )
    # The tiers through the report's own decision function, on the same held-out items.
    assert tier_for(before.judge.kappa, before.judge.n) == before.tier == "trend"
    assert tier_for(after.judge.kappa, after.judge.n) == after.tier == "gate"
    assert after.judge.n == before.judge.n
    # Version 2 was run on the held-out split only, through the runner: a verdict per held-out output.
    run = JudgeRun.objects.get(judge_config=v2, split_part=GoldSplit.HELD_OUT)
    assert run.status == JudgeRun.Status.DONE
    assert set(Verdict.objects.filter(run=run).values_list("output_id", flat=True)) == set(held_out)
    # And re-run on development first, as the workbench does before promoting (what its comparison reads).
    assert JudgeRun.objects.get(judge_config=v2, split_part=GoldSplit.DEVELOPMENT).status == JudgeRun.Status.DONE


def test_load_demo_counts_its_promotion_as_one_look_and_a_second_load_adds_nothing(demo):
    es, rv, split = demo
    assert look_count(split) == 1
    assert split.looks.get().via == "demo: promote"
    call_command("load_demo", verbosity=0, stdout=StringIO())
    assert look_count(split) == 1
    assert JudgeConfig.objects.filter(family=JudgeConfig.objects.get(name=JUDGE).family).count() == 2
    assert split_for(es, rv).seed == split.seed
