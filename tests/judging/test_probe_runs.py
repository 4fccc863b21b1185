"""Probe runs in one process: the arms are judge runs, the instruments give known flip rates, the probed
transcript is what is judged, the cache and ERROR work as in any run, and no probe verdict ever counts
for calibration. Against the fake OpenAI-compatible server, through the real SDK: a judge that passes
whatever carries the injection line is caught.
"""

from __future__ import annotations

import pytest

from calibration.data import frames
from evals.transcript import Transcript
from judging.backends import Misconfigured
from judging.current_verdicts import current_verdicts
from judging.models import JudgeRun, ProbedOutput, ProbeRun, RunItem, Verdict
from judging.probes import choose, transforms
from judging.probes import runs as probe_runs
from judging.probes.registry import MEANINGFUL, NEUTRAL
from judging.probes.results import latest_complete, pairs_of, results_of
from labeling import label_frames
from tests.factories import RESPONSE, make_instrumented, make_llm_judge, make_scope
from tests.judging_helpers import judge_in_process
from tests.probe_helpers import probe_in_process

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def instrumented():
    return make_instrumented()


def counts(cell):
    return (cell.pass_to_fail.count, cell.pass_to_fail.n, cell.fail_to_pass.count, cell.fail_to_pass.n)


def test_deterministic_instruments_give_the_flip_rates_worked_out_by_hand(instrumented):
    probe_run = probe_in_process(instrumented, ["padding", "wrong_amount", "drop_next_step", "sycophancy"])
    results = results_of(probe_run)
    assert results.complete and results.outputs == 10
    table = {(c.criterion, cell.probe): (cell.role, counts(cell)) for c in results.criteria for cell in c.cells}
    n, m = NEUTRAL, MEANINGFUL
    assert table == {
        # 8 originals pass (6 right, 2 without a next step), 2 fail (the wrong amount); nothing moves them.
        ("correct_amount", "padding"): (n, (0, 8, 0, 2)),
        ("correct_amount", "sycophancy"): (n, (0, 8, 0, 2)),
        # Every amount raised: the 8 passing outputs fail.
        ("correct_amount", "wrong_amount"): (m, (8, 8, 0, 2)),
        ("next_step", "padding"): (n, (0, 8, 0, 2)),
        ("next_step", "sycophancy"): (n, (0, 8, 0, 2)),
        # The 8 outputs with a next step lose it; the 2 without one are not probed (nothing to remove).
        ("next_step", "drop_next_step"): (m, (8, 8, 0, 0)),
        # 15 words fail "at least 30"; padded past 30 they all pass: fooled.
        ("substance", "padding"): (n, (0, 0, 10, 10)),
        ("substance", "sycophancy"): (n, (0, 0, 0, 10)),
        # A constant PASS: no neutral probe moves it, and the wrong amount does not either.
        ("amount_noted", "padding"): (n, (0, 10, 0, 0)),
        ("amount_noted", "sycophancy"): (n, (0, 10, 0, 0)),
        ("amount_noted", "wrong_amount"): (m, (0, 10, 0, 0)),
    }
    warnings = {c.criterion: c.warning_codes for c in results.criteria}
    assert warnings == {
        "correct_amount": [],
        "next_step": [],
        "substance": ["fooled_by_padding"],
        "amount_noted": ["blind_to_wrong_amount"],  # the judge that ignores its input, exposed
    }
    assert [results.clean_for(k) for k in ("correct_amount", "next_step", "substance", "amount_noted")] == [
        True,
        True,
        False,
        False,
    ]


def test_each_probe_is_one_judge_run_over_the_probed_transcripts(instrumented):
    probe_run = probe_in_process(instrumented, ["padding", "drop_next_step"])
    arms = {r.probe: r for r in probe_run.judge_runs.all()}
    assert set(arms) == {"original", "padding", "drop_next_step"}
    assert {p: (r.status, r.total_items, r.expected_verdicts) for p, r in arms.items()} == {
        "original": ("done", 10, 40),
        "padding": ("done", 10, 40),
        "drop_next_step": ("done", 8, 32),
    }
    assert arms["padding"].probe_version == 1 and arms["original"].probe_version is None
    stored = ProbedOutput.objects.filter(run=arms["padding"]).select_related("output").first()
    assert stored.response == transforms.pad(Transcript.of(stored.output)).response
    assert not ProbedOutput.objects.filter(run=arms["original"]).exists()  # the original is the output itself
    # Every verdict says which arm it belongs to; the instruments read the probed response.
    assert set(Verdict.objects.filter(run=arms["padding"]).values_list("probe", flat=True)) == {"padding"}
    substance = Verdict.objects.filter(run=arms["padding"], criterion__key="substance").first()
    # 15 words of the reply + 37 of filler before it + 34 after (counted by hand).
    assert substance.outcome == "PASS" and '"words": 86' in substance.raw_output


def test_probe_verdicts_never_count_for_calibration_or_the_gate(instrumented):
    judge_in_process(instrumented)  # an ordinary run: the verdicts that count
    es, rv, judge = instrumented.eval_set, instrumented.rubric_version, instrumented.judge_config
    scope = {"eval_set": es, "rubric_version": rv, "judge_config": judge}
    before = sorted(current_verdicts(**scope).values_list("pk", "outcome"))
    probe_in_process(instrumented, ["padding", "wrong_amount"])
    assert Verdict.objects.exclude(probe="").count() == 120  # the probe run did write (3 arms x 40)
    assert sorted(current_verdicts(**scope).values_list("pk", "outcome")) == before
    frame = frames.load_verdicts(label_frames.Scope(es, rv), judge)
    assert len(frame) == 40 and set(frame["run_rank"]) == {-current_verdicts(**scope).first().run_id}


def test_an_item_the_probed_arm_cannot_judge_is_error_and_never_a_flip(instrumented):
    probe_run = probe_runs.create_probe_run(instrumented, choose(["padding"]), mode=JudgeRun.Mode.IN_PROCESS)
    padding = probe_run.judge_runs.get(probe="padding")
    gone = ProbedOutput.objects.filter(run=padding).order_by("output_id").first()
    gone.delete()
    probe_runs.run_in_process(probe_run)
    errors = Verdict.objects.filter(run=padding, outcome="ERROR")
    assert errors.count() == 4 and "padding transcript of this output is missing" in errors.first().error_reason
    substance = results_of(probe_run).criterion("substance").cell("padding")
    assert substance.errors == 1 and counts(substance) == (0, 0, 9, 9)  # the 10th pair is an ERROR, not a flip


def test_a_sample_draws_the_same_outputs_every_time(instrumented):
    first = probe_in_process(instrumented, ["sycophancy"], sample=4)
    second = probe_in_process(instrumented, ["sycophancy"], sample=4)
    ids = [
        sorted(r.items.values_list("output_id", flat=True))
        for r in (first.judge_runs.get(probe="original"), second.judge_runs.get(probe="original"))
    ]
    assert ids[0] == ids[1] and len(ids[0]) == 4 and first.outputs == 4 and first.sample_size == 4
    assert probe_runs.sample_ids([5, 3, 9], None) == [3, 5, 9] and probe_runs.sample_ids([5, 3], 10) == [3, 5]
    assert (
        latest_complete(
            eval_set=instrumented.eval_set,
            rubric_version=instrumented.rubric_version,
            judge_config=instrumented.judge_config,
        )
        == second
    )


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"sample": 0}, "--sample must be a whole number from 1"), ({"sample": -3}, "from 1")]
)
def test_a_bad_sample_or_no_probe_is_refused_before_anything_is_written(instrumented, kwargs, message):
    with pytest.raises(Misconfigured, match=message):
        probe_runs.create_probe_run(instrumented, choose(["padding"]), mode="in_process", **kwargs)
    with pytest.raises(Misconfigured, match="at least one probe"):
        probe_runs.create_probe_run(instrumented, [], mode="in_process")
    assert not ProbeRun.objects.exists() and not JudgeRun.objects.exists() and not RunItem.objects.exists()


def test_a_probe_that_breaks_on_an_output_stops_the_start_and_writes_nothing(instrumented):
    from tests.judging.test_probe_transforms import BROKEN

    with pytest.raises(Misconfigured, match="probe broken: the transform failed"):
        probe_runs.create_probe_run(instrumented, [*choose(["padding"]), BROKEN], mode="in_process")
    assert not ProbeRun.objects.exists() and not JudgeRun.objects.exists() and not ProbedOutput.objects.exists()


def test_a_probe_that_applies_to_no_output_is_an_empty_arm_already_done(instrumented):
    rv = instrumented.rubric_version
    scope = make_scope(instrumented.judge_config, responses=["Refund done, no figures."], rubric=rv)
    probe_run = probe_in_process(scope, ["wrong_amount"])
    arm = probe_run.judge_runs.get(probe="wrong_amount")
    assert (arm.status, arm.total_items) == ("done", 0)
    cell = results_of(probe_run).criterion("correct_amount").cell("wrong_amount")
    assert cell.pairs == 0 and cell.warnings == ()


def test_the_status_of_a_probe_run_is_read_from_its_arms():
    s = probe_runs.status_from
    assert s(["queued", "queued"]) == "queued"
    assert s(["done", "queued"]) == "running" and s(["running", "failed"]) == "running"
    assert s(["done", "failed", "cancelled"]) == "failed" and s(["done", "cancelled"]) == "cancelled"
    assert s(["done", "done"]) == "done"


def test_cancelling_a_probe_run_cancels_every_arm_still_going(instrumented):
    probe_run = probe_runs.create_probe_run(instrumented, choose(["padding", "sycophancy"]), mode="in_process")
    assert probe_runs.cancel_probe_run(probe_run)
    assert set(probe_run.judge_runs.values_list("status", flat=True)) == {"cancelled"}
    assert not probe_runs.cancel_probe_run(probe_run)
    assert probe_runs.status_of(probe_run) == "cancelled"


# -- through the real SDK against the fake server ------------------------------------------------------------


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_judge_that_passes_whatever_carries_the_injection_line_is_caught(fake_llm, judge_key, backend):
    fake_llm.gullible = transforms.INJECTION_LINE
    judge = make_llm_judge(fake_llm, backend=backend)
    failing = [f"{RESPONSE} [[fake:all=FAIL]]"] * 4
    scope = make_scope(judge, responses=[RESPONSE] * 3 + failing)
    probe_run = probe_in_process(scope, ["injection", "sycophancy"])
    results = results_of(probe_run)
    cell = results.criterion("correct_amount").cell("injection")
    assert counts(cell) == (0, 3, 4, 4)  # every failing output passed once the line was there
    assert results.criterion("correct_amount").warning_codes == ["fooled_by_injection"]
    assert counts(results.criterion("correct_amount").cell("sycophancy")) == (0, 3, 0, 4)
    # The line reached the judge inside the RESPONSE block, its markers broken up: it stayed frames.
    injected = [r for r in fake_llm.requests if transforms.INJECTION_LINE in str(r.body)]
    assert len(injected) == 7
    text = str(injected[0].body)
    assert "< < <END RESPONSE> > >" in text and text.count("<<<END RESPONSE>>>") == 1


def test_a_judge_that_ignores_the_injection_line_is_not_flagged(fake_llm, judge_key):
    # Negative control of the test above: the same data, a judge the line does not move.
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[RESPONSE] * 3 + [f"{RESPONSE} [[fake:all=FAIL]]"] * 4)
    results = results_of(probe_in_process(scope, ["injection"]))
    assert counts(results.criterion("correct_amount").cell("injection")) == (0, 3, 0, 4)
    assert results.criterion("correct_amount").warnings == ()


def test_a_probed_transcript_is_a_new_request_and_an_unchanged_probe_run_calls_no_model(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[f"Reply {i}: a refund of $40.00 is on its way." for i in range(4)])
    judge_in_process(scope)
    assert fake_llm.calls == 4
    fake_llm.reset()
    probe_run = probe_in_process(scope, ["padding"])
    original = probe_run.judge_runs.get(probe="original")
    assert RunItem.objects.filter(run=original, cache_hit=True).count() == 4  # asked before: from the cache
    assert fake_llm.calls == 4  # the padded ones were not
    fake_llm.reset()
    again = probe_in_process(scope, ["padding"])
    assert fake_llm.calls == 0 and probe_runs.progress_of(again).arms[1].cache_hits == 4


def test_the_judges_quote_is_checked_against_the_transcript_it_was_shown(fake_llm, judge_key):
    # The fake quotes the first words of the RESPONSE block: in the padding arm, words only the padded text has.
    scope = make_scope(make_llm_judge(fake_llm), responses=[RESPONSE])
    probe_run = probe_in_process(scope, ["padding"])
    padded = Verdict.objects.filter(run__probe_run=probe_run, probe="padding").first()
    assert padded.evidence == "Thank you so much for reaching" and padded.evidence_found is True


def test_the_concurrency_bound_holds_for_a_probe_run(fake_llm, judge_key):
    fake_llm.latency_s = 0.1
    scope = make_scope(make_llm_judge(fake_llm, max_concurrency=2), responses=[f"Reply {i}." for i in range(6)])
    probe_run = probe_in_process(scope, ["padding", "sycophancy"])
    assert probe_runs.status_of(probe_run) == "done" and fake_llm.calls == 18
    assert fake_llm.max_in_flight <= 2


def test_pairs_of_one_probe_and_criterion_come_from_its_two_arms(instrumented):
    probe_run = probe_in_process(instrumented, ["padding"])
    criterion = instrumented.rubric_version.criteria.get(key="substance")
    pairs = pairs_of(probe_run, "padding", criterion.pk)
    assert len(pairs) == 10 and {(a, b) for _, a, b in pairs} == {("FAIL", "PASS")}
    assert pairs_of(probe_run, "wrong_amount", criterion.pk) == []  # not a probe of this run
