"""Audit plans (issue 22): starting one, and its figures as gold arrives along the plan's random order."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calibration.audits.figures import plan_figures
from calibration.audits.plans import AuditPlanError, close_plan, release_plan_next, start_plan
from calibration.models import AuditPlan
from evals.models import Role
from labeling.audit_order import seeded_order
from labeling.models import AuditOrder
from labeling.queue import move_queue
from tests.audit_helpers import KEY, candidate, gold, in_order, one_label, one_pass_short, plan_on, settle
from tests.factories import bulk_verdicts, make_rubric_version, make_user

pytestmark = pytest.mark.django_db


def start(c, **options):
    options.setdefault("by", c.lead)
    return start_plan(
        criterion=c.rubric_version.criteria.get(key=KEY), eval_set=c.eval_set, judge_config=c.judge, **options
    )


# --- starting a plan -----------------------------------------------------------------------------


def test_a_plan_takes_the_marks_thresholds_and_a_seeded_order_of_the_candidate():
    c = candidate(n=12, min_pass_rate=0.6, confidence=0.9)
    plan = start(c, seed=42)
    assert (plan.min_pass_rate, plan.confidence, plan.agent_version) == (0.6, 0.9, "")
    assert [o.pk for o in in_order(plan)] == seeded_order([o.pk for o in c.outputs], 42)
    assert (plan.order.seed, plan.order.size, plan.order.released) == (42, 12, 0)


def test_a_second_criterion_reuses_the_order_of_the_queue():
    c = candidate(n=10)
    first = start(c, seed=1)
    from calibration.models import GatingMark

    mark = GatingMark.objects.get()
    GatingMark.objects.create(
        **{
            f.attname: getattr(mark, f.attname)
            for f in GatingMark._meta.concrete_fields
            if f.name not in ("id", "criterion", "marked_at")
        },
        criterion=c.rubric_version.criteria.get(key="next_step"),
    )
    second = start_plan(
        criterion=c.rubric_version.criteria.get(key="next_step"),
        eval_set=c.eval_set,
        judge_config=c.judge,
        by=c.lead,
        seed=99,
    )
    assert second.order_id == first.order_id and AuditOrder.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("annotator", "Only a lead"),
        ("no_queue", "is not open"),
        ("other_version", "is under"),
        ("not_gating", "does not gate"),
        ("calibration_set", "calibration set"),
        ("looser", "may not be looser"),
        ("bad_confidence", "confidence must be"),
        ("agent", "no outputs of agent version"),
    ],
)
def test_a_plan_that_cannot_start_says_why_and_writes_nothing(change, words):
    c = candidate(n=5, min_pass_rate=0.7)
    options = {}
    if change == "annotator":
        options["by"] = make_user("ann", Role.ANNOTATOR)
    elif change == "no_queue":
        c.eval_set.labeling_queues.update(is_current=False)
    elif change == "other_version":
        move_queue(eval_set=c.eval_set, rubric_version=make_rubric_version(), by=c.lead)
    elif change == "not_gating":
        from calibration.models import GatingMark

        GatingMark.objects.update(revoked_at="2026-01-01T00:00:00Z")
    elif change == "calibration_set":
        c.eval_set = c.calibration
        from tests.factories import open_queue

        open_queue(c.calibration, c.rubric_version, c.lead)
    elif change == "looser":
        options["min_pass_rate"] = 0.6
    elif change == "bad_confidence":
        options["confidence"] = 1.5
    elif change == "agent":
        options["agent_version"] = "v9"
    with pytest.raises(AuditPlanError, match=words):
        start(c, **options)
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()


def test_one_open_plan_per_criterion_candidate_agent_version_and_judge():
    c = candidate(n=5)
    plan = start(c)
    with pytest.raises(AuditPlanError, match="already has an open audit plan"):
        start(c)
    assert AuditPlan.objects.count() == 1
    close_plan(plan=plan, by=c.lead)
    assert start(c).order_id == plan.order_id


def test_releasing_needs_a_lead_and_an_open_plan():
    c = candidate(n=30)
    plan = start(c)
    assert release_plan_next(plan=plan, by=c.lead).released == 25
    with pytest.raises(AuditPlanError, match="Only a lead"):
        release_plan_next(plan=plan, by=make_user("ann", Role.ANNOTATOR))
    close_plan(plan=plan, by=c.lead)
    with pytest.raises(AuditPlanError, match="closed"):
        release_plan_next(plan=plan, by=c.lead)


# --- its figures ---------------------------------------------------------------------------------


def test_before_any_label_nothing_is_decided_and_the_forecast_speaks():
    c = candidate(n=40)
    plan = plan_on(c, release=25)
    f = plan_figures(plan)
    assert (f.N, f.released, f.n_labeled, f.decided, f.estimate) == (40, 25, 0, None, None)
    assert (f.lower, f.upper) == (0.0, 1.0)
    assert f.forecast.k == 25 and f.forecast.expected_labels > 0
    assert f.as_dict()["order"] == [o.case.case_id for o in in_order(plan)]
    assert f.plan == plan.pk


def test_all_pass_gold_decides_pass_at_the_twentieth_label_of_forty_at_minimum_half():
    # By hand: N = 40, minimum 0.5, so 20 gold passes alone reach minimum * N (the exact rule), and the tests
    # may not decide before 20 settled gold items (audit_stats.MIN_GOLD): label 20 decides, label 19 does not.
    c, plan, order = one_pass_short(release=40)
    nineteen = plan_figures(plan)
    assert (nineteen.n_labeled, nineteen.n_gold, nineteen.decided) == (19, 19, None)
    gold(c, order[19], "PASS")
    twenty = plan_figures(plan)
    assert (twenty.n_labeled, twenty.decided, twenty.decided_at) == (20, "PASS", 20)
    assert twenty.lower >= 0.5 and twenty.estimate == 1.0
    assert twenty.labels_saved == 20 and twenty.as_dict()["saved_share"] == 0.5
    assert twenty.forecast.p_decided == 1.0 and twenty.expected_more_labels == 0


def test_all_fail_gold_decides_fail():
    # By hand: 21 fails leave at most 19 passes of 40 < 0.5 * 40 (the exact rule), so FAIL by label 21.
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    for output in in_order(plan)[:21]:
        gold(c, output, "FAIL")
    f = plan_figures(plan)
    assert f.decided == "FAIL" and f.decided_at <= 21 and f.upper < 0.5


def test_pending_gold_counts_against_the_pass_until_it_is_settled():
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    order = in_order(plan)
    for output in order[:20]:
        if output not in (order[4], order[8]):
            gold(c, output, "PASS")
    one_label(c, order[4], "PASS")  # one label: pending
    gold(c, order[8], "PASS", second="FAIL")  # a disagreement: pending under majority
    f = plan_figures(plan)
    # 18 gold passes: the exact rule needs 20, the tests 20 settled gold items; neither holds yet.
    assert (f.n_labeled, f.n_gold, f.n_pending, f.decided) == (20, 18, 2, None)
    assert (f.n_awaiting_gold, f.n_gold_cant_tell, f.n_not_applicable) == (2, 0, 0)  # both wait for people
    settle(c, order[4], "PASS")
    assert plan_figures(plan).decided is None
    settle(c, order[8], "PASS")
    assert plan_figures(plan).decided == "PASS"


def test_an_unlabeled_released_item_before_a_labeled_one_is_pending():
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    order = in_order(plan)
    for output in order[1:21]:
        gold(c, output, "PASS")
    f = plan_figures(plan)
    # Position 1 has no label yet: the prefix runs to position 21, with position 1 pending: 20 passes still
    # reach 0.5 * 40 by the exact rule.
    assert (f.n_labeled, f.n_gold, f.n_pending, f.decided) == (21, 20, 1, "PASS")


def test_labels_beyond_the_release_are_not_read():
    c = candidate(n=40)
    plan = plan_on(c, release=5)
    for output in in_order(plan)[:20]:
        gold(c, output, "PASS")
    f = plan_figures(plan)
    assert (f.released, f.n_labeled, f.decided) == (5, 5, None)


def twenty_passes_then_first_settled_as(outcome: str):
    """40 outputs, the first 20 of the order labeled PASS by both annotators, the first then adjudicated."""
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    order = in_order(plan)
    for output in order[:20]:
        gold(c, output, "PASS")
    settle(c, order[0], outcome)
    return plan_figures(plan)


def test_gold_cant_tell_stays_pending():
    f = twenty_passes_then_first_settled_as("ABSTAIN")
    # 19 passes < 0.5 * 40: the Can't tell counts as a fail for the PASS side.
    assert (f.n_gold, f.n_pending, f.n_not_applicable, f.decided) == (19, 1, 0, None)
    # Settled, yet no pass or fail: said apart from the gold still to come.
    assert (f.n_gold_cant_tell, f.n_awaiting_gold) == (1, 0)


def test_gold_na_is_outside_the_pass_rate_as_in_the_gate():
    # The same 20 labels with N/A where the test above has Can't tell: 19 passes of 19 applicable labels
    # decide PASS at 0.5 by the test, where the Can't tell held it back.
    f = twenty_passes_then_first_settled_as("NOT_APPLICABLE")
    assert (f.n_gold, f.n_not_applicable, f.n_pending, f.n_gold_cant_tell) == (19, 1, 0, 0)
    assert (f.decided, f.decided_by, f.decided_at) == ("PASS", "test", 20)
    # The bounds are of the pass rate among the applicable outputs: 19 passes of at most 39.
    assert f.lower >= 19 / 39 and f.upper == 1.0


def test_one_agent_versions_plan_reads_only_its_outputs_in_the_shared_order():
    c = candidate(n=6)
    v2 = bulk_verdicts(c.eval_set, c.rubric_version, c.judge, {KEY: {"PASS": 4}}, agent_version="v2")
    # The order is made after v2's outputs exist, so it holds all ten.
    plan = plan_on(c, release=10, agent_version="v2")
    f = plan_figures(plan)
    everything = in_order(plan)
    assert len(everything) == 10 and f.N == 4 and f.released == 4
    assert list(f.order) == [o.case.case_id for o in everything if o.agent_version == "v2"]
    assert {o.pk for o in v2} == {o.pk for o in everything if o.agent_version == "v2"}


def test_outputs_added_after_the_order_are_counted_outside_it():
    c = candidate(n=6)
    plan = plan_on(c)
    bulk_verdicts(c.eval_set, c.rubric_version, c.judge, {KEY: {"PASS": 2}})
    assert plan_figures(plan).outputs_outside_order == 2


def test_plan_figures_runs_a_fixed_number_of_queries():
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    order = in_order(plan)

    def queries():
        fresh = AuditPlan.objects.for_figures().get(pk=plan.pk)
        with CaptureQueriesContext(connection) as ctx:
            plan_figures(fresh)
        return len(ctx.captured_queries)

    for output in order[:2]:
        gold(c, output, "PASS")
    few = queries()
    for output in order[2:30]:
        gold(c, output, "PASS")
    assert queries() == few + 3  # the first read that finds it decided keeps the decision: one insert in a savepoint
    assert queries() == few <= 6  # released, the order, outputs outside it, verdicts, labels, adjudicated gold


def test_the_statistics_run_once_per_gold_and_a_new_label_runs_them_again(monkeypatch):
    # The page polls every few seconds; the decision and the forecast are cached under a digest of their inputs.
    # A new uniform plan reads the jury (its judge's vote share), so its forecast is the jury's own.
    from calibration.stats import jury_forecast

    runs = []
    forecast = jury_forecast.jury_forecast
    monkeypatch.setattr(jury_forecast, "jury_forecast", lambda **kw: runs.append(1) or forecast(**kw))
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    assert plan.predictor == AuditPlan.Predictor.JURY
    order = in_order(plan)
    for output in order[:3]:
        gold(c, output, "PASS")
    runs.clear()  # the plan's first figures, computed when it started (by the worker this test plays)
    first = plan_figures(plan)
    again = plan_figures(plan)
    assert len(runs) == 1 and (again.lower, again.upper, again.forecast) == (first.lower, first.upper, first.forecast)
    gold(c, order[3], "FAIL")  # the negative control: new gold, new figures
    after = plan_figures(plan)
    assert len(runs) == 2 and after.n_labeled == 4 and after.estimate != first.estimate
    assert plan_figures(plan, k=10).forecast.k == 10 and len(runs) == 3  # another k is another forecast


def test_large_candidates_get_fewer_forecast_simulations():
    from calibration.audits.figures import forecast_sims

    # 4 million simulated labels in all, 1,000 simulations at most, 200 at least.
    assert [forecast_sims(N) for N in (1, 300, 4000, 5000, 20_000, 1_000_000)] == [1000, 1000, 1000, 800, 200, 200]
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    for output in in_order(plan)[:3]:
        gold(c, output, "PASS")
    assert plan_figures(plan).forecast.n_sims == 1000


def test_the_figures_say_where_the_audit_is_heading_and_a_decided_one_heads_nowhere_new():
    # By hand: 19 gold PASS of 40 are one short of the tests' 20 gold items (audit_stats.MIN_GOLD), so the heading
    # (calibration/stats/audit_heading.py) is too early to tell, in those words; once decided it is the decision.
    c, plan, order = one_pass_short(release=40)
    early = plan_figures(plan).as_dict()["heading"]
    assert early == {
        "side": None,
        "decided": False,
        "confidence": 0.8,
        "in_words": "too early to tell (19 of 20 gold labels)",
    }
    gold(c, order[19], "PASS")
    decided = plan_figures(plan).as_dict()["heading"]
    assert decided["side"] == "PASS" and decided["decided"] is True
