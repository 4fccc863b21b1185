"""The release gate command: Wilson lower bounds, ERROR rate, conjunction, binding criterion, exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from statsmodels.stats.proportion import proportion_confint

from calibration.models import GateResult, GatingMark
from judging.models import JudgeConfig
from tests.factories import bulk_verdicts, make_eval_set, make_judge, make_rubric_version, mark_as_gating

pytestmark = pytest.mark.django_db

KEYS = ["passed", "binding_criterion", "met_count", "gating_count", "failed_criteria", "criteria", "provenance"]
CRITERION_KEYS = [
    "criterion",
    "n",
    "passes",
    "errors",
    "pass_rate",
    "wilson_lower",
    "corrected_pass_rate",
    "corrected_lower",
    "corrected_upper",
    "corrected_assumes",  # issue 40: the corrected bound's assumption, in words
    "judge_tpr",
    "judge_tnr",
    "calibration_eval_set",
    "calibration_n",
    "judge_tpr_ci",  # the transport check (decide_on corrected, issue 22 item 5); None otherwise
    "judge_tnr_ci",
    "candidate_gold_n",
    "candidate_tpr",
    "candidate_tpr_ci",
    "candidate_tnr",
    "candidate_tnr_ci",
    "transport_warning",
    "audit_lower",  # an audit of the candidate (decide_on audit, issue 22); None otherwise
    "audit_upper",
    "audit_estimate",
    "audit_decided",
    "audit_plan",
    "audit_n_labeled",
    "audit_N",
    "audit_design",  # issue 38: the audit's design and what its tests read beside gold (jury or verdict)
    "audit_predictor",
    "audit_in_words",  # the two above in a lead's words, naming a jury's extra configs
    "audit_k",  # issue 37 item 3: the levels the audit decided at in this gate (PASS at alpha, FAIL at alpha / k)
    "audit_alpha_pass",
    "audit_alpha_fail",
    "candidate_gold",  # issue 40: what the candidate's own gold says, and why it refuted or held back the criterion
    "refuted_by_gold",
    "held_back",
    "transport",
    "notes",
    "error_rate",
    "met",
]
POLICY_KEYS = ["min_pass_rate", "max_error_rate", "confidence", "decide_on"]  # the thresholds that applied


@pytest.fixture
def world():
    cal, rc = make_eval_set("cal"), make_eval_set("rc-1")
    rv = make_rubric_version("refund", "1")
    judge = make_judge("gpt-judge")
    return cal, rc, rv, judge


def gate(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


def std_args(fmt: str = "json") -> list[str]:
    return ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", fmt]


def test_35_of_35_passes_clear_0_90_and_34_of_34_do_not(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 35}})
    code, out, _ = gate(*std_args())
    result = json.loads(out)
    assert code == 0 and result["passed"] is True
    assert list(result) == KEYS and list(result["criteria"][0]) == CRITERION_KEYS + POLICY_KEYS
    c = result["criteria"][0]
    assert [c[k] for k in POLICY_KEYS] == [0.90, 0.02, 0.95, "wilson_lower"]  # the lead's policy (observed bound)
    assert (c["n"], c["passes"], c["errors"], c["pass_rate"], c["error_rate"]) == (35, 35, 0, 1.0, 0.0)
    assert c["wilson_lower"] == pytest.approx(proportion_confint(35, 35, alpha=0.05, method="wilson")[0])

    rc2 = make_eval_set("rc-2")
    bulk_verdicts(rc2, rv, judge, {"correct_amount": {"PASS": 34}})
    code, out, _ = gate("--eval-set", "rc-2", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["passed"] is False
    assert result["criteria"][0]["wilson_lower"] < 0.90 < 1.0 == result["criteria"][0]["pass_rate"]
    assert result["binding_criterion"] == "correct_amount"


def test_the_leads_policy_sets_the_bound_and_the_flags_only_tighten_it(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal, min_pass_rate=0.8, confidence=0.8)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 45, "FAIL": 5}})
    code, out, _ = gate(*std_args())
    c = json.loads(out)["criteria"][0]
    assert c["wilson_lower"] == pytest.approx(proportion_confint(45, 50, alpha=0.2, method="wilson")[0])
    assert code == 0 and (c["min_pass_rate"], c["confidence"]) == (0.8, 0.8)
    code, out, _ = gate(*std_args(), "--confidence", "0.99")
    assert code == 1  # 45/50 at 99%: lower bound 0.75
    assert json.loads(out)["criteria"][0]["confidence"] == 0.99


@pytest.mark.parametrize(
    "flag,value,message",
    [
        ("--min-pass-rate", "0.85", "min_pass_rate 0.85 is below the lead's 0.9 for correct_amount"),
        ("--max-error-rate", "0.05", "max_error_rate 0.05 is above the lead's 0.02 for correct_amount"),
        ("--confidence", "0.9", "confidence 0.9 is below the lead's 0.95 for correct_amount"),
    ],
)
def test_a_looser_threshold_than_the_leads_is_refused_and_nothing_is_stored(world, flag, value, message):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 45, "FAIL": 5}})  # fails at 0.9, passes looser
    with pytest.raises(CommandError, match="a caller may only tighten the gate policy") as exc:
        call_command("gate", *std_args(), flag, value, stdout=io.StringIO())
    assert message in str(exc.value) and exc.value.returncode == 2
    assert not GateResult.objects.exists()


def test_each_criterion_is_held_to_its_own_policy_and_a_tightening_must_suit_all(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal, min_pass_rate=0.8)
    mark_as_gating(rv, judge, ["next_step"], cal, min_pass_rate=0.95)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 190, "FAIL": 10}, "next_step": {"PASS": 200}})
    code, out, _ = gate(*std_args())
    assert code == 0 and [c["min_pass_rate"] for c in json.loads(out)["criteria"]] == [0.8, 0.95]
    with pytest.raises(CommandError, match="min_pass_rate 0.9 is below the lead's 0.95 for next_step"):
        call_command("gate", *std_args(), "--min-pass-rate", "0.9", stdout=io.StringIO())
    code, out, _ = gate(*std_args(), "--min-pass-rate", "0.97")
    assert code == 1 and [c["min_pass_rate"] for c in json.loads(out)["criteria"]] == [0.97, 0.97]


def test_error_rate_counts_every_verdict_and_is_not_a_fail(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    # 98 PASS + 2 ERROR: pass rate among PASS/FAIL is 1.0, ERROR rate 2/100 = the maximum -> met.
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 98, "ERROR": 2}})
    code, out, _ = gate(*std_args())
    c = json.loads(out)["criteria"][0]
    assert (c["n"], c["errors"], c["pass_rate"], c["error_rate"]) == (98, 2, 1.0, 0.02)
    assert code == 0
    # One more ERROR on a new candidate: 3/101 > 0.02 fails the gate however good the passes.
    rc2 = make_eval_set("rc-2")
    bulk_verdicts(rc2, rv, judge, {"correct_amount": {"PASS": 98, "ERROR": 3}})
    code, out, _ = gate("--eval-set", "rc-2", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json")
    assert code == 1 and json.loads(out)["criteria"][0]["met"] is False


def test_abstain_and_not_applicable_leave_the_pass_rate_but_count_in_the_error_denominator(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(
        rc, rv, judge, {"correct_amount": {"PASS": 60, "FAIL": 2, "ABSTAIN": 20, "NOT_APPLICABLE": 17, "ERROR": 1}}
    )
    code, out, _ = gate(*std_args())
    c = json.loads(out)["criteria"][0]
    assert (c["n"], c["passes"], c["errors"]) == (62, 60, 1)
    assert c["pass_rate"] == pytest.approx(60 / 62)
    assert c["error_rate"] == pytest.approx(1 / 100)


def test_the_gate_is_conjunctive_and_names_the_binding_criterion(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount", "next_step"], cal)
    # correct_amount is strong (200/200); next_step weak (80/100): 1 of 2 met is still a FAIL.
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 200}, "next_step": {"PASS": 160, "FAIL": 40}})
    code, out, _ = gate(*std_args())
    result = json.loads(out)
    assert code == 1 and result["passed"] is False
    assert (result["met_count"], result["gating_count"]) == (1, 2)
    assert result["binding_criterion"] == "next_step"
    _, text, _ = gate(*std_args("text"))
    assert (
        "FAILED" in text and "1 of 2 criteria met (information only" in text and "binding criterion: next_step" in text
    )


def test_when_it_passes_the_binding_criterion_is_the_closest_to_failing(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount", "next_step"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 200}, "next_step": {"PASS": 196, "FAIL": 4}})
    code, out, _ = gate(*std_args())
    result = json.loads(out)
    assert code == 0 and result["binding_criterion"] == "next_step" and result["met_count"] == 2


def test_only_gating_criteria_count(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 100}, "next_step": {"FAIL": 100}})
    code, out, _ = gate(*std_args())
    assert code == 0 and [c["criterion"] for c in json.loads(out)["criteria"]] == ["correct_amount"]


@pytest.mark.parametrize(
    "change,expected",
    [
        ("no marks", "no criteria of refund@1 are approved as gating"),
        ("not approved", "the rubric version is not approved"),
        ("revoked", "no criteria of refund@1 are approved as gating"),
        ("judge edited", "no criteria of refund@1 are approved as gating"),
        ("no verdicts", "no verdicts for any gating criterion"),
        ("incomplete run", "outputs without a verdict: next_step (20 of 100)"),
    ],
)
def test_it_cannot_decide_without_approved_criteria_or_verdicts(world, change, expected):
    cal, rc, rv, judge = world
    if change != "no marks":
        mark_as_gating(rv, judge, ["correct_amount", "next_step"], cal)
    if change == "not approved":
        type(rv).objects.filter(pk=rv.pk).update(status="draft")
    if change == "revoked":
        GatingMark.objects.update(revoked_at="2026-11-30T00:00Z")
    if change == "judge edited":
        JudgeConfig.objects.filter(pk=judge.pk).update(content_hash="0" * 64)
    if change == "incomplete run":
        bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 100}, "next_step": {"PASS": 80}})
    elif change != "no verdicts":
        bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 100}, "next_step": {"PASS": 100}})
    code, out, err = gate(*std_args())
    assert code == 2
    assert expected in err
    record = GateResult.objects.get()
    assert record.decision == GateResult.Decision.UNDECIDED
    # The same answer as the HTTP API's 409: CI that reads JSON gets the reason, not an empty stdout.
    assert json.loads(out) == {"passed": None, "error": record.reason} and expected in record.reason
    assert gate(*std_args("text"))[1] == ""  # text goes to stderr only


@pytest.mark.parametrize(
    "args,message",
    [
        (["--eval-set", "nope"], "unknown eval set 'nope' (known: cal, rc-1)"),
        (["--rubric", "refund"], "rubric must be written NAME@VERSION"),
        (["--rubric", "refund@9"], "rubric 'refund' has no version '9' (known: 1)"),
        (["--judge", "gpt-5"], "unknown judge config 'gpt-5' (known: gpt-judge)"),
    ],
)
def test_unknown_names_cannot_be_decided_and_say_what_exists(world, args, message):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 50}})
    base = dict(zip(std_args()[::2], std_args()[1::2], strict=True))
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    code, out, err = gate(*[x for kv in base.items() for x in kv])
    assert code == 2 and json.loads(out)["passed"] is None and message in json.loads(out)["error"]
    assert message in err
    record = GateResult.objects.get()
    assert record.decision == "undecided" and message in record.reason


@pytest.mark.parametrize(
    "flag,value,message",
    [
        ("--min-pass-rate", "1.5", "min-pass-rate must be a number from 0 to 1"),
        ("--max-error-rate", "-0.1", "max-error-rate must be a number from 0 to 1"),
        ("--confidence", "1", "confidence must be a number strictly between 0 and 1"),
        ("--confidence", "nan", "confidence must be a number strictly between 0 and 1"),
    ],
)
def test_bad_thresholds_are_refused_before_anything_is_stored(world, flag, value, message):
    with pytest.raises(CommandError, match=message) as exc:
        call_command("gate", *std_args(), flag, value)
    assert exc.value.returncode == 2
    assert not GateResult.objects.exists()


def test_a_garbage_flag_value_is_refused(world):
    with pytest.raises(CommandError, match="invalid float value"):
        call_command("gate", *std_args(), "--min-pass-rate", "ninety")
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("gate", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "xml")
    assert not GateResult.objects.exists()


def test_every_decision_is_stored(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 50}})
    gate(*std_args())
    gate(*std_args(), "--min-pass-rate", "0.99")
    passed, failed = GateResult.objects.order_by("id")
    assert (passed.decision, failed.decision) == ("passed", "failed")
    assert passed.source == "cli" and passed.binding_criterion == "correct_amount"
    assert passed.result["criteria"][0]["passes"] == 50 and failed.min_pass_rate == 0.99
    assert passed.min_pass_rate is None  # nothing asked: the lead's policy applied, as the result says
    applied = [r.result["criteria"][0]["min_pass_rate"] for r in (passed, failed)]
    assert applied == [0.9, 0.99]
    assert passed.rubric_version == rv and passed.judge_config == judge and passed.eval_set == rc


def test_agent_version_narrows_the_gate(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 50}}, agent_version="v2")
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"FAIL": 50}}, agent_version="v1")
    assert gate(*std_args(), "--agent-version", "v2")[0] == 0
    assert gate(*std_args(), "--agent-version", "v1")[0] == 1
    assert gate(*std_args(), "--agent-version", "v3")[0] == 2


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_the_real_process_exit_codes(world):
    """CI reads the exit status of `manage.py gate`, so check it on a real process."""
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 40}})
    root = Path(__file__).resolve().parents[3]
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }

    def run(*extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "manage.py", "gate", *std_args("text"), *extra]
        return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=120)

    assert run().returncode == 0
    failed = run("--min-pass-rate", "0.95")
    assert failed.returncode == 1 and "FAILED" in failed.stdout
    undecided = run("--judge", "nobody")
    assert undecided.returncode == 2 and "unknown judge config" in undecided.stderr
    assert run("--confidence", "2").returncode == 2
    assert run("--min-pass-rate", "0.5").returncode == 2  # looser than the lead's 0.9: refused
    # An unknown workspace cannot decide either (exit 1 would read as a failed gate), and stores nothing.
    before = GateResult.objects.count()
    unknown = run("--workspace", "nope")
    assert unknown.returncode == 2 and "there is no workspace 'nope' (workspaces: default)" in unknown.stderr
    assert GateResult.objects.count() == before
