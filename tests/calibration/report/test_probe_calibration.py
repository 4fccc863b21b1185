"""Probe results where calibration is decided: beside kappa (page, JSON, CSV, text), in the gating mark's
snapshot, and a lead's "require a clean probe run" that the mark and the gate enforce."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from calibration.gate.release_gate import run_gate
from calibration.gate.request import CannotDecide
from calibration.models import GatingMark
from calibration.report.compose import calibration_report
from calibration.report.files import CSV_COLUMNS, to_text
from calibration.report.rows import REPORT_KEYS
from calibration.stats.policy import Tightening
from evals.models import RubricVersion
from evals.transcript import Transcript
from judging.models import JudgeConfig
from judging.probes import Declaration, Probe
from tests.factories import bulk_calibration, default_workspace, make_eval_set, make_rubric_version
from tests.probe_helpers import probe_in_process

pytestmark = pytest.mark.django_db(transaction=True)

# Over the calibration set's responses ("answer 0", "answer 1", ...): correct_amount is fooled by padding
# (2 words fail "at least 5", padded they pass), next_step is not moved by it (the word stays).
INSTRUMENTS = {
    "correct_amount": {"kind": "min_length", "min_words": 5},
    "next_step": {"kind": "regex_must_match", "pattern": "answer"},
}


def shout(t: Transcript) -> Transcript:
    return Transcript(t.input, t.tool_calls, t.response.upper())


# A user's probe (ICEWATER_PROBES) that the case-sensitive next_step instrument does not survive.
SHOUTING = Probe("shouting", 1, "the response in capitals", shout, Declaration(neutral=("*",)))


@pytest.fixture
def world(lead):
    es = make_eval_set("cal")
    rv = make_rubric_version("refund", "1")
    judge = JudgeConfig.objects.create(
        name="inst", backend="instrument", instruments=INSTRUMENTS, workspace=default_workspace()
    )
    # Both criteria in the gate tier: kappa 0.714 over 200 items (the background's worked example).
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (145, 15, 5, 35)})
    return es, rv, judge


def scope(world):
    from judging import runner

    es, rv, judge = world
    return runner.Scope(es, rv, judge)


def report_url(es, rv, judge) -> str:
    return reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])


def approve(*args: str) -> str:
    out = io.StringIO()
    call_command("approve", *args, stdout=out)
    return out.getvalue()


def approve_rubric():
    RubricVersion.objects.update(status="approved")


def gating(key: str, *extra: str) -> str:
    args = ["--rubric", "refund@1", "--judge", "inst", "--eval-set", "cal", "--gating", key]
    return approve(*args, "--by", "lead", "--reason", "gate tier, probes read", *extra)


def test_the_report_carries_the_newest_complete_probe_run_under_a_new_key(world):
    es, rv, judge = world
    report = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert report.probes is None and report.as_dict()["probes"] is None
    probe_run = probe_in_process(scope(world), ["padding"], sample=20)
    data = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).as_dict()
    assert [list(c) for c in data["criteria"]] == [list(REPORT_KEYS)] * 2  # the criteria's keys are unchanged
    probes = data["probes"]
    assert probes["probe_run"] == probe_run.pk and probes["outputs"] == 20 and probes["status"] == "done"
    by_key = {c["criterion"]: c for c in probes["criteria"]}
    assert [w["code"] for w in by_key["correct_amount"]["warnings"]] == ["fooled_by_padding"]
    assert by_key["correct_amount"]["clean"] is False and by_key["next_step"]["clean"] is True
    cell = by_key["correct_amount"]["probes"][0]
    assert (cell["fail_to_pass"]["count"], cell["fail_to_pass"]["n"]) == (20, 20)


def test_an_unfinished_probe_run_is_not_shown_the_newest_finished_one_is(world):
    es, rv, judge = world
    done = probe_in_process(scope(world), ["padding"], sample=5)
    newer = probe_in_process(scope(world), ["padding"], sample=6)
    newer.judge_runs.filter(probe="padding").update(status="running")
    assert calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).probes.probe_run == done.pk


def test_the_csv_adds_probe_columns_after_the_reports_own(client, world, lead):
    es, rv, judge = world
    probe_in_process(scope(world), ["padding"], sample=10)
    client.force_login(lead)
    url = reverse("calibration:export", args=[es.pk, rv.pk, judge.pk, "csv"])
    reader = csv.DictReader(io.StringIO(client.get(url).content.decode()))
    assert reader.fieldnames[: len(CSV_COLUMNS)] == CSV_COLUMNS
    assert reader.fieldnames[len(CSV_COLUMNS) :] == [
        "probe_run",
        "probe_clean",
        "probe_warnings",
        "probe_padding_role",
        "probe_padding_pass_to_fail",
        "probe_padding_pass_n",
        "probe_padding_fail_to_pass",
        "probe_padding_fail_n",
        "probe_padding_errors",
    ]
    rows = {r["criterion"]: r for r in reader}
    assert rows["correct_amount"]["probe_warnings"] == "fooled_by_padding"
    assert (rows["correct_amount"]["probe_padding_fail_to_pass"], rows["correct_amount"]["probe_padding_fail_n"]) == (
        "10",
        "10",
    )
    assert rows["next_step"]["probe_clean"] == "True" and rows["next_step"]["probe_padding_role"] == "neutral"


def test_the_text_report_ends_with_the_probe_results_or_says_there_are_none(world):
    es, rv, judge = world
    text = to_text(calibration_report(eval_set=es, rubric_version=rv, judge_config=judge))
    assert "probes: no complete probe run of this judge" in text
    probe_run = probe_in_process(scope(world), ["padding"], sample=10)
    out = io.StringIO()
    call_command("calibration_report", "--eval-set", "cal", "--rubric", "refund@1", "--judge", "inst", stdout=out)
    assert f"Probe run {probe_run.pk} (done)" in out.getvalue() and "! fooled_by_padding:" in out.getvalue()


def test_the_report_page_shows_the_probes_beside_kappa_and_the_tier(client, world, lead):
    es, rv, judge = world
    client.force_login(lead)
    page = client.get(report_url(es, rv, judge)).content.decode()
    assert "No complete probe run of inst" in page and reverse("judging:probes") in page
    probe_run = probe_in_process(scope(world), ["padding"], sample=10)
    page = client.get(report_url(es, rv, judge)).content.decode()
    section = page[page.index('id="probe-results"') :]
    assert "0.71" in section and "tier-gate" in section and "fooled_by_padding" in section
    assert reverse("judging:probe_examples", args=[probe_run.pk, "padding", "correct_amount"]) in section


def test_a_gating_mark_keeps_the_probe_results_it_relied_on(world):
    es, rv, judge = world
    approve_rubric()
    assert "probes: no probe run" in gating("next_step")
    assert GatingMark.objects.get().probe_run is None and GatingMark.objects.get().probe_figures == {}
    probe_run = probe_in_process(scope(world), ["padding"], sample=10)
    out = gating("correct_amount")
    mark = GatingMark.objects.get(criterion__key="correct_amount")
    assert f"probes: probe run #{probe_run.pk} fooled_by_padding" in out
    assert mark.probe_run == probe_run and mark.require_clean_probes is False
    figures = mark.probe_figures
    assert figures["probe_run"] == probe_run.pk and figures["clean"] is False and figures["outputs"] == 10
    assert [w["code"] for w in figures["criterion"]["warnings"]] == ["fooled_by_padding"]


def test_a_lead_may_require_a_clean_probe_run_and_an_unclean_criterion_is_refused(world):
    approve_rubric()
    with pytest.raises(CommandError, match="a clean probe run is required and next_step: no complete probe run"):
        gating("next_step", "--require-clean-probes")
    probe_in_process(scope(world), ["padding"], sample=10)
    with pytest.raises(CommandError, match=r"correct_amount: probe run #\d+ warns fooled_by_padding"):
        gating("correct_amount,next_step", "--require-clean-probes")
    assert not GatingMark.objects.exists()  # neither was marked
    out = gating("next_step", "--require-clean-probes")
    assert "a clean probe run required" in out and "clean" in out
    assert GatingMark.objects.get().require_clean_probes is True
    with pytest.raises(CommandError, match="only apply to --gating"):
        approve("--rubric", "refund@1", "--by", "lead", "--reason", "r", "--require-clean-probes")


def test_the_gate_refuses_a_criterion_whose_newer_probe_run_is_not_clean(world, settings):
    es, rv, judge = world
    approve_rubric()
    probe_in_process(scope(world), ["padding"], sample=10)
    gating("next_step", "--require-clean-probes", "--decide-on", "corrected_lower")  # not an audit: no plan here
    decision = run_gate(eval_set=es, rubric_version=rv, judge_config=judge, tightening=Tightening())
    assert decision.gating_count == 1  # decided: the probe run it relied on is clean
    settings.PROBES = ["tests.calibration.report.test_probe_calibration.SHOUTING"]
    newer = probe_in_process(scope(world), ["shouting"], sample=10)
    with pytest.raises(CannotDecide, match=rf"next_step \(probe run #{newer.pk} warns penalized_by_shouting\)"):
        run_gate(eval_set=es, rubric_version=rv, judge_config=judge, tightening=Tightening())
    # A mark that did not ask for it is not held to it.
    GatingMark.objects.update(require_clean_probes=False)
    assert run_gate(eval_set=es, rubric_version=rv, judge_config=judge, tightening=Tightening()).gating_count == 1


def test_the_approval_form_shows_probe_results_beside_the_tier_and_takes_the_requirement(client, world, lead):
    es, rv, judge = world
    approve_rubric()
    probe_in_process(scope(world), ["padding"], sample=10)
    client.force_login(lead)
    page = client.get(report_url(es, rv, judge)).content.decode()
    assert "correct_amount (gate; fooled_by_padding)" in page and "next_step (gate; probes clean)" in page
    assert 'name="require_clean_probes"' in page
    url = reverse("calibration:mark_gating", args=[es.pk, rv.pk, judge.pk])
    form = {"criterion": "correct_amount", "reason": "gate tier", "require_clean_probes": "on"}
    refused = client.post(url, form, HTTP_HX_REQUEST="true")
    assert "a clean probe run is required and correct_amount" in refused.content.decode()
    assert not GatingMark.objects.exists()
    assert client.post(url, {**form, "criterion": "next_step"}).status_code == 302
    mark = GatingMark.objects.get()
    assert mark.require_clean_probes and mark.probe_figures["clean"] is True
    page = client.get(report_url(es, rv, judge)).content.decode()
    assert f"probe run #{mark.probe_run_id}: clean" in page and "clean probes required" in page


def test_the_json_export_of_the_page_carries_the_probes(client, world, reviewer):
    es, rv, judge = world
    probe_in_process(scope(world), ["padding"], sample=10)
    client.force_login(reviewer)
    data = json.loads(client.get(reverse("calibration:export", args=[es.pk, rv.pk, judge.pk, "json"])).content)
    assert data["probes"]["criteria"][0]["criterion"] == "correct_amount"
