"""Re-running a judge version on the development split only, and counting its model calls first (issue 23, item 3's
backend), against the fake LLM server."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from judging import runner
from judging.backends import Misconfigured
from judging.gold_splits import start_split
from judging.guidance import derive_config
from judging.models import GoldSplit, JudgeRun, RunItem
from tests.factories import make_llm_judge
from tests.guidance_helpers import example, gold_set

pytestmark = pytest.mark.django_db

GOLDS = [{"next_step": "PASS"}] * 4 + [{"next_step": "FAIL"}] * 4


def test_a_dev_split_rerun_asks_only_what_the_cache_cannot_answer_and_the_count_says_so_first(
    lead, fake_llm, judge_key
):
    eval_set, rubric, outputs = gold_set(GOLDS)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=8)
    dev = sorted(split.development)
    assert len(dev) == 4 and len(split.held_out) == 4  # two strata of 4: 2 + 2 each way, by hand
    first = next(o for o in outputs if o.pk == dev[0])
    first_gold = GOLDS[outputs.index(first)]["next_step"]
    v2 = derive_config(
        base=make_llm_judge(fake_llm, name="rerun"),
        guidance={"rubric": rubric.ref, "criteria": {"next_step": {"examples": [example(first, first_gold)]}}},
        by=lead,
    )
    scope = runner.Scope(eval_set, rubric, v2)
    # Nothing cached yet: one call per development output (per-output mode, one sample).
    assert runner.planned_calls(scope, dev) == runner.CallCount(items=4, cached=0, instrument_only=0, calls=4)
    # Two development outputs judged already (a run of just them): those two requests are now free.
    done = runner.plan_run(scope, dev[:2], mode=JudgeRun.Mode.IN_PROCESS)
    runner.run_in_process(done)
    assert fake_llm.calls == 2
    count = runner.planned_calls(scope, runner.split_outputs_in(scope, GoldSplit.DEVELOPMENT))
    assert (count.items, count.cached, count.calls) == (4, 2, 2)

    run = runner.create_split_run(scope, part=GoldSplit.DEVELOPMENT, mode=JudgeRun.Mode.IN_PROCESS)
    runner.run_in_process(run)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE and run.split_part == GoldSplit.DEVELOPMENT
    assert sorted(run.items.values_list("output_id", flat=True)) == dev
    assert fake_llm.calls == 2 + count.calls
    assert run.items.aggregate(n=Sum("model_calls"))["n"] == count.calls
    assert run.items.filter(cache_hit=True).count() == count.cached
    # Held-out outputs were never asked about.
    assert not RunItem.objects.filter(run__judge_config=v2, output_id__in=split.held_out).exists()


def test_a_split_run_needs_a_split(lead):
    eval_set, rubric, _ = gold_set(GOLDS)
    scope = runner.Scope(eval_set, rubric, make_llm_judge(name="nosplit"))
    with pytest.raises(Misconfigured, match="has no gold split"):
        runner.create_split_run(scope, part=GoldSplit.DEVELOPMENT, mode=JudgeRun.Mode.IN_PROCESS, check_api_key=False)
    start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=1)
    with pytest.raises(Misconfigured, match="unknown split part"):
        runner.split_outputs_in(scope, "test")
    assert not JudgeRun.objects.exists()


def test_run_judge_split_development_judges_only_that_part(lead, fake_llm, judge_key):
    from io import StringIO

    from django.core.management import call_command

    eval_set, rubric, _ = gold_set(GOLDS)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=2)
    make_llm_judge(fake_llm, name="cli-run")
    call_command(
        "run_judge",
        "--eval-set",
        eval_set.name,
        "--rubric",
        rubric.ref,
        "--judge",
        "cli-run",
        "--split",
        "development",
        "--in-process",
        stdout=StringIO(),
    )
    run = JudgeRun.objects.get()
    assert run.split_part == "development" and run.status == JudgeRun.Status.DONE
    assert sorted(run.items.values_list("output_id", flat=True)) == sorted(split.development)
    assert fake_llm.calls == len(split.development) == 4
