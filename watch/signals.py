"""Gold that may have settled for a watched output sends its watch's update once the change commits, so the statistics
take it without waiting for the periodic job.

Two moments only: an annotation submitted (its labels count from then on) and a gold label saved (an adjudication or a
reviewer's change). Each costs one indexed query, and only there: a draft's label saves cost nothing. What these miss
(labels imported in bulk, a corrected label) the periodic job takes within ICEWATER_WATCH_UPDATE_SECONDS.
"""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from labeling.models import Annotation, GoldLabel

from .models import WatchOutput
from .tasks import send_update


def send_for(output_id: int) -> None:
    watches = (
        WatchOutput.objects.filter(output_id=output_id, audited=True, fed=False, watch__stopped_at__isnull=True)
        .values_list("watch_id", flat=True)
        .distinct()
    )
    for watch_id in watches:
        send_update(watch_id)


@receiver(post_save, sender=Annotation, dispatch_uid="watch-annotation-submitted")
def annotation_submitted(sender, instance: Annotation, created: bool, update_fields=None, **kwargs) -> None:
    if instance.status != Annotation.Status.SUBMITTED:
        return
    if not created and update_fields is not None and "status" not in update_fields:
        return  # a submitted annotation saved for another reason (a reservation, a timestamp)
    send_for(instance.output_id)


@receiver(post_save, sender=GoldLabel, dispatch_uid="watch-gold-saved")
def gold_saved(sender, instance: GoldLabel, **kwargs) -> None:
    send_for(instance.output_id)
