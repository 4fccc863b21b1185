"""python manage.py probe_judge: results in text and JSON, clear refusals that write nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from judging.models import JudgeRun, ProbedOutput, ProbeRun, RunItem
from tests.factories import make_instrumented, make_llm_judge

pytestmark = pytest.mark.django_db(transaction=True)

SCOPE = ["--eval-set", "probed", "--rubric", "refund@1", "--judge", "instruments"]


@pytest.fixture
def instrumented():
    from tests.factories import make_eval_set

    return make_instrumented(eval_set=make_eval_set("probed"))


def probe_judge(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("probe_judge", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_probe_judge_in_process_prints_the_flip_rates_and_warnings(instrumented):
    out, _ = probe_judge(*SCOPE, "--probes", "padding,wrong_amount", "--in-process")
    assert f"probe run {ProbeRun.objects.get().pk} done: 30/30 items in 3 arms" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["substance", "padding", "neutral", "-", "10/10", "[0.72,", "1.00]", "0", "0"] in lines
    assert ["amount_noted", "wrong_amount", "control", "caught", "0/10", "[0.00,", "0.28]", "0", "0"] in lines
    assert "! fooled_by_padding:" in out and "! blind_to_wrong_amount:" in out


def test_probe_judge_json_is_the_results_alone_on_stdout(instrumented):
    out, err = probe_judge(*SCOPE, "--probes", "sycophancy", "--sample", "3", "--in-process", "--format", "json")
    results = json.loads(out)
    assert results["sample_size"] == 3 and results["outputs"] == 3
    assert [p["name"] for p in results["probes"]] == ["sycophancy"]
    assert results["thresholds"] == {"max_flip_rate": 0.05, "min_detection_rate": 0.8, "confidence": 0.95}
    first = results["criteria"][0]
    cell = first["probes"][0]
    assert first["criterion"] == "correct_amount" and cell["pass_to_fail"]["n"] + cell["fail_to_pass"]["n"] == 3
    assert "probe run" in err  # progress went to stderr


def test_without_a_flag_the_probe_run_is_queued_on_celery(instrumented, monkeypatch):
    queued = []
    monkeypatch.setattr("judging.runner.enqueue_lanes", lambda run_id, lanes=2: queued.append(run_id) or True)
    out, _ = probe_judge(*SCOPE, "--probes", "padding")
    assert "queued on Celery" in out
    assert sorted(queued) == sorted(JudgeRun.objects.values_list("pk", flat=True)) and len(queued) == 2
    assert set(JudgeRun.objects.values_list("mode", "status")) == {("celery", "queued")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--probes", "padding,shouting"], "unknown probe(s) 'shouting' (known: padding, formatting"),
        (["--probes", ","], "name at least one probe"),
        (["--probes", "padding,padding"], "a probe is named twice"),
        (["--sample", "0"], "--sample must be a whole number from 1 to 100,000, got 0"),
        (["--sample", "-5"], "got -5"),
        (["--rubric", "refund"], "must be written NAME@VERSION"),
        (["--rubric", "refund@9"], "rubric 'refund' has no version '9' (known: 1)"),
        (["--eval-set", "nope"], "no eval set named 'nope' (known: probed)"),
        (["--judge", "nobody"], "no judge config named 'nobody'"),
        (["--judge", "elsewhere"], "imported from elsewhere and cannot run"),
        (["--agent-version", "v9"], "no outputs of agent version 'v9'"),
    ],
)
def test_bad_arguments_exit_2_saying_why_and_write_nothing(instrumented, args, message):
    make_llm_judge(name="elsewhere", backend="imported")
    argv = dict(zip(SCOPE[::2], SCOPE[1::2], strict=True))
    extra = []
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag in argv:
            argv[flag] = value
        else:
            extra += [flag, value]
    with pytest.raises(CommandError) as caught:
        probe_judge(*[x for pair in argv.items() for x in pair], *extra, "--in-process")
    assert message in str(caught.value) and caught.value.returncode == 2
    assert not ProbeRun.objects.exists() and not JudgeRun.objects.exists()
    assert not RunItem.objects.exists() and not ProbedOutput.objects.exists()


def test_a_sample_that_is_not_a_number_or_conflicting_flags_are_refused(instrumented):
    with pytest.raises(CommandError, match="argument --sample: invalid int value: 'many'"):
        probe_judge(*SCOPE, "--sample", "many")
    with pytest.raises(CommandError, match="not allowed with argument"):
        probe_judge(*SCOPE, "--wait", "--in-process")
    assert not ProbeRun.objects.exists()


def test_a_bad_probe_setting_stops_the_command_before_anything_is_written(instrumented, settings):
    settings.PROBES = ["mycompany.probes.SHOUTING"]
    with pytest.raises(CommandError, match="ICEWATER_PROBES: cannot import 'mycompany.probes.SHOUTING'") as caught:
        probe_judge(*SCOPE, "--in-process")
    assert caught.value.returncode == 2 and not ProbeRun.objects.exists()


def test_waiting_for_a_probe_run_no_worker_takes_gives_up_saying_so(instrumented, monkeypatch):
    monkeypatch.setattr("judging.runner.enqueue_lanes", lambda run_id, lanes=2: True)  # queued, never taken
    with pytest.raises(CommandError) as caught:
        probe_judge(*SCOPE, "--probes", "padding", "--wait", "--timeout", "0.2", "--poll", "0.05")
    pk = ProbeRun.objects.get().pk
    assert str(caught.value) == (
        f"probe run {pk} still queued after 0.2 s (is a Celery worker running on this queue?); it goes on"
    )
    assert caught.value.returncode == 1
