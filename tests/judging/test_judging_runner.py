"""Judge runs in one process against the fake server with the real SDK: outcomes, retries, cache, bounds.

The in-process path is the same code a Celery lane runs (tests/judging/test_judging_celery.py covers the worker).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evals.models import Criterion
from judging import retry, runner
from judging.backends import Misconfigured
from judging.lane import work_lane
from judging.models import JudgeRun, RunItem, Verdict
from judging.run_progress import progress_of
from tests.factories import (
    RESPONSE,
    default_workspace,
    make_eval_set,
    make_judge,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_scope,
    make_workspace,
)
from tests.judging_helpers import KEY_ENV, KEY_VALUE, Sleeps, judge_in_process

# Lane threads use their own database connections: the data must be committed for them to see it.
pytestmark = pytest.mark.django_db(transaction=True)


def verdicts(run, output=None):
    qs = Verdict.objects.filter(run=run).select_related("criterion", "output__case")
    if output is not None:
        qs = qs.filter(output=output)
    return list(qs.order_by("output__case__case_id", "criterion__order", "sample"))


def by_case(run) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for v in verdicts(run):
        out.setdefault(v.output.case.case_id, []).append((v.criterion.key, v.outcome))
    return out


# -- outcomes -------------------------------------------------------------------------------------------


def test_every_criterion_gets_a_verdict_with_its_provenance(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[RESPONSE, "No refund for you. [[fake:all=FAIL]]"])
    run = judge_in_process(scope)
    assert run.status == "done" and run.started_at and run.finished_at
    assert by_case(run) == {
        "case-001": [("correct_amount", "PASS"), ("next_step", "PASS")],
        # Negative control: the same judge can say FAIL.
        "case-002": [("correct_amount", "FAIL"), ("next_step", "FAIL")],
    }
    v = verdicts(run)[0]
    assert v.judge_config == judge and v.judge_config_hash == judge.content_hash
    assert v.model_id == "judge-model-2026-01" and v.rubric_version == scope.rubric_version
    assert v.evidence == "I have issued a refund of" and v.evidence_found is True
    assert '"verdict": "PASS"' in v.raw_output
    assert v.latency_ms is not None and v.tokens_in > 0 and v.tokens_out > 0 and v.attempts == 1
    assert v.cache_hit is False and v.created_at is not None and len(v.request_hash) == 64
    assert fake_llm.calls == 2  # per-output mode: one call grades both criteria


@pytest.mark.parametrize(
    ("token", "expected", "reason"),
    [
        ("[[fake:malformed]]", [("correct_amount", "ERROR"), ("next_step", "ERROR")], "is not valid JSON"),
        ("[[fake:empty]]", [("correct_amount", "ERROR"), ("next_step", "ERROR")], "empty answer"),
        ("[[fake:missing]]", [("correct_amount", "PASS"), ("next_step", "ERROR")], "skipped this criterion"),
        ("[[fake:unknown_verdict]]", [("correct_amount", "ERROR"), ("next_step", "PASS")], '"MAYBE" is not one of'),
        ("[[fake:extra]]", [("correct_amount", "PASS"), ("next_step", "PASS")], None),
        ("[[fake:refusal]]", [("correct_amount", "ERROR"), ("next_step", "ERROR")], "the judge refused"),
        ("[[fake:next_step=NOT_APPLICABLE]]", [("correct_amount", "PASS"), ("next_step", "NOT_APPLICABLE")], None),
        ("[[fake:correct_amount=ABSTAIN]]", [("correct_amount", "ABSTAIN"), ("next_step", "PASS")], None),
    ],
)
@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_what_the_judge_answers_becomes_one_of_five_outcomes(fake_llm, judge_key, backend, token, expected, reason):
    run = judge_in_process(make_scope(make_llm_judge(fake_llm, backend=backend), responses=[f"{RESPONSE} {token}"]))
    assert run.status == "done"
    assert by_case(run)["case-001"] == expected
    for v in verdicts(run):
        # Kept whatever the judge said, even when nothing in it was usable (an empty answer is empty).
        assert v.raw_output or token == "[[fake:empty]]"
        if v.outcome == "ERROR":
            assert reason in v.error_reason and v.evidence_found is None
    assert fake_llm.calls == 1  # an answer, however bad, is not retried


def test_a_quote_that_is_not_in_the_transcript_is_flagged_and_counted(fake_llm, judge_key):
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=[RESPONSE, f"{RESPONSE} [[fake:badquote]]"]))
    flags = {(v.output.case.case_id, v.criterion.key): v.evidence_found for v in verdicts(run)}
    assert flags == {
        ("case-001", "correct_amount"): True,
        ("case-001", "next_step"): True,
        ("case-002", "correct_amount"): False,
        ("case-002", "next_step"): False,
    }
    assert progress_of(run).evidence_not_found == 2


def test_a_nul_character_in_the_answer_is_stored_replaced_not_refused(fake_llm, judge_key):
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=[f"{RESPONSE} [[fake:nul]]"]))
    assert run.status == "done" and fake_llm.calls == 1
    v = verdicts(run)[0]
    assert v.outcome == "PASS" and v.evidence == "refund\ufffdof" and v.evidence_found is False


def test_an_item_that_keeps_failing_to_be_written_fails_the_run_saying_so(fake_llm, judge_key):
    scope = make_scope(make_llm_judge(fake_llm), responses=[RESPONSE])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    RunItem.objects.filter(run=run).update(claims=5)  # five lanes took it and none ever wrote it
    assert runner.run_in_process(run) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and fake_llm.calls == 0
    assert "case case-001) was claimed 6 times without its verdicts being written" in run.error
    # Not an ERROR verdict: the judge was never asked. The item waits, pending, for a run that can write it.
    assert verdicts(run) == []
    assert RunItem.objects.filter(run=run, state="pending", claims=5).count() == 1


# -- retries --------------------------------------------------------------------------------------------


def test_429_is_retried_after_retry_after_then_succeeds(fake_llm, judge_key):
    fake_llm.retry_after = "0.5"
    sleeps = Sleeps()
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=[f"{RESPONSE} [[fake:429x2]]"]), sleep=sleeps)
    assert by_case(run)["case-001"] == [("correct_amount", "PASS"), ("next_step", "PASS")]
    assert fake_llm.calls == 3
    assert verdicts(run)[0].attempts == 3
    # Never earlier than the server asked, at most 10% later (the jitter); and not shorter than the
    # exponential backoff of that attempt (0.25-0.5 s, then 0.5-1 s).
    assert len(sleeps.calls) == 2
    assert 0.5 <= sleeps.calls[0] <= 0.55 and 0.5 <= sleeps.calls[1] <= 1.0
    assert RunItem.objects.get(run=run).model_calls == 3


def test_500_and_timeouts_are_retried_with_growing_backoff_then_error(fake_llm, judge_key):
    sleeps = Sleeps()
    judge = make_llm_judge(fake_llm, max_retries=3)
    run = judge_in_process(make_scope(judge, responses=[f"{RESPONSE} [[fake:500]]"]), sleep=sleeps)
    assert [o for _, o in by_case(run)["case-001"]] == ["ERROR", "ERROR"]
    v = verdicts(run)[0]
    assert v.error_kind == "server" and v.error_reason.startswith("HTTP 500")
    assert v.error_reason.endswith("(gave up after 4 attempts)")
    assert fake_llm.calls == 4 and v.attempts == 4
    # Equal jitter: attempt n waits between half and all of 0.5 * 2**n seconds.
    assert [(0.5 * 2**n) / 2 <= s <= 0.5 * 2**n for n, s in enumerate(sleeps.calls)] == [True] * 3


def test_a_slow_judge_times_out_into_error(fake_llm, judge_key):
    fake_llm.slow_s = 2.0
    judge = make_llm_judge(fake_llm, timeout_s=0.3, max_retries=1)
    run = judge_in_process(
        make_scope(judge, responses=[f"{RESPONSE} [[fake:slowx1]]", f"{RESPONSE} [[fake:slow]]"]), sleep=Sleeps()
    )
    result = by_case(run)
    assert result["case-001"] == [("correct_amount", "PASS"), ("next_step", "PASS")]  # the retry got through
    assert result["case-002"] == [("correct_amount", "ERROR"), ("next_step", "ERROR")]
    error = [v for v in verdicts(run) if v.outcome == "ERROR"][0]
    assert error.error_kind == "timeout"
    assert error.error_reason == "no answer within 0.3 s (gave up after 2 attempts)"
    assert run.status == "done"  # ERROR is a verdict: the run is complete


def test_a_retry_after_longer_than_a_run_waits_is_error_at_once(fake_llm, judge_key):
    fake_llm.retry_after = "3600"
    sleeps = Sleeps()
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=[f"{RESPONSE} [[fake:429]]"]), sleep=sleeps)
    v = verdicts(run)[0]
    assert v.outcome == "ERROR" and v.error_kind == "rate_limit"
    assert "asked to wait 3600 s, longer than the 120 s a run waits" in v.error_reason
    assert fake_llm.calls == 1 and sleeps.calls == []


def test_backoff_delay_bounds():
    rng = random.Random(7)
    # Worked by hand: 0.5 s doubling, capped at 30 s: attempt 0 -> [0.25, 0.5], 3 -> [2, 4], 6 and later -> [15, 30].
    expected = {0: (0.25, 0.5), 1: (0.5, 1.0), 3: (2.0, 4.0), 6: (15.0, 30.0), 11: (15.0, 30.0)}
    for attempt, (low, high) in expected.items():
        delays = [retry.backoff_delay(attempt, None, rng) for _ in range(200)]
        assert low <= min(delays) and max(delays) <= high
        assert max(delays) - min(delays) > (high - low) / 2  # jittered, not constant
    # Retry-After wins when it is longer, and is never cut short.
    assert 10 <= retry.backoff_delay(0, 10.0, rng) <= 11
    assert retry.backoff_delay(6, 0.0, rng) >= 15  # exponential backoff wins over a zero Retry-After


# -- cache ----------------------------------------------------------------------------------------------


def test_an_unchanged_rerun_makes_no_model_call(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[RESPONSE, f"{RESPONSE} [[fake:all=FAIL]]", f"{RESPONSE} [[fake:missing]]"])
    first = judge_in_process(scope)
    assert fake_llm.calls == 3
    fake_llm.reset()
    second = judge_in_process(scope)
    assert fake_llm.calls == 0
    assert by_case(second) == by_case(first)
    again = verdicts(second)
    assert all(v.cache_hit for v in again) and {v.attempts for v in again} == {0}
    assert [v.raw_output for v in again] == [v.raw_output for v in verdicts(first)]
    progress = progress_of(second)
    assert progress.cache_hits == 6 and progress.model_calls == 0 and progress.tokens_in == 0


def test_a_changed_judge_or_rubric_or_output_never_hits_an_old_entry(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[RESPONSE, "Another reply."])
    judge_in_process(scope)
    fake_llm.reset()
    # Another model id: another judge config hash.
    other_model = make_llm_judge(fake_llm, name="judge-b", model_id="judge-model-2026-02")
    judge_in_process(runner.Scope(scope.eval_set, scope.rubric_version, other_model))
    assert fake_llm.calls == 2
    fake_llm.reset()
    # A rubric version with one definition changed.
    criteria = [c.as_dict() for c in scope.rubric_version.criteria.order_by("order")]
    criteria[1]["definition"] = "Says when the money arrives."
    edited = make_rubric_version(name=scope.rubric_version.rubric.name, version="2", criteria=criteria)
    judge_in_process(runner.Scope(scope.eval_set, edited, judge))
    assert fake_llm.calls == 2
    fake_llm.reset()
    # One output changed (a new agent version's answer): only it is asked.
    make_output(scope.eval_set, case_id="case-001", agent_version="v2", response="Refunded $40.00 just now.")
    judge_in_process(scope)
    assert fake_llm.calls == 1


def test_transport_failures_are_not_cached(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm, max_retries=0)
    scope = make_scope(judge, responses=[f"{RESPONSE} [[fake:500]]"])
    judge_in_process(scope)
    fake_llm.reset()
    judge_in_process(scope)
    assert fake_llm.calls == 1  # asked again: a 500 says nothing about the request


# -- modes, samples, instruments --------------------------------------------------------------------------


def test_per_criterion_mode_asks_one_question_per_call(fake_llm, judge_key):
    run = judge_in_process(make_scope(make_llm_judge(fake_llm, mode="per_criterion"), responses=[RESPONSE]))
    assert fake_llm.calls == 2
    asked = [
        r.body["response_format"]["json_schema"]["schema"]["properties"]["criteria"]["items"]["properties"][
            "criterion"
        ]["enum"]
        for r in fake_llm.requests
    ]
    assert sorted(asked) == [["correct_amount"], ["next_step"]]
    assert run.total_items == 2 and run.expected_verdicts == 2 and len(verdicts(run)) == 2


def test_every_sample_is_stored(fake_llm, judge_key):
    run = judge_in_process(make_scope(make_llm_judge(fake_llm, samples=3, temperature=0.7), responses=[RESPONSE]))
    assert fake_llm.calls == 3
    assert [(v.criterion.key, v.sample) for v in verdicts(run)] == [
        ("correct_amount", 0),
        ("correct_amount", 1),
        ("correct_amount", 2),
        ("next_step", 0),
        ("next_step", 1),
        ("next_step", 2),
    ]


INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": r"within \d+ business days", "ignore_case": True},
}


def test_an_instrument_judge_runs_with_no_model_at_all(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    judge = make_llm_judge(name="instruments", backend="instrument", instruments=INSTRUMENTS)
    run = judge_in_process(make_scope(judge, responses=[RESPONSE, "I refunded $45.00.", "Refund done. $40.00"]))
    assert by_case(run) == {
        "case-001": [("correct_amount", "PASS"), ("next_step", "PASS")],
        "case-002": [("correct_amount", "FAIL"), ("next_step", "FAIL")],
        "case-003": [("correct_amount", "PASS"), ("next_step", "FAIL")],
    }
    v = verdicts(run)[0]
    assert v.evidence == "$40.00" and v.evidence_found is True
    assert v.model_id == "instrument:reference_values_contained" and '"pattern"' in v.raw_output


def test_instruments_and_a_model_share_one_config(fake_llm, judge_key):
    # The least interpretive instrument first: the model is asked only about what no instrument covers.
    judge = make_llm_judge(fake_llm, instruments={"correct_amount": INSTRUMENTS["correct_amount"]})
    run = judge_in_process(make_scope(judge, responses=["I refunded $45.00."]))
    assert by_case(run)["case-001"] == [("correct_amount", "FAIL"), ("next_step", "PASS")]
    schema = fake_llm.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["criteria"]["items"]["properties"]["criterion"]["enum"] == ["next_step"]
    assert "correct_amount" not in fake_llm.requests[0].body["messages"][1]["content"]


# -- concurrency, leases, idempotency, cancelling ---------------------------------------------------------


def test_calls_in_flight_never_exceed_the_bound(fake_llm, judge_key):
    fake_llm.latency_s = 0.15
    judge = make_llm_judge(fake_llm, max_concurrency=3)
    run = judge_in_process(make_scope(judge, responses=[f"Reply {i}." for i in range(12)]))
    assert run.status == "done" and fake_llm.calls == 12
    assert 2 <= fake_llm.max_in_flight <= 3


def test_the_redis_limiter_bounds_calls_across_lanes(fake_llm, judge_key):
    from judging.limiter import RedisLimiter, limiter_for

    fake_llm.latency_s = 0.15
    judge = make_llm_judge(fake_llm, max_concurrency=2)
    scope = make_scope(judge, responses=[f"Reply {i}." for i in range(10)])
    run = runner.create_run(scope, mode=JudgeRun.Mode.CELERY)
    JudgeRun.objects.filter(pk=run.pk).update(status="running")
    assert isinstance(limiter_for(judge, in_process=False), RedisLimiter)

    def lane() -> None:
        try:
            work_lane(run.pk, limiter=limiter_for(judge, in_process=False))
        finally:
            connection.close()

    # Three lanes of one thread each (a Celery lane has half the bound) with their own limiter objects, as
    # three workers would run them: one more caller than the bound allows.
    lanes = [threading.Thread(target=lane) for _ in range(3)]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join(timeout=60)
    run.refresh_from_db()
    assert run.status == "done" and fake_llm.calls == 10
    assert fake_llm.max_in_flight <= 2


def test_an_item_whose_lane_died_is_taken_again_and_written_once(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge, responses=[RESPONSE, "Second reply."])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    first = RunItem.objects.filter(run=run).order_by("pk").first()
    # A lane claimed the first item and died: its lease ran out a second ago.
    RunItem.objects.filter(pk=first.pk).update(
        state="claimed", lane="dead-host:1:abc", lease_until=timezone.now() - timedelta(seconds=1), claims=1
    )
    runner.run_in_process(run)
    run.refresh_from_db()
    assert run.status == "done" and len(verdicts(run)) == 4
    first.refresh_from_db()
    assert first.state == "done" and first.claims == 2


def test_a_group_that_cannot_be_written_goes_back_to_pending_and_is_judged_again(fake_llm, judge_key, monkeypatch):
    from django.db import OperationalError

    from judging.models import Verdict as VerdictModel

    real_bulk_create = VerdictModel.objects.bulk_create
    failures = []

    def fail_once(objs, **kwargs):
        if not failures:
            failures.append(len(objs))
            raise OperationalError("could not serialize access due to concurrent update")
        return real_bulk_create(objs, **kwargs)

    monkeypatch.setattr(VerdictModel.objects, "bulk_create", fail_once)
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=[RESPONSE]))
    assert failures == [2]  # the first write (both verdicts of the item) failed, and nothing of it stayed
    assert run.status == "done" and len(verdicts(run)) == 2 and fake_llm.calls == 2  # asked again, written once
    item = RunItem.objects.get(run=run)
    assert item.state == "done" and item.claims == 2 and item.model_calls == 1  # the lost call was never counted


def test_a_lane_that_loses_the_database_is_run_again_by_celery(monkeypatch):
    from django.db import OperationalError

    from judging import tasks

    attempts = []

    def flaky_lane(run_id):
        attempts.append(run_id)
        if len(attempts) < 3:
            raise OperationalError("server closed the connection unexpectedly")
        return "done"

    monkeypatch.setattr("judging.lane.work_lane", flaky_lane)
    assert tasks.run_lane.apply(args=(41,)).get() == "done"  # eagerly here; a worker retries with a backoff
    assert attempts == [41, 41, 41]


def test_an_item_worked_twice_writes_its_verdicts_once(fake_llm, judge_key):
    scope = make_scope(make_llm_judge(fake_llm), responses=[RESPONSE])
    run = judge_in_process(scope)
    before = [(v.pk, v.outcome, v.raw_output) for v in verdicts(run)]
    # A second delivery of the same work (a lane that lost its lease while its call was in flight):
    # the model is asked again, and the unique (run, output, criterion, sample) keeps the first write.
    RunItem.objects.filter(run=run).update(state="pending")
    JudgeRun.objects.filter(pk=run.pk).update(status="running")
    runner.run_in_process(run)
    assert fake_llm.calls == 2
    assert [(v.pk, v.outcome, v.raw_output) for v in verdicts(run)] == before
    assert RunItem.objects.get(run=run).model_calls == 2  # both calls were paid for, and are counted


def test_cancelling_stops_the_run_and_keeps_what_was_written(fake_llm, judge_key):
    fake_llm.latency_s = 0.2
    judge = make_llm_judge(fake_llm, max_concurrency=1)
    scope = make_scope(judge, responses=[f"Reply {i}." for i in range(30)])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)

    def work() -> None:
        try:
            runner.run_in_process(run)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 30
    while Verdict.objects.filter(run=run).count() < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.cancel_run(run)
    worker.join(timeout=30)
    assert not worker.is_alive()
    run.refresh_from_db()
    written = Verdict.objects.filter(run=run).count()
    assert run.status == "cancelled" and 4 <= written < 60
    assert fake_llm.calls < 30
    assert not runner.cancel_run(run)  # already ended


# -- misconfiguration and secrets ---------------------------------------------------------------------------


def test_misconfigurations_are_refused_before_anything_is_written(fake_llm, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    judge = make_llm_judge(fake_llm)
    scope = make_scope(judge)
    with pytest.raises(Misconfigured, match=f"{KEY_ENV} that should hold its API key is not set"):
        runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    partial = make_llm_judge(name="partial", backend="instrument", instruments={"next_step": INSTRUMENTS["next_step"]})
    with pytest.raises(Misconfigured, match="has none for correct_amount"):
        runner.create_run(runner.Scope(scope.eval_set, scope.rubric_version, partial), mode="in_process")
    imported = make_llm_judge(name="elsewhere", backend="imported")
    with pytest.raises(Misconfigured, match="imported from elsewhere and cannot run"):
        runner.create_run(runner.Scope(scope.eval_set, scope.rubric_version, imported), mode="in_process")
    complete = make_llm_judge(name="complete", backend="instrument", instruments=INSTRUMENTS)
    with pytest.raises(Misconfigured, match="has no outputs to judge"):
        runner.create_run(runner.Scope(make_eval_set(), scope.rubric_version, complete), mode="in_process")
    with pytest.raises(Misconfigured, match="no outputs of agent version 'v9' \\(known: default\\)"):
        runner.create_run(runner.Scope(scope.eval_set, scope.rubric_version, complete, "v9"), mode="in_process")
    assert not JudgeRun.objects.exists() and not RunItem.objects.exists()


def test_names_are_resolved_with_helpful_messages():
    rv = make_rubric_version(name="refund", version="1")
    make_eval_set("set-a")
    make_llm_judge(name="j1", backend="instrument", instruments={"x": {"kind": "max_length", "max_chars": 5}})
    with pytest.raises(Misconfigured, match="no eval set named 'nope' \\(known: set-a\\)"):
        runner.resolve(workspace=default_workspace(), eval_set="nope", rubric="refund@1", judge="j1")
    with pytest.raises(Misconfigured, match="must be written NAME@VERSION"):
        runner.resolve(workspace=default_workspace(), eval_set="set-a", rubric="refund", judge="j1")
    with pytest.raises(Misconfigured, match="rubric 'refund' has no version '2' \\(known: 1\\)"):
        runner.resolve(workspace=default_workspace(), eval_set="set-a", rubric="refund@2", judge="j1")
    with pytest.raises(Misconfigured, match="no judge config named 'j2' \\(known: j1\\)"):
        runner.resolve(workspace=default_workspace(), eval_set="set-a", rubric="refund@1", judge="j2")
    assert (
        runner.resolve(workspace=default_workspace(), eval_set="set-a", rubric="refund@1", judge="j1").rubric_version
        == rv
    )


def test_names_of_another_workspace_are_unknown_and_not_listed():
    # The same three names in another workspace: looked up from the default workspace they do not exist, and
    # the messages list only the default workspace's names (here: none yet).
    other = make_workspace("other")
    make_rubric_version(name="refund", version="1", workspace=other)
    make_eval_set("set-a", workspace=other)
    make_judge("j1", workspace=other)
    home = default_workspace()
    with pytest.raises(Misconfigured, match="^no eval set named 'set-a' \\(there are none yet\\)$"):
        runner.resolve(workspace=home, eval_set="set-a", rubric="refund@1", judge="j1")
    make_eval_set("mine")
    with pytest.raises(Misconfigured, match="^there is no rubric 'refund' \\(there are none yet\\)$"):
        runner.resolve(workspace=home, eval_set="mine", rubric="refund@1", judge="j1")
    make_rubric_version(name="mine", version="1")
    with pytest.raises(Misconfigured, match="^no judge config named 'j1' \\(there are none yet\\)$"):
        runner.resolve(workspace=home, eval_set="mine", rubric="mine@1", judge="j1")
    # Negative control: from the other workspace the same names resolve to its rows.
    scope = runner.resolve(workspace=other, eval_set="set-a", rubric="refund@1", judge="j1")
    assert scope.eval_set.workspace == other and scope.judge_config.workspace == other


def test_a_worker_without_the_key_fails_the_run_with_a_clear_message(fake_llm, monkeypatch):
    judge = make_llm_judge(fake_llm)
    run = runner.create_run(make_scope(judge), mode=JudgeRun.Mode.CELERY, check_api_key=False)
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert work_lane(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and f"{KEY_ENV} that should hold its API key is not set" in run.error


def test_the_key_never_reaches_verdicts_or_logs(fake_llm, judge_key, caplog):
    caplog.set_level(logging.DEBUG)
    responses = [RESPONSE, f"{RESPONSE} [[fake:401echo]]", f"{RESPONSE} [[fake:malformed]]", "x [[fake:429x1]]"]
    fake_llm.retry_after = "0"
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), responses=responses), sleep=Sleeps())
    assert any(KEY_VALUE in r.headers.get("authorization", "") for r in fake_llm.requests)  # it was used
    rejected = [v for v in verdicts(run) if v.error_kind == "rejected"]
    assert rejected and "[redacted]" in rejected[0].error_reason
    for v in Verdict.objects.filter(run=run).values():
        assert KEY_VALUE not in str(v)
    assert caplog.records and KEY_VALUE not in caplog.text
    assert KEY_VALUE not in str(list(JudgeRun.objects.values())) + str(list(RunItem.objects.values()))


def test_criteria_are_read_in_rubric_order_even_when_created_out_of_order(fake_llm, judge_key):
    rv = make_rubric_version(criteria=[])
    Criterion.objects.create(rubric_version=rv, key="second", definition="b", order=2)
    Criterion.objects.create(rubric_version=rv, key="first", definition="a", order=1)
    run = judge_in_process(make_scope(make_llm_judge(fake_llm), rubric=rv, responses=[f"{RESPONSE} [[fake:missing]]"]))
    assert by_case(run)["case-001"] == [("first", "PASS"), ("second", "ERROR")]
