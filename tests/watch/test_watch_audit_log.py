"""Starting and stopping a watch are decisions the workspace's leads must be able to trace: each writes one audit
event (evals/audit_log.py) in the watch's workspace, in the same transaction; a refused start or stop writes none."""

from __future__ import annotations

import pytest

from evals.models import AuditAction, AuditEvent
from tests.factories import default_workspace, make_workspace
from tests.watch_helpers import watched_set
from watch.starting import WatchError, start, stop

pytestmark = pytest.mark.django_db


def test_a_start_and_a_stop_are_one_event_each_in_the_watchs_workspace(client):
    default_workspace()  # the other workspace, which must stay without watch events
    w = watched_set(workspace=make_workspace("team-b"), slug="-b")
    client.force_login(w.lead)
    form = {"eval_set": w.production.pk, "criterion": w.criterion.pk, "judge_config": w.judge.pk, "audit_share": "0.05"}
    assert client.post("/watches/start", form).status_code == 302
    watch = w.production.watches.get()
    assert client.post(f"/watches/{watch.pk}/stop").status_code == 302
    events = list(AuditEvent.objects.filter(action__startswith="watch_").order_by("pk"))
    assert [(e.workspace.slug, e.actor_name, e.action) for e in events] == [
        ("team-b", "watch-lead-b", AuditAction.WATCH_STARTED),
        ("team-b", "watch-lead-b", AuditAction.WATCH_STOPPED),
    ]
    assert events[0].summary == (
        f"Watch {watch.pk} started: correct_amount of refund-b@1 on production-b, judged by judge-b"
    )
    started = events[0].detail  # the watch's settings, as `manage.py watch list --format json` gives them
    assert (started["id"], started["eval_set"], started["criterion"], started["judge"]) == (
        watch.pk,
        "production-b",
        "correct_amount",
        "judge-b",
    )
    assert (started["audit_share"], started["alpha"], started["minimum"]) == (0.05, 0.05, 0.8)
    assert (started["status"], events[1].detail["status"]) == ("watching", "stopped")


def test_a_refused_start_or_stop_writes_no_event():
    w = watched_set()
    watch = start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.1)
    with pytest.raises(WatchError):  # already watched
        start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.2)
    stop(watch=watch, by=w.lead)
    with pytest.raises(WatchError):  # already stopped
        stop(watch=watch, by=w.lead)
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))
    assert actions == [AuditAction.WATCH_STARTED, AuditAction.WATCH_STOPPED]
