"""Slots: a job's period cut from the epoch (00:00 UTC, 1 January 1970) into equal pieces. A run belongs to the
slot it was sent in; a job runs at most once per slot (periodic/tasks.py claims it) and beat sends it once per
slot (SlotSchedule). Pure: Celery's schedule class, no Django."""

from __future__ import annotations

import datetime as dt

from celery.schedules import schedstate, schedule

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def slot_start(moment: dt.datetime, period: dt.timedelta) -> dt.datetime:
    """The start of the slot `moment` falls in (a naive moment is UTC, as Celery's are with enable_utc)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return EPOCH + period * ((moment - EPOCH) // period)


class SlotSchedule(schedule):
    """Due once in each slot of `run_every`, at its start, whenever the last run was.

    Celery's own interval schedule counts the period from the last run, so its runs drift across slot boundaries
    and two could fall in one slot (the second claim would then refuse it) while the next slot got none. Here the
    last run's slot is what counts: a scheduler back after missing many slots is due at once, one run for the
    slot it is in, then at the next slot's start; the slots it missed are not run one by one.
    """

    def is_due(self, last_run_at: dt.datetime) -> schedstate:
        now = self.maybe_make_aware(self.now())
        current = slot_start(now, self.run_every)
        to_next = (current + self.run_every - now).total_seconds()
        return schedstate(is_due=slot_start(self.maybe_make_aware(last_run_at), self.run_every) < current, next=to_next)

    def __repr__(self) -> str:
        return f"<once per slot of {self.human_seconds}>"
