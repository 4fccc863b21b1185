"""Celery beat's scheduler for the periodic jobs (settings.CELERY_BEAT_SCHEDULER): Celery's own, with its schedule
file in the data folder, plus the slot each run is sent for.

What a restart does: beat keeps each job's last send in its schedule file. Back after missing slots, a job is due
at once (SlotSchedule), so it runs once for the slot beat is in, not once per missed slot. A job beat knows no
last send of (a new job, a lost schedule file) is due at once too. Either may send a slot that was sent before
(the file is written every few minutes, not at every send): the worker's claim makes that run nothing.
"""

from __future__ import annotations

from celery.beat import PersistentScheduler, ScheduleEntry

from .jobs import beat_schedule
from .slots import EPOCH, SlotSchedule, slot_start


class SlotEntry(ScheduleEntry):
    """A job with no last send is due at once, where Celery's entry would wait one period from beat's start."""

    def __init__(self, name=None, task=None, last_run_at=None, *args, **kwargs) -> None:
        super().__init__(name, task, last_run_at, *args, **kwargs)
        if last_run_at is None and isinstance(self.schedule, SlotSchedule):
            self.last_run_at = EPOCH


class SlotScheduler(PersistentScheduler):
    Entry = SlotEntry

    def setup_schedule(self) -> None:
        # Read here, in beat, once Django is set up (beat's loader does that before it makes the scheduler).
        self.app.conf.beat_schedule = beat_schedule()
        super().setup_schedule()

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry = self.reserve(entry) if advance else entry
        if not isinstance(entry.schedule, SlotSchedule):  # an entry of Celery's own
            return super().apply_async(entry, producer, advance=False, **kwargs)
        # tick() has just recorded this send as the entry's last run: its slot is the one the job is due in, and
        # the one the next send is measured from, so every send names a later slot than the one before.
        sent_at = self.schedule[entry.name].last_run_at
        slot = slot_start(sent_at, entry.schedule.run_every).isoformat()
        sending = self.Entry(**dict(entry, kwargs={**entry.kwargs, "slot": slot}))
        return super().apply_async(sending, producer, advance=False, **kwargs)
