"""The report, the gating mark and held-out looks of a judge version with examples (issue 23, items 2 and 5)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from calibration.gate.approvals import ApprovalRefused, mark_gating, record_review
from calibration.models import GatingMark, GatingReview
from calibration.report.compose import calibration_report, segmented_report
from calibration.report.drilldown import cell_output_ids
from calibration.report.files import to_json
from calibration.workbench.holdout_looks import look_at_held_out
from evals.models import RubricVersion
from judging.gold_splits import look_count
from judging.models import JudgeConfig
from tests.factories import add_verdict, default_workspace, make_llm_judge, make_run
from tests.guidance_helpers import HELD_OUT_GOLDS, example, gold_set, held_out_world

pytestmark = pytest.mark.django_db

GOLDS = HELD_OUT_GOLDS


@pytest.fixture
def world(lead):
    return held_out_world(lead)


def test_the_report_of_a_version_with_examples_measures_the_held_out_split_only_and_says_so(world):
    eval_set, rubric, split, v2, _, _ = world
    report = calibration_report(eval_set=eval_set, rubric_version=rubric, judge_config=v2)
    row = report.row("next_step")
    # Worked by hand: held-out holds 3 PASS and 3 FAIL golds, v2 says PASS on all six.
    assert (row.judge.n, row.judge.true_pass, row.judge.false_pass, row.judge.true_fail, row.judge.false_fail) == (
        6,
        3,
        3,
        0,
        0,
    )
    assert report.split == "held_out"
    assert "held-out split only (6 outputs)" in report.split_note
    assert "held out: looked at 0 times" in report.split_note
    exported = json.loads(to_json(report))
    assert exported["split"] == "held_out" and "held-out split only" in exported["split_note"]
    segmented = segmented_report(eval_set=eval_set, rubric_version=rubric, judge_config=v2).as_dict()
    assert segmented["split"] == "held_out"
    assert segmented["segments"][0]["criteria"][1]["n"] == 6


def test_the_same_verdicts_under_a_judge_without_examples_are_measured_on_every_item(world):
    # Negative control: no examples, no restriction, and no split keys in the report.
    eval_set, rubric, split, _, outputs, gold = world
    plain = make_llm_judge(name="plain")
    run = make_run(eval_set, rubric, plain)
    for o in outputs:
        add_verdict(run, o, "next_step", gold[o.pk] if o.pk in split.development else "PASS")
    report = calibration_report(eval_set=eval_set, rubric_version=rubric, judge_config=plain)
    assert (report.row("next_step").judge.n, report.row("next_step").judge.false_pass) == (12, 3)
    assert report.split == "" and "split" not in json.loads(to_json(report))


def test_a_mark_from_dev_examples_measured_on_held_out_is_allowed(world, lead):
    eval_set, rubric, _, v2, _, _ = world
    marks = mark_gating(
        rubric_version=rubric,
        judge_config=v2,
        eval_set=eval_set,
        keys=["next_step"],
        by=lead,
        reason="held-out figures read",
        override=True,
    )
    assert marks[0].figures["split"] == "held_out" and marks[0].figures["n"] == 6


def test_a_mark_whose_examples_are_among_the_measured_items_is_refused(world, lead):
    eval_set, rubric, split, v2, outputs, gold = world
    # Written around derive_config (say, in the admin): an example from a held-out output.
    held = next(o for o in outputs if o.pk in split.held_out)
    guidance = {
        "next_step": {"instructions": "", "examples": [{**example(held, gold[held.pk]), "eval_set": eval_set.name}]}
    }
    sneaky = JudgeConfig.objects.create(
        workspace=default_workspace(),
        name="sneaky",
        backend="openai",
        model_id="m",
        guidance=guidance,
        guidance_rubric_version=rubric,
    )
    with pytest.raises(ApprovalRefused, match=rf"sneaky's examples came from output\(s\) {held.pk} of {eval_set.name}"):
        mark_gating(
            rubric_version=rubric,
            judge_config=sneaky,
            eval_set=eval_set,
            keys=["next_step"],
            by=lead,
            reason="r",
            override=True,
        )
    assert not GatingMark.objects.exists()
    # A review ("gating stays as it is") would rest on the same inflated figures: refused too, nothing recorded.
    with pytest.raises(ApprovalRefused, match="which this calibration measures it on"):
        record_review(rubric_version=rubric, judge_config=sneaky, eval_set=eval_set, by=lead, reason="r")
    assert not GatingReview.objects.exists()
    # Negative control: the version whose examples came from development reviews on held-out as usual.
    record_review(rubric_version=rubric, judge_config=v2, eval_set=eval_set, by=lead, reason="r")
    assert GatingReview.objects.count() == 1


def test_examples_from_an_eval_set_without_a_split_there_are_refused_too(lead):
    # The examples name outputs of an eval set that has no split under this rubric version: measured on all of it.
    eval_set, rubric, outputs = gold_set(GOLDS)
    RubricVersion.objects.filter(pk=rubric.pk).update(status=RubricVersion.Status.APPROVED)
    rubric.refresh_from_db()
    guidance = {
        "next_step": {"instructions": "", "examples": [{**example(outputs[0], "PASS"), "eval_set": eval_set.name}]}
    }
    config = JudgeConfig.objects.create(
        workspace=default_workspace(),
        name="nosplit",
        backend="openai",
        model_id="m",
        guidance=guidance,
        guidance_rubric_version=rubric,
    )
    with pytest.raises(ApprovalRefused, match="which this calibration measures it on"):
        mark_gating(
            rubric_version=rubric,
            judge_config=config,
            eval_set=eval_set,
            keys=["next_step"],
            by=lead,
            reason="r",
            override=True,
        )


def test_held_out_figures_on_request_are_counted_looks(world, lead):
    eval_set, rubric, split, v2, _, _ = world
    base = v2.derived_from
    rows, looks = look_at_held_out(split=split, configs=[base, v2], by=lead, via="command")
    assert looks == 1 and look_count(split) == 1
    assert [r.judge.n for r in rows["support-judge-v2"] if r.criterion == "next_step"] == [6]
    _, looks = look_at_held_out(split=split, configs=[v2], by=None, via="api")
    assert looks == 2
    assert (
        "held out: looked at 2 times"
        in calibration_report(eval_set=eval_set, rubric_version=rubric, judge_config=v2).split_note
    )


def test_the_report_page_says_held_out_only_and_counts_the_look(world, client, lead):
    eval_set, rubric, split, v2, _, _ = world
    client.force_login(lead)
    page = client.get(reverse("calibration:report", args=[eval_set.pk, rubric.pk, v2.pk]))
    assert page.status_code == 200
    assert 'id="split-note"' in page.content.decode() and "held-out split only (6 outputs)" in page.content.decode()
    assert look_count(split) == 1
    plain = make_llm_judge(name="plain")
    page = client.get(reverse("calibration:report", args=[eval_set.pk, rubric.pk, plain.pk]))
    assert 'id="split-note"' not in page.content.decode() and look_count(split) == 1


def test_the_drilldown_behind_a_cell_lists_the_held_out_items_only(world):
    eval_set, rubric, split, v2, outputs, gold = world
    # A newer run where v2 says PASS everywhere: false passes on development and held-out FAIL golds alike.
    run = make_run(eval_set, rubric, v2)
    for o in outputs:
        add_verdict(run, o, "next_step", "PASS")
    criterion = rubric.criteria.get(key="next_step")
    ids = cell_output_ids(
        eval_set=eval_set, rubric_version=rubric, judge_config=v2, criterion=criterion, cell="false-pass"
    )
    held_fails = sorted(o.pk for o in outputs if o.pk in split.held_out and gold[o.pk] == "FAIL")
    assert ids == held_fails and len(ids) == 3
    plain = make_llm_judge(name="plain")
    plain_run = make_run(eval_set, rubric, plain)
    for o in outputs:
        add_verdict(plain_run, o, "next_step", "PASS")
    every = cell_output_ids(
        eval_set=eval_set, rubric_version=rubric, judge_config=plain, criterion=criterion, cell="false-pass"
    )
    assert len(every) == 6  # the negative control: without examples, every FAIL gold is a false pass


def test_development_rows_are_no_look_but_the_report_command_and_endpoint_count_one(world, client, lead):
    from io import StringIO

    from django.core.management import call_command

    from calibration.workbench.holdout_looks import development_rows
    from tests.api_helpers import call, create_token

    eval_set, rubric, split, v2, _, _ = world
    rows = development_rows(split=split, configs=[v2])
    dev_row = next(r for r in rows["support-judge-v2"] if r.criterion == "next_step")
    # By hand: v2 agrees with the 3 PASS and 3 FAIL development golds.
    assert (
        dev_row.judge.n,
        dev_row.judge.true_pass,
        dev_row.judge.true_fail,
        dev_row.judge.false_pass,
        dev_row.judge.kappa,
    ) == (6, 3, 3, 0, 1.0)
    assert look_count(split) == 0
    out = StringIO()
    call_command(
        "calibration_report",
        "--eval-set",
        eval_set.name,
        "--rubric",
        rubric.ref,
        "--judge",
        v2.name,
        "--format",
        "json",
        stdout=out,
    )
    assert json.loads(out.getvalue())["split"] == "held_out" and look_count(split) == 1
    token = create_token(client, lead, ["report"], rubric)
    answer = call(
        client, "GET", "/api/calibration-report", token, eval_set=eval_set.name, rubric=rubric.ref, judge=v2.name
    )
    assert answer.status_code == 200 and answer.json()["split"] == "held_out"
    assert look_count(split) == 2
    assert sorted(split.looks.values_list("via", flat=True)) == ["api", "command"]
    plain = make_llm_judge(name="plain")
    call(client, "GET", "/api/calibration-report", token, eval_set=eval_set.name, rubric=rubric.ref, judge=plain.name)
    assert look_count(split) == 2  # the negative control: a report without the restriction is no look
