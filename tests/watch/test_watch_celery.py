"""The watch on real parts: its update holds the watch's row lock (a second update finds it held and leaves it), and
end to end on a Celery worker over Redis against the fake model server: outputs arrive, the judge grades them,
the drawn ones reach an annotator's queue, gold arrives, the update moves the state, and a stream that has really
dropped creates the alarm row and calls alarm_fired (in the worker: its log line).

The worker reads the test database, so the data must be committed: these tests use transactional_db."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from evals.models import Role
from labeling.queue import claim_next, current_queue
from tests.factories import all_answers, annotate_directly, make_user
from tests.watch_helpers import arrive, watched_set
from watch import feed, tasks
from watch.models import Watch, WatchAlarm, WatchOutput
from watch.starting import start

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT_S = 120


@contextmanager
def held_open(work):
    """Run `work` in another thread's transaction, kept open (its locks held, its rows unseen) until the block
    ends, then committed."""
    done, go_on = threading.Event(), threading.Event()

    def run() -> None:
        try:
            with transaction.atomic():
                work()
                done.set()
                go_on.wait(20)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert done.wait(20)
    try:
        yield
    finally:
        go_on.set()
        thread.join()


def test_an_update_finds_the_watch_held_by_another_and_leaves_it_then_runs_once_free(fake_llm, monkeypatch):
    w = watched_set(fake_llm)
    watch = start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.5)
    arrive(w.production, 3)
    sent_again: list[tuple] = []
    monkeypatch.setattr(tasks.update_watch, "apply_async", lambda args, countdown: sent_again.append((args, countdown)))
    with held_open(lambda: Watch.objects.select_for_update().get(pk=watch.pk)):
        assert feed.update_locked(watch.pk) is None  # no wait, no second update alongside
        assert not WatchOutput.objects.filter(watch=watch).exists()
        # The task sends itself once more a little later (what arrived meanwhile is fed soon), and only once.
        tasks.update_watch(watch.pk)
        assert sent_again == [((watch.pk, False), tasks.RETRY_AFTER_SECONDS)]
        tasks.update_watch(watch.pk, again=False)
        assert len(sent_again) == 1
    assert "3 new outputs drawn" in (feed.update_locked(watch.pk) or "")
    assert WatchOutput.objects.filter(watch=watch).count() == 3


@pytest.mark.parametrize(("window", "drawn_late"), [(feed.LATE_IDS, 1), (0, 0)])
def test_an_output_that_commits_after_a_newer_one_was_drawn_is_still_drawn(fake_llm, monkeypatch, window, drawn_late):
    """Output ids come from one sequence but commit in any order: a transaction that took its id first and commits
    last must not be skipped by the update's cursor (watch/feed.py LATE_IDS). Negative control: with no window
    behind the cursor, it is."""
    monkeypatch.setattr(feed, "LATE_IDS", window)
    w = watched_set(fake_llm)
    watch = start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.5)
    slow: list[int] = []
    with held_open(lambda: slow.extend(o.pk for o in arrive(w.production, 1))):  # a long import's output
        fast = arrive(w.production, 2)  # higher ids, committed first
        assert feed.enroll(watch) == 2
        assert slow[0] < fast[0].pk
    assert feed.enroll(watch) == drawn_late
    rows = WatchOutput.objects.filter(watch=watch).order_by("position")
    assert list(rows.values_list("output_id", flat=True)) == [fast[0].pk, fast[1].pk, slow[0]][: 2 + drawn_late]


def _until(condition, what: str, poke=None) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if poke:
            poke()
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"still waiting for {what} after {TIMEOUT_S} s")


@pytest.mark.celery
def test_end_to_end_outputs_are_graded_audited_labeled_fed_and_a_real_drop_alarms(client, fake_llm, judge_key, workers):
    w = watched_set(fake_llm)
    worker = workers(concurrency=2)
    client.force_login(w.lead)
    # p = 1 and alpha 0.2 keep it short (the statistics alarm at the 6th FAIL label: tests/watch/test_watch_feed.py).
    response = client.post(
        "/watches/start",
        {
            "eval_set": w.production.pk,
            "criterion": w.criterion.pk,
            "judge_config": w.judge.pk,
            "audit_share": "1",
            "alpha": "0.2",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    watch = Watch.objects.get()
    assert (watch.minimum, watch.tpr_lower, watch.tnr_lower) == (0.8, 0.82, 0.70)  # from the gating mark
    # The agent has dropped: its answers now fail the criterion (the fake model reads the marker).
    ok = arrive(w.production, 2)
    dropped = arrive(w.production, 8, response="Your refund of $45.00 is on its way. [[fake:all=FAIL]]")
    rows = WatchOutput.objects.filter(watch=watch)
    _until(
        lambda: rows.filter(released=True).exclude(verdict="").count() == 10, "the verdicts", tasks.send_every_update
    )
    assert list(rows.order_by("position").values_list("verdict", flat=True)) == ["PASS"] * 2 + ["FAIL"] * 8
    assert fake_llm.calls == 10
    # The drawn outputs reach an annotator's queue (blind: the annotator cannot open the watch).
    annotators = [make_user(f"watch-ann-{i}", Role.ANNOTATOR, workspace=w.workspace) for i in (1, 2)]
    claim = claim_next(user=annotators[0], queue=current_queue(w.production))
    assert claim is not None and claim.annotation.output_id == ok[0].pk
    client.force_login(annotators[0])
    assert client.get(f"/watches/{watch.pk}/").status_code == 403
    watch.refresh_from_db()
    assert watch.labels_fed == 0 and watch.outputs_fed == 0  # every output waits for its gold
    for output, outcome in [(o, "PASS") for o in ok] + [(o, "FAIL") for o in dropped]:
        for annotator in annotators:
            if output == ok[0] and annotator == annotators[0]:
                claim.annotation.delete()  # the claimed draft: labeled below as the others
            annotate_directly(output, w.rubric_version, annotator, all_answers(w.rubric_version, outcome))

    def fed() -> bool:
        watch.refresh_from_db()
        return watch.labels_fed == 10

    _until(fed, "the update", tasks.send_every_update)
    assert watch.outputs_fed == 10 and watch.state["labels"] == 10
    alarm = WatchAlarm.objects.get(watch=watch)
    assert alarm.what == "pass rate" and alarm.bound == 0.8 and "What to do" in alarm.message
    _until(lambda: f"watch {watch.pk}: alarm {alarm.pk}:" in worker.log.read_text(errors="replace"), "alarm_fired")
    client.force_login(w.lead)
    page = client.get(f"/watches/{watch.pk}/").content.decode()
    assert "The pass rate fell below 0.80" in page and "as of 10 audit labels" in page
