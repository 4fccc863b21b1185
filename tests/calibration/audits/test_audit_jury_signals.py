"""The jury predictor's signals as a plan reads them (calibration/audits/plan_outputs.vote_shares): each judge
config's vote share from its own current samples, None where it has no usable one."""

from __future__ import annotations

import pytest

from calibration.audits.plan_outputs import jury_signals, vote_shares
from calibration.data import frames
from calibration.stats.audit_predictor import jury_decision, predictor
from evals.models import Criterion
from labeling import label_frames
from tests.audit_helpers import KEY, candidate, in_order, plan_on
from tests.factories import add_verdict, make_eval_set, make_judge, make_output, make_rubric_version, make_run

pytestmark = pytest.mark.django_db


def test_each_configs_signal_is_the_pass_share_of_its_own_current_samples():
    eval_set, rubric = make_eval_set(), make_rubric_version()
    criterion = Criterion.objects.filter(rubric_version=rubric).order_by("order").first()
    assert criterion is not None
    key = criterion.key
    sampled, other = make_judge("sampled"), make_judge("other")
    one, two, three = (make_output(eval_set, case_id=f"c{i}") for i in range(3))
    old = make_run(eval_set, rubric, sampled)
    for sample, outcome in enumerate(["PASS", "PASS", "FAIL"]):
        add_verdict(old, one, key, outcome, sample=sample)
    add_verdict(old, two, key, "ERROR")
    add_verdict(old, three, key, "PASS")
    # A newer run re-judged sample 0 of the first output: its sample replaces the old run's.
    add_verdict(make_run(eval_set, rubric, sampled), one, key, "FAIL", sample=0)
    add_verdict(make_run(eval_set, rubric, other), one, key, "PASS")
    scope = label_frames.Scope(eval_set, rubric)
    ids = [one.pk, two.pk, three.pk]

    shares = vote_shares(frames.load_verdicts(scope, sampled), criterion.pk, ids)
    assert shares == pytest.approx([1 / 3, None, 1.0])  # FAIL, PASS, FAIL; an ERROR is no vote
    others = vote_shares(frames.load_verdicts(scope, other), criterion.pk, ids)
    assert others == [1.0, None, None]  # never the first config's verdicts
    p = predictor({"sampled": shares, "other": others})
    assert p.scores[:, 1].tolist() == [1.0, 1.0, 1.0] and p.missing == (1, 2)


def test_a_plans_jury_signals_come_in_order_position_one_per_config_and_feed_a_decision():
    c = candidate(n=6, judge_says="PASS")
    plan = plan_on(c)
    outputs = in_order(plan)
    second = make_judge("instrument")
    run = make_run(c.eval_set, c.rubric_version, second, agent_version="default")
    for i, output in enumerate(outputs[:4]):  # the instrument judged four, FAIL on the odd positions
        add_verdict(run, output, KEY, "FAIL" if i % 2 else "PASS")
    ids = [o.pk for o in outputs]
    signals = jury_signals(plan, [c.judge, second], ids)
    assert signals == {c.judge.name: [1.0] * 6, "instrument": [1.0, 0.0, 1.0, 0.0, None, None]}
    p = predictor(signals)
    decision = jury_decision(gold=[1, 0, 1], f=p.scores, minimum=0.5, min_gold=1)
    assert decision.n_gold == 3 and decision.N == 6
