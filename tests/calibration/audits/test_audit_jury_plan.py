"""A plan's jury predictor (issue 38 item 1): chosen at the start, frozen, read by the uniform design's tests.

Expected values come from the stats module called directly on signals written out by hand (calibration/stats/
audit_predictor.py, itself checked by exact enumeration and against statsmodels); the plan must give exactly that.
"""

from __future__ import annotations

import importlib
import math

import pytest

from calibration.audits.figures import FORECAST_SEED, forecast_sims, plan_figures, read_plan
from calibration.audits.plans import AuditPlanError, start_plan
from calibration.models import AuditPlan, AuditPlanSignal
from calibration.stats import audit_forecast, audit_predictor, audit_stats, jury_forecast
from labeling.audit_order import DEFAULT_RELEASE
from labeling.models import AuditOrder
from tests.audit_helpers import KEY, candidate, gold, in_order, plan_on
from tests.factories import add_verdict, bulk_verdicts, make_eval_set, make_judge, make_run, make_workspace

pytestmark = pytest.mark.django_db

# The judge's three samples per output, by the output's index in the candidate (i % 4), and what they vote.
SAMPLES = {0: "PPP", 1: "PPF", 2: "PFF", 3: "FFF"}
SHARE = {0: 1.0, 1: 2 / 3, 2: 1 / 3, 3: 0.0}


def judge_samples(i: int) -> str | None:
    return None if i % 10 == 9 else SAMPLES[i % 4]  # every tenth: three ERRORs, no vote


def instrument_says(i: int) -> str | None:
    return None if i % 7 == 6 else ("FAIL" if i % 3 == 2 else "PASS")  # every seventh: never run on it


def gold_of(i: int) -> str:
    return "PASS" if i % 4 in (0, 1) or i % 3 == 0 else "FAIL"


def jury_candidate(n: int = 40):
    """`candidate`, its judge re-run with three samples per output (SAMPLES), and an instrument config with one
    verdict on most outputs, both on the candidate before the plan starts."""
    c = candidate(n=n)
    run = make_run(c.eval_set, c.rubric_version, c.judge, agent_version="default")
    for i, output in enumerate(c.outputs):
        samples = judge_samples(i)
        for s, vote in enumerate(samples or "EEE"):
            add_verdict(run, output, KEY, {"P": "PASS", "F": "FAIL", "E": "ERROR"}[vote], sample=s)
    instrument = make_judge("instrument")
    run = make_run(c.eval_set, c.rubric_version, instrument, agent_version="default")
    for i, output in enumerate(c.outputs):
        if instrument_says(i):
            add_verdict(run, output, KEY, instrument_says(i))
    return c, instrument


def by_hand(c, plan) -> tuple[dict[str, list[float | None]], list[int]]:
    """The two signals in the plan's order, written from the patterns (no vote_shares), and each output's index."""
    index = {o.pk: i for i, o in enumerate(c.outputs)}
    order = [index[o.pk] for o in in_order(plan)]
    own = [None if judge_samples(i) is None else SHARE[i % 4] for i in order]
    inst = [None if instrument_says(i) is None else float(instrument_says(i) == "PASS") for i in order]
    return {"gpt-judge": own, "instrument": inst}, order


def label(c, plan, n: int) -> list[float]:
    outputs = in_order(plan)
    index = {o.pk: i for i, o in enumerate(c.outputs)}
    values = []
    for output in outputs[:n]:
        outcome = gold_of(index[output.pk])
        gold(c, output, outcome)
        values.append(1.0 if outcome == "PASS" else 0.0)
    return values


# --- a new plan reads the jury ---------------------------------------------------------------------


def test_a_new_uniform_plan_decides_exactly_as_audit_predictor_on_the_hand_written_signals():
    # 200 outputs, 40 labeled: far from the exact rule's bounds, so the bounds are the tests' own.
    c, instrument = jury_candidate(n=200)
    plan = plan_on(c, release=40, extra_judges=[instrument])
    assert plan.predictor == "jury"
    assert list(plan.signals.values_list("position", "judge_config__name", "missing", "samples")) == [
        (0, "gpt-judge", 20, 540),  # 20 outputs of 200 with three ERRORs; 180 x 3 votes
        (1, "instrument", 28, 172),
    ]
    signals, _ = by_hand(c, plan)
    y = label(c, plan, 40)
    p = audit_predictor.predictor(signals)
    expected = audit_predictor.jury_decision(gold=y, f=p.scores, minimum=plan.min_pass_rate, confidence=plan.confidence)
    f = plan_figures(plan)
    assert (f.decided, f.decided_at, f.n_gold) == (expected.decided, expected.decided_at, 40)
    assert f.lower == pytest.approx(expected.lower, abs=1e-12) and f.upper == pytest.approx(expected.upper, abs=1e-12)
    assert f.estimate == pytest.approx(expected.estimate.estimate, abs=1e-12)
    # The bounds are the jury capital's confidence sequence, not the exact rule's (which any predictor shares).
    assert f.lower > sum(y) / 200 and f.upper < (sum(y) + 160) / 200
    # The page's table: each signal's r on the gold where it exists, its weight, and the jury's R.
    reading = audit_predictor.jury_reading(gold=y, p=p, raw=signals)
    table = f.predictor
    assert table["kind"] == "jury" and "vote share of gpt-judge's samples, and of instrument's" in table["in_words"]
    assert [(s["name"], s["n"], s["missing"]) for s in table["signals"]] == [
        (s.name, s.n, s.missing) for s in reading.signals
    ]
    for shown, read in zip(table["signals"], reading.signals, strict=True):
        assert shown["correlation"] == pytest.approx(read.correlation) and shown["weight"] == read.coefficient
    assert table["jury"]["correlation"] == pytest.approx(reading.correlation)
    # A negative control: the one-bit test on the same gold reads other bounds, so the equality above tells.
    bit = audit_stats.audit_decision(
        gold=y,
        verdicts=[math.nan if v is None or v == 0.5 else float(v > 0.5) for v in signals["gpt-judge"]],
        minimum=plan.min_pass_rate,
        confidence=plan.confidence,
    )
    assert (bit.lower, bit.upper) != (f.lower, f.upper)
    # The forecast is the jury's (its strata, its test), with the plan's simulations and seed; the old one-bit
    # forecast on the judge's majority is another.
    usable = [any(signals[name][i] is not None for name in signals) for i in range(200)]
    rule = {"minimum": plan.min_pass_rate, "confidence": plan.confidence, "k": DEFAULT_RELEASE}
    simulations = {"n_sims": forecast_sims(200), "seed": FORECAST_SEED}
    forecast = jury_forecast.jury_forecast(gold=y, f=p.scores, usable=usable, **rule, **simulations)
    assert f.forecast == forecast and not f.decided
    majority = [math.nan if v is None or v == 0.5 else float(v > 0.5) for v in signals["gpt-judge"]]
    one_bit = audit_forecast.audit_forecast(gold=y, verdicts=majority, **rule, **simulations)
    assert f.forecast != one_bit


def test_the_signals_table_is_stored_with_the_figures_and_read_back():
    c, instrument = jury_candidate()
    plan = plan_on(c, release=40, extra_judges=[instrument])
    label(c, plan, 12)
    f = plan_figures(plan)
    assert type(f).from_dict(f.as_dict()) == f
    assert [s["role"] for s in f.predictor["signals"]] == ["the plan's judge", "extra judge config"]


def test_the_signals_are_frozen_at_the_start_a_judge_rerun_moves_nothing():
    c, instrument = jury_candidate()
    plan = plan_on(c, release=40, extra_judges=[instrument])
    label(c, plan, 25)
    before, state = plan_figures(plan), read_plan(plan).state
    # Both configs re-run after the start, every sample FAIL: a lead who re-ran until the audit passed must not be
    # able to move it, nor one whose judge drifted.
    for config in (c.judge, instrument):
        run = make_run(c.eval_set, c.rubric_version, config, agent_version="default")
        for output in c.outputs:
            for s in range(3):
                add_verdict(run, output, KEY, "FAIL", sample=s)
    assert read_plan(plan).state == state
    assert plan_figures(plan).as_dict() == before.as_dict()
    # The negative control: a verdict plan reads the verdicts as they are now, so the same re-run moves it.
    AuditPlan.objects.filter(pk=plan.pk).update(predictor="verdict")
    old = AuditPlan.objects.for_figures().get(pk=plan.pk)
    assert read_plan(old).state != state and plan_figures(old).predictor["kind"] == "verdict"


# --- older plans stay as they were -----------------------------------------------------------------


def test_plans_started_before_the_jury_keep_the_verdict_predictor():
    migration = importlib.import_module("calibration.migrations.0019_audit_plan_jury")
    added = next(op for op in migration.Migration.operations if getattr(op, "name", "") == "predictor")
    assert added.field.default == "verdict"  # what every existing row gets


def test_an_old_verdict_plans_figures_are_todays_one_bit_figures_exactly():
    c = candidate(n=24)
    more = bulk_verdicts(c.eval_set, c.rubric_version, c.judge, {KEY: {"FAIL": 12, "ERROR": 4}})
    outputs = c.outputs + more
    plan = plan_on(c, release=40)
    # As the migration leaves a plan started before issue 38: the verdict predictor, no stored signals.
    AuditPlan.objects.filter(pk=plan.pk).update(predictor="verdict")
    AuditPlanSignal.objects.filter(plan=plan).delete()
    plan = AuditPlan.objects.for_figures().get(pk=plan.pk)
    verdict = {o.pk: v for o, v in zip(outputs, [1.0] * 24 + [0.0] * 12 + [math.nan] * 4, strict=True)}
    order = in_order(plan)
    verdicts = [verdict[o.pk] for o in order]
    y = []
    for i, output in enumerate(order[:30]):
        outcome = "PASS" if verdict[output.pk] == 1.0 or i % 5 == 0 else "FAIL"
        gold(c, output, outcome)
        y.append(1.0 if outcome == "PASS" else 0.0)
    expected = audit_stats.audit_decision(
        gold=y, verdicts=verdicts, minimum=plan.min_pass_rate, confidence=plan.confidence
    )
    forecast = audit_forecast.audit_forecast(
        gold=y, verdicts=verdicts, minimum=plan.min_pass_rate, confidence=plan.confidence, n_sims=1000, seed=0
    )
    f = plan_figures(plan)
    assert (f.decided, f.decided_at, f.lower, f.upper) == (
        expected.decided,
        expected.decided_at,
        expected.lower,
        expected.upper,
    )
    assert f.estimate == expected.estimate.estimate and f.forecast == forecast
    assert f.predictor["kind"] == "verdict" and [s["name"] for s in f.predictor["signals"]] == ["gpt-judge"]
    assert f.predictor["signals"][0]["missing"] == 4


def test_a_stratified_plan_reads_the_verdict_and_says_so():
    c = candidate(n=30)
    bulk_verdicts(c.eval_set, c.rubric_version, c.judge, {KEY: {"FAIL": 10}})
    plan = plan_on(c, design="stratified")
    assert plan.predictor == "verdict" and not plan.signals.exists()
    f = plan_figures(plan)
    assert f.predictor["kind"] == "verdict" and f.predictor["signals"] == []
    assert "two strata" in f.predictor["in_words"]


# --- the lead's choice, refused with clear words --------------------------------------------------


def _config_of_another_criterion(c):
    other = make_judge("other-criterion")
    run = make_run(c.eval_set, c.rubric_version, other, agent_version="default")
    for output in c.outputs:
        add_verdict(run, output, "next_step", "PASS")
    return [other]


def _config_of_another_eval_set(c):
    other = make_judge("elsewhere")
    bulk_verdicts(make_eval_set("rc-0"), c.rubric_version, other, {KEY: {"PASS": 3}})
    return [other]


@pytest.mark.parametrize(
    ("choose", "words"),
    [
        (lambda c, inst: [make_judge("outside", workspace=make_workspace())], "There is no judge config 'outside'"),
        (lambda c, inst: [c.judge], "is the plan's own judge"),
        (lambda c, inst: [inst, inst], "named twice"),
        (lambda c, inst: _config_of_another_criterion(c), "has no verdicts of correct_amount"),
        (lambda c, inst: _config_of_another_eval_set(c), "has no verdicts of correct_amount"),
        (lambda c, inst: [inst] + [make_judge(f"j{i}") for i in range(4)], "At most 4 extra judge configs"),
    ],
)
def test_a_bad_choice_of_extra_configs_says_why_and_writes_nothing(choose, words):
    c, instrument = jury_candidate(n=12)
    with pytest.raises(AuditPlanError, match=words):
        plan_on(c, extra_judges=choose(c, instrument))
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()
    assert not AuditPlanSignal.objects.exists()


def test_extra_configs_on_a_stratified_plan_are_refused():
    c, instrument = jury_candidate(n=12)
    with pytest.raises(AuditPlanError, match="uniform design only"):
        start_plan(
            criterion=c.rubric_version.criteria.get(key=KEY),
            eval_set=c.eval_set,
            judge_config=c.judge,
            by=c.lead,
            design="stratified",
            extra_judges=[instrument],
        )
    assert not AuditPlan.objects.exists() and not AuditPlanSignal.objects.exists()


def test_a_plan_without_extra_configs_reads_its_judges_vote_share_alone():
    c, _ = jury_candidate(n=20)
    plan = plan_on(c)
    assert list(plan.signals.values_list("judge_config__name", flat=True)) == ["gpt-judge"]
    f = plan_figures(plan)
    assert [s["reads"] for s in f.predictor["signals"]] == ["vote share"]
