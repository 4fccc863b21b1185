"""One update of a watch (watch/feed.py) on PostgreSQL: the draw, the judge's verdicts, the release to annotators,
gold, and the statistics fed in arrival order. The judge's verdicts are written by the test into the run the watch
planned (its lanes are never sent here: tests/watch/test_watch_celery.py runs them on a worker)."""

from __future__ import annotations

import pytest

from alerts import delivery as alerts_delivery
from alerts.messages import AlertMessage
from alerts.models import AlertDelivery, AlertDestination
from calibration.stats.watch import AuditedOutput, Outputs, WatchSettings, replay
from evals.models import Output
from judging.models import JudgeRun
from labeling.models import AuditOrderItem
from periodic.jobs import JOBS
from tests.factories import add_verdict, adjudicate, all_answers, annotate_directly, make_user
from tests.watch_helpers import KEY, alarm_row, arrive, watched_set
from watch import feed, notify, tasks
from watch.models import Watch, WatchAlarm, WatchOutput, WatchPoint
from watch.starting import start, stop

pytestmark = pytest.mark.django_db


class _NeverDrawn:
    """A draw above every audit share below 1: no output goes to the audit unless the test says so."""

    def random(self) -> float:
        return 0.999999


@pytest.fixture(autouse=True)
def drawn_by_the_test(request, monkeypatch):
    if "draw" not in request.node.name:
        monkeypatch.setattr(feed, "_random", _NeverDrawn())


def _watch(w, **settings) -> Watch:
    settings.setdefault("audit_share", 0.01)
    return start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, **settings)


def _update(watch: Watch) -> str | None:
    said = feed.update_locked(watch.pk)
    watch.refresh_from_db()
    return said


def _audit_only(watch: Watch, positions: set[int]) -> None:
    """The test decides which outputs were drawn (the draw itself has its own test)."""
    WatchOutput.objects.filter(watch=watch).update(audited=False)
    WatchOutput.objects.filter(watch=watch, position__in=positions).update(audited=True)


def _judge(watch: Watch, outcomes: list[str]) -> None:
    """The judge's verdicts on the watch's outputs not yet judged, in arrival order, written into the run the watch
    planned for them."""
    waiting = WatchOutput.objects.filter(watch=watch, verdict="").order_by("position")
    rows = list(waiting.select_related("output", "judge_run"))
    assert len(rows) == len(outcomes) and all(r.judge_run for r in rows)
    for row, outcome in zip(rows, outcomes, strict=True):
        add_verdict(row.judge_run, row.output, KEY, outcome)
    JudgeRun.objects.filter(pk__in={r.judge_run_id for r in rows}).update(status=JudgeRun.Status.DONE)


def _settings(watch: Watch) -> WatchSettings:
    return WatchSettings(
        minimum=watch.minimum,
        audit_share=watch.audit_share,
        tpr_lower=watch.tpr_lower,
        tnr_lower=watch.tnr_lower,
        alpha=watch.alpha,
    )


def test_each_arriving_output_gets_one_stored_draw_before_anything_is_known_of_it(fake_llm):
    w = watched_set(fake_llm)
    before = arrive(w.production, 3)  # there before the start: not watched
    watch = _watch(w, audit_share=0.3)
    arrived = arrive(w.production, 400)
    assert feed.enroll(watch) == 400
    rows = list(WatchOutput.objects.filter(watch=watch).order_by("position"))
    assert [r.output_id for r in rows] == [o.pk for o in arrived]  # arrival order
    assert [r.position for r in rows] == list(range(1, 401))
    assert not WatchOutput.objects.filter(output__in=before).exists()
    assert all(r.audited == (r.draw < 0.3) and 0 <= r.draw < 1 for r in rows)
    assert all(r.judge_run_id is None and r.verdict == "" for r in rows)  # drawn before any verdict
    # Binomial(400, 0.3): mean 120, sd 9.2; outside 80..160 with probability below 1e-5.
    assert 80 <= sum(r.audited for r in rows) <= 160
    assert len({r.draw for r in rows}) == 400
    # Drawn once: a second update draws nothing and changes no draw.
    assert feed.enroll(watch) == 0
    assert [(r.pk, r.draw) for r in WatchOutput.objects.filter(watch=watch).order_by("position")] == [
        (r.pk, r.draw) for r in rows
    ]


def test_an_update_reads_only_what_lies_above_its_cursor_less_the_late_window(fake_llm, monkeypatch):
    monkeypatch.setattr(feed, "LATE_IDS", 3)
    w = watched_set(fake_llm)
    watch = _watch(w)
    arrived = arrive(w.production, 10)
    assert feed.enroll(watch) == 10
    assert watch.drawn_through == arrived[-1].pk
    # Two outputs the update had not seen (as if they committed after it): the one within 3 ids of the newest
    # drawn is drawn now, at the end of the arrival order; the one further behind is out of the window.
    late = [arrived[8], arrived[2]]
    WatchOutput.objects.filter(watch=watch, output__in=late).delete()
    newer = arrive(w.production, 2)
    assert feed.enroll(watch) == 3
    rows = WatchOutput.objects.filter(watch=watch).order_by("position")
    assert list(rows.values_list("output_id", flat=True))[-3:] == [arrived[8].pk, newer[0].pk, newer[1].pk]
    assert not rows.filter(output=arrived[2]).exists()
    assert watch.drawn_through == newer[-1].pk
    # Negative control: from the start (a window as long as the history) it is drawn too.
    monkeypatch.setattr(feed, "LATE_IDS", 10**9)
    assert feed.enroll(watch) == 1 and rows.filter(output=arrived[2]).exists()


def test_error_and_cant_tell_verdicts_are_unjudged_never_fail(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    arrive(w.production, 5)
    _update(watch)
    _audit_only(watch, set())
    assert WatchOutput.objects.filter(watch=watch, judge_run__isnull=False).count() == 5  # one run planned
    _judge(watch, ["PASS", "ERROR", "FAIL", "ABSTAIN", "NOT_APPLICABLE"])
    _update(watch)
    verdicts = list(WatchOutput.objects.filter(watch=watch).order_by("position").values_list("verdict", flat=True))
    assert verdicts == ["PASS", "unjudged", "FAIL", "unjudged", "unjudged"]
    assert (watch.outputs_fed, watch.labels_fed) == (5, 0)
    expected, _, _ = replay(_settings(watch), [Outputs(passes=1, fails=1, unjudged=3)])
    assert watch.state == expected.to_json()


def test_a_run_that_ended_without_a_verdict_leaves_the_output_unjudged(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    arrive(w.production, 2)
    _update(watch)
    _audit_only(watch, set())
    JudgeRun.objects.filter(eval_set=w.production).update(status=JudgeRun.Status.FAILED)
    _update(watch)
    assert set(WatchOutput.objects.filter(watch=watch).values_list("verdict", flat=True)) == {"unjudged"}
    assert watch.outputs_fed == 2


def test_a_verdict_still_coming_holds_the_output_and_those_behind_it(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    outputs = arrive(w.production, 3)
    _update(watch)
    _audit_only(watch, set())
    run = WatchOutput.objects.filter(watch=watch).first().judge_run  # still queued: the judge is at it
    add_verdict(run, outputs[0], KEY, "PASS")
    add_verdict(run, outputs[2], KEY, "PASS")
    _update(watch)
    assert watch.outputs_fed == 1
    assert list(WatchOutput.objects.filter(watch=watch, fed=True).values_list("position", flat=True)) == [1]


def test_audited_outputs_go_to_the_queue_and_pending_gold_holds_back_in_arrival_order(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    outputs = arrive(w.production, 3)
    _update(watch)
    _audit_only(watch, {2})
    WatchOutput.objects.filter(watch=watch).update(released=False)
    _judge(watch, ["PASS", "PASS", "PASS"])
    _update(watch)
    # The drawn output is released in the eval set's labeling queue; the others are not in it at all.
    items = AuditOrderItem.objects.filter(order__queue__eval_set=w.production)
    assert list(items.values_list("output_id", "released")) == [(outputs[1].pk, True)]
    assert watch.outputs_fed == 1  # the first; the drawn one waits for gold, and the third behind it
    # One label is not gold (a lone label never is): still held.
    ann_a, ann_b = make_user("wa"), make_user("wb")
    annotate_directly(outputs[1], w.rubric_version, ann_a, all_answers(w.rubric_version, "FAIL"))
    _update(watch)
    assert watch.outputs_fed == 1
    annotate_directly(outputs[1], w.rubric_version, ann_b, all_answers(w.rubric_version, "FAIL"))
    _update(watch)
    assert (watch.outputs_fed, watch.labels_fed) == (3, 1)
    assert WatchOutput.objects.get(watch=watch, position=2).gold == "FAIL"
    expected, points, _ = replay(
        _settings(watch),
        [Outputs(passes=1, fails=0), AuditedOutput(verdict=1.0, gold=0.0), Outputs(passes=1, fails=0)],
    )
    assert watch.state == expected.to_json()
    point = WatchPoint.objects.get(watch=watch)
    assert (point.labels, point.outputs, point.lower, point.upper) == (1, 2, points[0].lower, points[0].upper)


def test_an_update_run_again_changes_nothing(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    outputs = arrive(w.production, 4)
    _update(watch)
    _audit_only(watch, {3})
    _judge(watch, ["PASS", "FAIL", "PASS", "FAIL"])
    adjudicate(outputs[2], w.rubric_version, KEY, "PASS", by=w.lead)
    _update(watch)
    state, counts = watch.state, (WatchPoint.objects.count(), JudgeRun.objects.count(), AuditOrderItem.objects.count())
    assert watch.outputs_fed == 4
    _update(watch)
    _update(watch)
    assert watch.state == state
    assert (WatchPoint.objects.count(), JudgeRun.objects.count(), AuditOrderItem.objects.count()) == counts


def test_a_stopped_watch_is_not_updated(fake_llm):
    w = watched_set(fake_llm)
    watch = _watch(w)
    Watch.objects.filter(pk=watch.pk).update(stopped_at="2026-12-07T00:00:00Z")
    arrive(w.production, 2)
    assert _update(watch) is None
    assert not WatchOutput.objects.filter(watch=watch).exists()


def _labeled_stream(w, watch: Watch, outcome: str, n: int, capture) -> None:
    """n outputs arrive, the judge and the gold both say `outcome` of each, and the watch is updated (its
    transaction's on_commit callbacks run, as after a real commit)."""
    outputs = arrive(w.production, n)
    _update(watch)
    _judge(watch, [outcome] * n)
    for output in outputs:
        adjudicate(output, w.rubric_version, KEY, outcome, by=w.lead)
    with capture(execute=True):
        _update(watch)


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The alert deliveries whose first try was queued (after the commit), in order; nothing is sent here (the
    worker's part: tests/watch/test_watch_celery.py, tests/browser/test_watch_browser.py)."""
    ids: list[int] = []
    monkeypatch.setattr(alerts_delivery, "enqueue", lambda delivery_id, countdown=0: ids.append(delivery_id) or True)
    return ids


def _destination(w, name: str = "ops") -> AlertDestination:
    return AlertDestination.objects.create(
        workspace=w.workspace, name=name, kind="webhook", url=f"https://hooks.example.com/{name}"
    )


def test_a_real_drop_creates_the_alarm_row_and_its_alert_deliveries_once(
    fake_llm, queued, settings, django_capture_on_commit_callbacks
):
    settings.ICEWATER_SITE_URL = "https://icewater.example.com"
    w = watched_set(fake_llm)
    destinations = [_destination(w, "ops"), _destination(w, "pager")]
    AlertDestination.objects.create(  # a disabled one gets nothing
        workspace=w.workspace, name="off", kind="webhook", url="https://hooks.example.com/off", enabled=False
    )
    # Every output audited and alpha 0.2, so a handful of labels is evidence enough (worked out with replay: the
    # pass-rate test alarms at the 6th FAIL label).
    watch = _watch(w, audit_share=1.0, alpha=0.2)
    _labeled_stream(w, watch, "FAIL", 8, django_capture_on_commit_callbacks)
    alarm = WatchAlarm.objects.get(watch=watch)
    _, _, expected = replay(_settings(watch), [AuditedOutput(verdict=0.0, gold=0.0)] * 8)
    assert [(a.what, a.at_labels) for a in expected] == [("pass rate", 6)]
    assert (alarm.what, alarm.at_labels, alarm.since_labels) == ("pass rate", 6, expected[0].since_labels)
    assert alarm.message == expected[0].message() and "What to do" in alarm.message
    deliveries = list(AlertDelivery.objects.order_by("destination_name"))
    assert [d.destination_id for d in deliveries] == [destinations[0].pk, destinations[1].pk]
    assert queued == [d.pk for d in AlertDelivery.objects.order_by("destination__name")]
    message = AlertMessage.from_json(deliveries[0].message)
    assert message.kind == "watch-alarm" and message.dedupe_key == f"watch-{watch.pk}-pass rate"
    assert message.text == alarm.message
    assert message.url == f"https://icewater.example.com/watches/{watch.pk}/"
    assert message.title == f"Watch {watch.pk}: the pass rate of {KEY} on {w.production.name} fell below 0.80"
    assert dict(message.facts) == {
        "What moved": "pass rate",
        "Bound": "0.80",
        "Now": f"{alarm.estimate:.2f} (band {alarm.lower:.2f} to {alarm.upper:.2f})",
        "Since": f"audit label {alarm.since_labels:,} (output {alarm.since_outputs:,})",
        "Evidence": f"{alarm.evidence:.0f} (fires at 5)",
    }
    # Fired once: more FAIL labels raise no second alarm of the same test, and no second delivery.
    _labeled_stream(w, watch, "FAIL", 3, django_capture_on_commit_callbacks)
    assert watch.labels_fed == 11
    assert WatchAlarm.objects.filter(watch=watch).count() == 1 and AlertDelivery.objects.count() == 2
    assert len(queued) == 2


def test_an_update_rolled_back_leaves_neither_the_alarm_nor_its_deliveries(fake_llm, queued, monkeypatch):
    w = watched_set(fake_llm)
    _destination(w)
    watch = _watch(w, audit_share=1.0, alpha=0.2)
    outputs = arrive(w.production, 8)
    _update(watch)
    _judge(watch, ["FAIL"] * 8)
    for output in outputs:
        adjudicate(output, w.rubric_version, KEY, "FAIL", by=w.lead)

    def broken(*args, **kwargs):
        raise RuntimeError("the update's save failed")

    monkeypatch.setattr(WatchPoint.objects, "bulk_create", broken)
    with pytest.raises(RuntimeError):
        feed.update_locked(watch.pk)
    assert not WatchAlarm.objects.exists() and not AlertDelivery.objects.exists() and queued == []
    # Negative control: the same update, not broken, commits the alarm and its delivery together.
    monkeypatch.undo()
    monkeypatch.setattr(alerts_delivery, "enqueue", lambda delivery_id, countdown=0: queued.append(delivery_id))
    feed.update_locked(watch.pk)
    assert WatchAlarm.objects.count() == 1 and AlertDelivery.objects.count() == 1


def test_without_a_site_url_the_alert_has_no_link_and_says_where_to_find_the_watch(fake_llm, settings):
    settings.ICEWATER_SITE_URL = ""
    w = watched_set(fake_llm)
    watch = _watch(w)
    tnr = {"what": "TNR", "bound": 0.7, "estimate": None, "lower": 0.1, "upper": 0.65}
    alarm = alarm_row(watch, save=False, since_labels=12, since_outputs=400, **tnr)
    message = notify.alarm_message(watch, alarm)
    assert message.url == ""
    assert message.text.endswith(f"(Watches › watch {watch.pk} in workspace {w.workspace.name} on Icewater.)")
    assert dict(message.facts)["Now"] == "unknown (band 0.10 to 0.65)"
    assert dict(message.facts)["Since"] == "gold item 12 (output 400)"
    assert notify.watch_url(watch, "https://icewater.example.com/") == (
        f"https://icewater.example.com/watches/{watch.pk}/"
    )


def test_a_stream_at_the_minimum_or_above_raises_no_alarm(fake_llm, queued, django_capture_on_commit_callbacks):
    w = watched_set(fake_llm)
    _destination(w)
    watch = _watch(w, audit_share=1.0, alpha=0.2)
    _labeled_stream(w, watch, "PASS", 8, django_capture_on_commit_callbacks)
    assert watch.labels_fed == 8 and WatchPoint.objects.filter(watch=watch).count() == 8
    assert not WatchAlarm.objects.exists() and not AlertDelivery.objects.exists() and queued == []


def test_the_periodic_job_sends_the_update_of_every_active_watch_and_no_stopped_one(fake_llm, monkeypatch):
    w = watched_set(fake_llm)
    active = _watch(w)
    other = w.rubric_version.criteria.get(key="next_step")
    stopped = start(
        eval_set=w.production,
        criterion=other,
        judge_config=w.judge,
        by=w.lead,
        audit_share=0.1,
        minimum=0.7,
        tpr_lower=0.8,
        tnr_lower=0.7,
    )
    stop(watch=stopped, by=w.lead)
    sent: list[int] = []
    monkeypatch.setattr(tasks.update_watch, "delay", sent.append)
    assert JOBS["watch-updates"].run() == "sent the update of 1 active watches"
    assert sent == [active.pk]


def test_gold_that_may_have_settled_sends_the_watchs_update_after_commit_and_other_outputs_send_nothing(
    fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    w = watched_set(fake_llm)
    watch = _watch(w)
    outputs = arrive(w.production, 3)
    _update(watch)
    _audit_only(watch, {1})
    sent: list[int] = []
    monkeypatch.setattr(tasks.update_watch, "delay", sent.append)
    ann = make_user("wa")
    with django_capture_on_commit_callbacks(execute=True):
        annotate_directly(outputs[1], w.rubric_version, ann, all_answers(w.rubric_version, "FAIL"))  # not drawn
        draft = annotate_directly(outputs[0], w.rubric_version, ann, all_answers(w.rubric_version), submit=False)
    assert sent == []  # an output the watch did not draw, and a draft, send nothing
    with django_capture_on_commit_callbacks(execute=True):
        draft.status = draft.Status.SUBMITTED
        draft.save(update_fields=["status"])
    assert sent == [watch.pk]
    with django_capture_on_commit_callbacks(execute=True):
        adjudicate(outputs[0], w.rubric_version, KEY, "PASS", by=w.lead)
    assert sent == [watch.pk, watch.pk]
    stop(watch=watch, by=w.lead)
    with django_capture_on_commit_callbacks(execute=True):
        adjudicate(outputs[0], w.rubric_version, "next_step", "FAIL", by=w.lead)
    assert sent == [watch.pk, watch.pk]  # a stopped watch takes nothing more


def test_outputs_that_arrive_as_opentelemetry_traces_are_drawn_in_the_order_they_were_made(client, fake_llm):
    from formats.models import TraceBinding
    from formats.trace_outputs import finish_ready_traces
    from tests.otel_helpers import export, post, refund_trace, traces_token

    w = watched_set(fake_llm)
    watch = _watch(w)
    token = traces_token(client, w.lead, w.production)
    for first in (1, 4):  # two exports of three traces, each finished into outputs as the receiver's finisher does
        spans = [s for n in range(first, first + 3) for s in refund_trace(trace=n, session=f"case-{n}")]
        assert post(client, export(spans).SerializeToString(), token).status_code == 200
        finish_ready_traces(binding_id=TraceBinding.objects.get(eval_set=w.production).pk, quiet_seconds=0)
    made = list(Output.objects.filter(case__eval_set=w.production).order_by("pk").values_list("pk", flat=True))
    assert len(made) == 6
    assert feed.enroll(watch) == 6
    rows = WatchOutput.objects.filter(watch=watch).order_by("position")
    assert list(rows.values_list("output_id", flat=True)) == made
