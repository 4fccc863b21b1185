"""Slots and the beat schedule of the periodic jobs (periodic/slots.py, periodic/scheduler.py): pure, no database,
no broker. A job is due once in each slot, at its start; a beat back after missing slots runs one, not a burst."""

from __future__ import annotations

import datetime as dt

from celery.schedules import schedule

from config.celery import app
from periodic.jobs import JOBS, RUN_TASK, beat_schedule
from periodic.scheduler import SlotEntry
from periodic.slots import EPOCH, SlotSchedule, slot_start

MINUTE = dt.timedelta(minutes=1)
NOW = dt.datetime(2026, 12, 6, 21, 0, 30, tzinfo=dt.UTC)


def at(now: dt.datetime, period: dt.timedelta = MINUTE) -> SlotSchedule:
    return SlotSchedule(run_every=period, nowfun=lambda: now, app=app)


def test_a_moment_falls_in_the_slot_that_starts_at_the_last_multiple_of_the_period_since_the_epoch():
    assert slot_start(NOW, MINUTE) == dt.datetime(2026, 12, 6, 21, 0, tzinfo=dt.UTC)
    assert slot_start(NOW.replace(microsecond=999_999), dt.timedelta(seconds=1)) == NOW
    assert slot_start(NOW, dt.timedelta(hours=1)) == dt.datetime(2026, 12, 6, 21, tzinfo=dt.UTC)
    # 7 s does not divide a minute: slots count from the epoch, so every beat and worker agrees on them.
    seven = dt.timedelta(seconds=7)
    assert (slot_start(NOW, seven) - EPOCH) % seven == dt.timedelta(0) and NOW - slot_start(NOW, seven) < seven


def test_a_slot_starts_with_itself_and_a_naive_moment_is_utc():
    start = dt.datetime(2026, 12, 6, 21, 0, tzinfo=dt.UTC)
    assert slot_start(start, MINUTE) == start
    assert slot_start(start - dt.timedelta(microseconds=1), MINUTE) == start - MINUTE
    assert slot_start(NOW.replace(tzinfo=None), MINUTE) == start


def test_a_job_sent_in_this_slot_is_not_due_until_the_next_slot_starts():
    due, wait = at(NOW).is_due(NOW - dt.timedelta(seconds=25))  # sent at 21:00:05
    assert (due, wait) == (False, 30.0)


def test_a_job_last_sent_in_the_slot_before_is_due_and_then_waits_for_the_next_slot():
    due, wait = at(NOW).is_due(NOW - dt.timedelta(seconds=31))  # 20:59:59
    assert (due, wait) == (True, 30.0)


def test_a_beat_back_after_missing_ten_slots_runs_one_not_ten():
    down_since = NOW - 10 * MINUTE
    sent = 0
    last = down_since
    for second in range(0, 30):  # beat checks every second through the rest of the slot
        now = NOW + dt.timedelta(seconds=second)
        if at(now).is_due(last).is_due:
            sent += 1
            last = now
    assert sent == 1


def test_the_sends_fall_one_in_each_slot_whenever_beat_happens_to_wake():
    # Celery's interval schedule counts the period from the last send, so its sends drift: one late by more than
    # the rest of its slot lands in the next, beside that slot's own. Here a beat waking every 0.7 s, never on a
    # slot's start, still sends once in each slot.
    start = dt.datetime(2026, 12, 6, 21, 0, tzinfo=dt.UTC)
    last = start + dt.timedelta(seconds=0.9)
    slots = []
    for check in range(2, 430):  # five minutes
        now = start + dt.timedelta(seconds=0.7 * check)
        if at(now).is_due(last).is_due:
            slots.append(slot_start(now, MINUTE))
            last = now
    assert slots == [start.replace(minute=minute) for minute in range(1, 6)]


def test_a_job_beat_knows_no_last_send_of_is_due_at_once():
    # A new job, or a lost schedule file: a run now, which the worker's claim refuses if its slot already ran.
    entry = SlotEntry(name="finish-traces", task=RUN_TASK, schedule=at(NOW), app=app)
    assert entry.last_run_at == EPOCH and entry.is_due().is_due
    # Celery's own entries keep Celery's rule (due one period after beat starts).
    celery_entry = SlotEntry(name="cleanup", task="celery.backend_cleanup", schedule=schedule(MINUTE), app=app)
    assert celery_entry.last_run_at != EPOCH


def test_every_job_is_one_beat_entry_that_expires_with_its_period():
    entries = beat_schedule()
    assert set(entries) == set(JOBS) == {"finish-traces", "watch-updates", "alert-deliveries"}
    sweep = entries["finish-traces"]
    assert sweep["task"] == RUN_TASK and sweep["args"] == ("finish-traces",)
    assert sweep["schedule"] == SlotSchedule(run_every=JOBS["finish-traces"].period)
    assert sweep["options"] == {"expires": JOBS["finish-traces"].period.total_seconds()}
