"""manage.py audit_plan create / show / next (issue 22)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from calibration.models import AuditPlan
from labeling.audit_order import seeded_order
from labeling.models import AuditOrder
from tests.audit_helpers import candidate, gold, in_order

pytestmark = pytest.mark.django_db

CREATE = ["create", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--criterion"]


def run(*args) -> str:
    out = StringIO()
    call_command("audit_plan", *args, stdout=out)
    return out.getvalue()


def test_create_prints_the_plan_id_and_makes_the_seeded_order():
    c = candidate(n=12)
    out = run(*CREATE, "correct_amount", "--by", "lee", "--seed", "5")
    plan = AuditPlan.objects.get()
    assert out.strip() == str(plan.pk)
    assert [o.pk for o in in_order(plan)] == seeded_order([o.pk for o in c.outputs], 5)
    assert (plan.min_pass_rate, plan.confidence) == (0.5, 0.95)


def test_create_takes_stricter_thresholds_and_an_agent_version():
    candidate(n=6)
    run(*CREATE, "correct_amount", "--by", "lee", "--agent-version", "default", "--min-pass-rate", "0.8")
    plan = AuditPlan.objects.get()
    assert (plan.agent_version, plan.min_pass_rate) == ("default", 0.8)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nope", "--by", "lee"], "unknown criterion 'nope' in refund@1 (known: correct_amount, next_step)"),
        (["next_step", "--by", "lee"], "does not gate with judge gpt-judge"),
        (["correct_amount", "--by", "nobody"], "unknown user 'nobody'"),
        (["correct_amount", "--by", "amy"], "Only a lead"),
        (["correct_amount", "--by", "lee", "--min-pass-rate", "0.2"], "may not be looser"),
    ],
)
def test_create_refuses_with_clear_words_and_stores_nothing(args, words):
    from tests.factories import annotator

    candidate(n=4)
    annotator("amy")
    with pytest.raises(CommandError, match=words.replace("(", r"\(").replace(")", r"\)")):
        run(*CREATE, *args)
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()


def test_create_names_an_unknown_eval_set():
    candidate(n=4)
    args = [
        "create",
        "--eval-set",
        "rc-9",
        "--rubric",
        "refund@1",
        "--judge",
        "gpt-judge",
        "--criterion",
        "correct_amount",
    ]
    with pytest.raises(CommandError, match="unknown eval set 'rc-9'"):
        run(*args, "--by", "lee")


def test_next_releases_k_and_show_prints_the_figures_as_json():
    c = candidate(n=40)
    plan_id = run(*CREATE, "correct_amount", "--by", "lee", "--seed", "3", "--design", "uniform").strip()
    assert "the first 25 of 40" in run("next", plan_id)
    assert "the first 30 of 40" in run("next", plan_id, "-k", "5")
    plan = AuditPlan.objects.get()
    for output in in_order(plan)[:20]:
        gold(c, output, "PASS")
    shown = json.loads(run("show", plan_id, "--format", "json"))
    assert shown["order"] == [o.case.case_id for o in in_order(plan)]
    assert (shown["n_labeled"], shown["N"], shown["decided"], shown["released"]) == (20, 40, "PASS", 30)
    assert shown["lower"] >= 0.5 and shown["upper"] == 1.0 and shown["estimate"] == 1.0
    assert set(shown["forecast"]) >= {"k", "p_decided", "p_pass", "p_fail", "expected_labels", "p90_labels"}
    assert (shown["plan"], shown["criterion"], shown["min_pass_rate"]) == (plan.pk, "correct_amount", 0.5)


def test_next_on_a_decided_plan_refuses_and_says_why():
    # By hand: 20 gold passes of N = 40 at minimum 0.5 reach 0.5 x 40: PASS at label 20 by the exact rule.
    c = candidate(n=40)
    plan_id = run(*CREATE, "correct_amount", "--by", "lee", "--seed", "3", "--design", "uniform").strip()
    run("next", plan_id, "-k", "20")
    order = in_order(AuditPlan.objects.get())
    for output in order[:19]:
        gold(c, output, "PASS")
    assert "the first 21 of 40" in run("next", plan_id, "-k", "1")  # undecided: released
    gold(c, order[19], "PASS")
    with pytest.raises(CommandError, match=rf"Audit plan {plan_id} is decided: PASS at label 20 of 40\. Its labels"):
        run("next", plan_id)
    assert AuditOrder.objects.get().released == 21


def test_show_as_text_words_the_forecast_as_a_forecast():
    candidate(n=40)
    plan_id = run(*CREATE, "correct_amount", "--by", "lee").strip()
    out = run("show", plan_id)
    assert "labeled 0 of 40" in out and "decided: not yet" in out
    assert "forecast (Monte Carlo, not a promise)" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["show", "abc"], "a plan is named by its id"),
        (["show", "999"], "no audit plan 999"),
        (["next", "PLAN", "-k", "0"], "-k must be at least 1"),
        (["next", "PLAN", "--by", "amy"], "Only a lead"),
    ],
)
def test_show_and_next_refuse_with_clear_words(args, words):
    from tests.factories import annotator

    candidate(n=4)
    annotator("amy")
    plan_id = run(*CREATE, "correct_amount", "--by", "lee").strip()
    with pytest.raises(CommandError, match=words):
        run(*[plan_id if a == "PLAN" else a for a in args])
    assert AuditOrder.objects.get().released == 0
