"""Probe runs: plan the arms (the outputs as they are, and through each probe), start, follow, cancel.

A probe run is judge runs over probed transcripts: one JudgeRun per arm over the same outputs, planned
in one transaction with the probed transcripts (ProbedOutput), then worked by the lanes like any run
(judging/lane.py): on Celery, or in this process. The judge config's concurrency bound holds across all
arms, since every lane takes its slots from the config's limiter; a probed transcript is a different
request, so the cache answers only what was asked before (the original arm, mostly).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from evals.transcript import Transcript

from .. import runner
from ..backends import Misconfigured
from ..models import JudgeRun, ProbedOutput, ProbeRun, RunItem
from .registry import MEANINGFUL, NEUTRAL, ORIGINAL, Probe

log = logging.getLogger(__name__)

# --sample draws this many outputs with a fixed seed, so the same N gives the same outputs and a repeated
# probe run is answered from the cache.
SAMPLE_SEED = 20261215
# Bounds that catch a typo in --sample without getting in the way.
MAX_SAMPLE = 100_000


def sample_ids(output_ids: list[int], size: int | None) -> list[int]:
    """`size` of the ids drawn with a fixed seed (all of them when None or at least as many), sorted."""
    ids = sorted(output_ids)
    if size is None or size >= len(ids):
        return ids
    return sorted(random.Random(SAMPLE_SEED).sample(ids, size))


def plan_entry(probe: Probe, rubric: str, keys: list[str]) -> dict:
    """What a probe run keeps of a probe: name, version, summary, and its roles on this rubric's criteria."""
    roles = {key: probe.role(rubric, key) for key in keys}
    return {
        "name": probe.name,
        "version": probe.version,
        "summary": probe.summary,
        NEUTRAL: [k for k in keys if roles[k] == NEUTRAL],
        MEANINGFUL: [k for k in keys if roles[k] == MEANINGFUL],
    }


@dataclass(frozen=True)
class Arm:
    probe: Probe | None  # None: the original
    transcripts: dict[int, Transcript]  # output id -> what the judge is shown (every chosen output for the original)


def _arms(probes: list[Probe], outputs: list) -> list[Arm]:
    originals = {o.pk: Transcript.of(o) for o in outputs}
    arms = [Arm(None, originals)]
    for probe in probes:
        # Every transform runs before anything is written: a user's probe that breaks stops the start.
        probed = {pk: probe.apply(t) for pk, t in originals.items()}
        arms.append(Arm(probe, {pk: t for pk, t in probed.items() if t is not None}))
    return arms


def create_probe_run(
    scope: runner.Scope,
    probes: list[Probe],
    *,
    mode: str,
    sample: int | None = None,
    started_by=None,
    check_api_key: bool = True,
) -> ProbeRun:
    """Check the scope, transform the chosen outputs and plan every arm, in one transaction."""
    if not probes:
        raise Misconfigured("a probe run needs at least one probe")
    if sample is not None and not 1 <= sample <= MAX_SAMPLE:
        raise Misconfigured(f"--sample must be a whole number from 1 to {MAX_SAMPLE:,}, got {sample}")
    runner.check(scope, check_api_key=check_api_key)
    rv = scope.rubric_version
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    every = list(runner.outputs_in(scope).select_related("case"))
    chosen = set(sample_ids([o.pk for o in every], sample))
    outputs = [o for o in every if o.pk in chosen]
    arms = _arms(probes, outputs)
    with transaction.atomic():
        probe_run = ProbeRun.objects.create(
            eval_set=scope.eval_set,
            agent_version=scope.agent_version,
            rubric_version=rv,
            judge_config=scope.judge_config,
            plan=[plan_entry(p, rv.rubric.name, keys) for p in probes],
            sample_size=sample,
            outputs=len(outputs),
            mode=mode,
            started_by=started_by,
        )
        for arm in arms:
            name = arm.probe.name if arm.probe else ORIGINAL
            run = runner.plan_run(
                scope,
                list(arm.transcripts),
                mode=mode,
                started_by=started_by,
                probe_run=probe_run,
                probe=name,
                probe_version=arm.probe.version if arm.probe else None,
            )
            if arm.probe is not None:
                ProbedOutput.objects.bulk_create(
                    [
                        ProbedOutput(run=run, output_id=pk, input=t.input, tool_calls=t.tool_calls, response=t.response)
                        for pk, t in arm.transcripts.items()
                    ],
                    batch_size=1000,
                )
            if not arm.transcripts:  # the probe applies to none of the outputs: nothing to do
                JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, finished_at=timezone.now())
    log.info("probe run %s planned: %s outputs, probes %s", probe_run.pk, len(outputs), [p.name for p in probes])
    return probe_run


def start_probe_run(scope: runner.Scope, probes: list[Probe], **kwargs) -> ProbeRun:
    """Create a probe run and queue every arm's lanes on Celery once the transaction commits."""
    probe_run = create_probe_run(scope, probes, mode=JudgeRun.Mode.CELERY, **kwargs)
    arm_ids = list(probe_run.judge_runs.filter(status=JudgeRun.Status.QUEUED).values_list("pk", flat=True))
    transaction.on_commit(lambda: [runner.enqueue_lanes(run_id) for run_id in arm_ids])
    return probe_run


def run_in_process(probe_run: ProbeRun, **kwargs) -> str:
    """Work every arm in this process, one after the other (each with the whole concurrency bound)."""
    for run in probe_run.judge_runs.order_by("pk"):
        runner.run_in_process(run, **kwargs)
    return status_of(probe_run)


def cancel_probe_run(probe_run: ProbeRun) -> bool:
    """Cancel every arm still going; False if none was."""
    cancelled = [runner.cancel_run(run) for run in probe_run.judge_runs.active()]
    return any(cancelled)


def status_from(statuses: list[str]) -> str:
    """A probe run's status from its arms': queued until one starts, running while any is active, then
    failed if any failed, cancelled if any was, else done."""
    if any(s in JudgeRun.ACTIVE for s in statuses):
        return JudgeRun.Status.QUEUED if all(s == JudgeRun.Status.QUEUED for s in statuses) else JudgeRun.Status.RUNNING
    for status in (JudgeRun.Status.FAILED, JudgeRun.Status.CANCELLED):
        if status in statuses:
            return status
    return JudgeRun.Status.DONE


def status_of(probe_run: ProbeRun) -> str:
    return status_from(list(probe_run.judge_runs.values_list("status", flat=True)))


@dataclass(frozen=True)
class ArmProgress:
    run_id: int
    probe: str
    status: str
    total_items: int
    done_items: int
    model_calls: int
    cache_hits: int
    error: str


@dataclass(frozen=True)
class ProbeProgress:
    probe_run: int
    status: str
    arms: tuple[ArmProgress, ...]

    @property
    def total_items(self) -> int:
        return sum(a.total_items for a in self.arms)

    @property
    def done_items(self) -> int:
        return sum(a.done_items for a in self.arms)

    @property
    def percent(self) -> int:
        return int(100 * self.done_items / self.total_items) if self.total_items else 100

    @property
    def finished(self) -> bool:
        return self.status not in JudgeRun.ACTIVE

    @property
    def errors(self) -> list[str]:
        return [f"{a.probe}: {a.error}" for a in self.arms if a.error]

    def line(self) -> str:
        calls = sum(a.model_calls for a in self.arms)
        hits = sum(a.cache_hits for a in self.arms)
        return (
            f"probe run {self.probe_run} {self.status}: {self.done_items}/{self.total_items} items in "
            f"{len(self.arms)} arms (model calls {calls}, cache hits {hits})"
        )


def progress_of(probe_run: ProbeRun) -> ProbeProgress:
    """Every arm's items, done items and spend: two queries whatever the size."""
    arms = list(probe_run.judge_runs.order_by("pk").values("pk", "probe", "status", "error"))
    counts: dict[int, Mapping[str, Any]] = {
        row["run"]: row
        for row in RunItem.objects.filter(run_id__in=[a["pk"] for a in arms])
        .values("run")
        .annotate(
            total=Count("pk"),
            done=Count("pk", filter=Q(state=RunItem.State.DONE)),
            calls=Sum("model_calls"),
            hits=Count("pk", filter=Q(cache_hit=True)),
        )
        .order_by()
    }
    rows = tuple(
        ArmProgress(
            run_id=a["pk"],
            probe=a["probe"],
            status=a["status"],
            total_items=counts.get(a["pk"], {}).get("total", 0),
            done_items=counts.get(a["pk"], {}).get("done", 0),
            model_calls=counts.get(a["pk"], {}).get("calls") or 0,
            cache_hits=counts.get(a["pk"], {}).get("hits", 0),
            error=a["error"],
        )
        for a in arms
    )
    return ProbeProgress(probe_run.pk, status_from([a.status for a in rows]), rows)
