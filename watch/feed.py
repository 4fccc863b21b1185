"""One update of a watch: see what arrived, draw it, have it graded, send the drawn ones to annotators, and feed
what is ready to the statistics, in arrival order.

Each step only moves rows forward (an output is drawn once, planned into a judge run once, released once, fed
once), so an update run twice in a row does nothing the second time: the task (watch/tasks.py) may be sent as
often as anyone likes. The caller holds the watch's row lock (`update_locked`), so two updates never interleave.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from calibration.stats.watch import TNR, TPR, Alarm, AuditedOutput, WatchState, pass_rate_band, rate_band, update
from evals.models import Output
from judging import runner
from judging.backends import Misconfigured
from judging.models import JudgeRun, Verdict
from judging.sample_majority import majority
from labeling.audit_order import append_released
from labeling.gold import gold_of_votes
from labeling.models import GoldLabel, Label
from labeling.queue import current_queue

from . import notify
from .models import Watch, WatchAlarm, WatchOutput, WatchPoint
from .stream import FAIL, PASS, UNJUDGED, Arrived, ready

log = logging.getLogger(__name__)
_random = secrets.SystemRandom()  # the operating system's CSPRNG: no seed anyone could know or choose
# How far behind the newest drawn output an update still looks for outputs that committed late (ids, not time):
# an import of up to this many outputs in one transaction, overtaken by traces, is still drawn whole.
LATE_IDS = 20_000


def update_locked(watch_id: int) -> str | None:
    """Update the watch if no other update holds it (None when one does, or it is stopped): the latest state wins,
    since whoever holds the lock reads everything that has committed by then."""
    with transaction.atomic():
        watch = Watch.objects.select_for_update(skip_locked=True).filter(pk=watch_id, stopped_at__isnull=True).first()
        if watch is None:
            return None
        return run_update(watch)


def run_update(watch: Watch) -> str:
    """Every step once, in order; what it did in a line. Call with the watch's row locked."""
    problems: list[str] = []
    drawn = enroll(watch)
    planned = grade(watch, problems)
    read = read_verdicts(watch)
    released = release(watch, problems)
    fed, labels, alarms = feed(watch)
    watch.problem = " ".join(problems)
    watch.updated_at = timezone.now()
    watch.save(update_fields=["problem", "updated_at"])
    return (
        f"watch {watch.pk}: {drawn} new outputs drawn, {planned} sent to the judge, {read} verdicts read, "
        f"{released} released to annotators, {fed} fed ({labels} audit labels), {alarms} alarms"
    )


def enroll(watch: Watch) -> int:
    """Draw every output that arrived since the last update: its place in the arrival order and whether it goes
    to the audit, decided now, before its verdict or gold exist.

    An update costs what arrived, not the watch's history: it reads the outputs above the cursor (the highest id
    drawn) less LATE_IDS, and the draws in that same range. Ids come from one sequence but commit in any order (a
    long import takes its ids, then a trace with higher ids commits first), so the trailing window takes an
    output that commits late, up to LATE_IDS ids behind the newest drawn; one further behind is not watched."""
    floor = max(watch.outputs_before, watch.drawn_through - LATE_IDS)
    drawn = WatchOutput.objects.filter(watch=watch, output_id__gt=floor).values("output_id")
    new = list(
        Output.objects.filter(case__eval_set_id=watch.eval_set_id, pk__gt=floor)
        .exclude(pk__in=drawn)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if not new:
        return 0
    watch.drawn_through = max(watch.drawn_through, new[-1])
    watch.save(update_fields=["drawn_through"])
    last = WatchOutput.objects.filter(watch=watch).order_by("-position").values_list("position", flat=True).first()
    rows = []
    for position, output_id in enumerate(new, start=(last or 0) + 1):
        draw = _random.random()
        rows.append(
            WatchOutput(
                watch=watch, output_id=output_id, position=position, draw=draw, audited=draw < watch.audit_share
            )
        )
    WatchOutput.objects.bulk_create(rows)
    return len(rows)


def grade(watch: Watch, problems: list[str]) -> int:
    """Plan one judge run (through judging's own planning and lanes) over the drawn outputs not yet sent to it."""
    waiting = WatchOutput.objects.filter(watch=watch, judge_run__isnull=True, verdict="")
    ids = list(waiting.order_by("position").values_list("output_id", flat=True))
    if not ids:
        return 0
    scope = runner.Scope(watch.eval_set, watch.rubric_version, watch.judge_config)
    try:
        runner.check(scope, check_api_key=False)
    except Misconfigured as exc:
        problems.append(f"The judge cannot grade the new outputs: {exc}; they wait until it can.")
        return 0
    run = runner.plan_run(scope, ids, mode=JudgeRun.Mode.CELERY, started_by=watch.started_by)
    WatchOutput.objects.filter(watch=watch, output_id__in=ids).update(judge_run=run)
    transaction.on_commit(lambda: runner.enqueue_lanes(run.pk))
    return len(ids)


def read_verdicts(watch: Watch) -> int:
    """The criterion's verdict of each graded output, once all its samples are in (or its run has ended): the
    majority of the samples; ERROR, Can't tell, N/A, a tie or no verdict at all is unjudged, never FAIL."""
    waiting = list(
        WatchOutput.objects.filter(watch=watch, judge_run__isnull=False, verdict="").values_list(
            "pk", "output_id", "judge_run_id", "judge_run__status"
        )
    )
    if not waiting:
        return 0
    samples = watch.judge_config.samples
    outcomes: dict[tuple[int, int], list[str]] = defaultdict(list)
    verdicts = Verdict.objects.counted().filter(
        run_id__in={run for _, _, run, _ in waiting},
        output_id__in=[o for _, o, _, _ in waiting],
        criterion=watch.criterion,
    )
    for run_id, output_id, outcome in verdicts.values_list("run_id", "output_id", "outcome"):
        outcomes[(run_id, output_id)].append(outcome)
    by_verdict: dict[str, list[int]] = defaultdict(list)
    for pk, output_id, run_id, status in waiting:
        got = outcomes.get((run_id, output_id), [])
        if len(got) < samples and status in JudgeRun.ACTIVE:
            continue  # the judge is still at it
        outcome = majority(got).outcome if got else ""
        by_verdict[outcome if outcome in (PASS, FAIL) else UNJUDGED].append(pk)
    for verdict, pks in by_verdict.items():
        WatchOutput.objects.filter(pk__in=pks).update(verdict=verdict)
    return sum(len(pks) for pks in by_verdict.values())


def release(watch: Watch, problems: list[str]) -> int:
    """Put the drawn outputs at the end of the labeling queue's audit order, released: annotators get them as any
    audit's, double-labeled and adjudicated under the gold policy, blind to the judge as always."""
    ids = list(
        WatchOutput.objects.filter(watch=watch, audited=True, released=False)
        .order_by("position")
        .values_list("output_id", flat=True)
    )
    if not ids:
        return 0
    queue = current_queue(watch.eval_set)
    if queue is None or queue.rubric_version_id != watch.rubric_version_id:
        problems.append(
            f"The labeling queue of {watch.eval_set.name} is no longer open under {watch.rubric_version.ref}: "
            f"{len(ids)} drawn outputs wait to be released to annotators until it is."
        )
        return 0
    append_released(queue=queue, output_ids=ids, by=watch.started_by)
    WatchOutput.objects.filter(watch=watch, output_id__in=ids).update(released=True)
    return len(ids)


def settled_gold(watch: Watch, output_ids: list[int]) -> dict[int, str]:
    """The criterion's gold of these outputs where it is settled: an adjudication, else what the gold policy makes
    of the current labels of submitted annotations (labeling/gold.py, the one rule)."""
    if not output_ids:
        return {}
    criterion = watch.criterion
    gold = dict(
        GoldLabel.objects.current()
        .filter(output_id__in=output_ids, rubric_version=watch.rubric_version, criterion=criterion)
        .values_list("output_id", "outcome")
    )
    votes: dict[int, list[str]] = defaultdict(list)
    labels = Label.objects.submitted().filter(
        annotation__output_id__in=[o for o in output_ids if o not in gold],
        annotation__rubric_version=watch.rubric_version,
        criterion=criterion,
    )
    for output_id, outcome in labels.values_list("annotation__output_id", "outcome"):
        votes[output_id].append(outcome)
    for output_id, outcomes in votes.items():
        settled = gold_of_votes(outcomes, criterion.gold_policy)
        if settled is not None:
            gold[output_id] = settled
    return gold


def feed(watch: Watch) -> tuple[int, int, int]:
    """Feed the statistics every output that is ready, in arrival order, stopping at the first one that waits;
    record the bands after each audit label and any alarm. (outputs fed, audit labels fed, alarms)."""
    rows = list(
        WatchOutput.objects.filter(watch=watch, fed=False)
        .order_by("position")
        .values_list("pk", "output_id", "position", "audited", "verdict")
    )
    if not rows:
        return 0, 0, 0
    # Gold is read only up to the first output still waiting for its verdict: nothing after it can be fed.
    upto = next((i for i, row in enumerate(rows) if not row[4]), len(rows))
    gold = settled_gold(watch, [row[1] for row in rows[:upto] if row[3]])
    arrived = [Arrived(audited, verdict, gold.get(output_id)) for _, output_id, _, audited, verdict in rows]
    observations, taken = ready(arrived)
    if not taken:
        return 0, 0, 0
    state = WatchState.from_json(watch.state)
    points: list[WatchPoint] = []
    alarms: list[Alarm] = []
    for observation in observations:
        state, raised = update(state, observation)
        alarms += raised
        if isinstance(observation, AuditedOutput):
            points.append(_point(watch, state))
    fed_rows = rows[:taken]
    for pk, output_id, _, audited, _ in fed_rows:
        if audited:
            WatchOutput.objects.filter(pk=pk).update(gold=gold[output_id])
    WatchOutput.objects.filter(pk__in=[row[0] for row in fed_rows]).update(fed=True)
    WatchPoint.objects.bulk_create(points)
    labels = state.labels - watch.labels_fed
    watch.state = state.to_json()
    watch.outputs_fed, watch.labels_fed, watch.fed_position = state.outputs, state.labels, fed_rows[-1][2]
    watch.save(update_fields=["state", "outputs_fed", "labels_fed", "fed_position"])
    for alarm in alarms:
        row = WatchAlarm.objects.create(
            watch=watch,
            what=alarm.what,
            bound=alarm.bound,
            estimate=alarm.estimate,
            lower=alarm.lower,
            upper=alarm.upper,
            at_labels=alarm.at_labels,
            at_outputs=alarm.at_outputs,
            since_labels=alarm.since_labels,
            since_outputs=alarm.since_outputs,
            evidence=min(alarm.evidence, 1e300),
            advice=alarm.advice,
            message=alarm.message(),
        )
        notify.alarm_raised(watch, row)  # its deliveries commit with it (watch/notify.py)
    return taken, labels, len(alarms)


def _point(watch: Watch, state: WatchState) -> WatchPoint:
    band, tpr, tnr = pass_rate_band(state), rate_band(state, TPR), rate_band(state, TNR)
    return WatchPoint(
        watch=watch,
        labels=state.labels,
        outputs=state.outputs,
        estimate=band.estimate,
        lower=band.lower,
        upper=band.upper,
        tpr_estimate=tpr.estimate,
        tpr_lower=tpr.lower,
        tpr_upper=tpr.upper,
        tnr_estimate=tnr.estimate,
        tnr_lower=tnr.lower,
        tnr_upper=tnr.upper,
    )
