"""Running a judge: check and plan a run, start it on Celery or in this process, cancel it.

A run (eval set, optionally one agent version, x rubric version x judge config) is
planned as work items: one per output and sample (per-output mode: one model call
grades every criterion) or per output, criterion and sample (per-criterion mode).

Lanes work the items (judging/lane.py): on Celery, lane.LANES_PER_RUN tasks per run, each a
thread pool with its share of the config's max_concurrency, all taking slots from the
config's limiter (judging/limiter.py), so the bound holds across every lane and worker;
with `--in-process`, one lane as wide as the bound in the calling process, with a local
semaphore: the same code.
Items are claimed with leases; verdicts, unique per (run, output, criterion, sample), are
written in one transaction with the item's "done": a redelivered task, a second lane or
a lane that lost its lease never writes a verdict twice, and a worker killed mid-run
loses nothing (its leases run out; live lanes, or the lanes a newly started worker
enqueues through tasks.resume_runs, take its items again). Cached answers
(judging/cache.py) spare the model any question it has already answered. Cancelling
stops every lane within a heartbeat; verdicts already written are kept.

The streets run one way: this module plans runs and enqueues their lanes (by the task's name, so it never
imports judging/tasks.py, which calls into it), works a run in process through the lane, and leaves
every change of a run's status to judging/run_status.py, which the lanes use too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from celery import signature
from django.db import DatabaseError, transaction

from evals.models import EvalSet, Output, RubricVersion, Workspace
from evals.transcript import Transcript
from evals.validators import UnknownName

from . import cache, run_status
from .backends import Misconfigured, api_key_for, config_refusal
from .backends.instruments import validate_instruments
from .gold_splits import part_outputs, split_for
from .lane import LANES_PER_RUN, work_lane
from .models import GoldSplit, JudgeConfig, JudgeRun, RunItem
from .prompt import TEMPLATE_VERSIONS, request_for

log = logging.getLogger(__name__)

# The Celery task that works one lane of a run (judging/tasks.py registers it under this name). Called by
# name: tasks.py imports this module, so importing it back would make a circle.
RUN_LANE_TASK = "judging.tasks.run_lane"
# Queuing a lane waits this long for an unreachable broker (a Redis restart) before the run fails saying
# so: Celery's publish retries, 0.2 s apart at first and 2 s at most, about 8 s in all. Short, since a web
# request (the start form) waits for it.
BROKER_RETRY = {"max_retries": 6, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2.0}


# -- scope and planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    eval_set: EvalSet
    rubric_version: RubricVersion
    judge_config: JudgeConfig
    agent_version: str = ""


def resolve(*, workspace: Workspace, eval_set: str, rubric: str, judge: str, agent_version: str = "") -> Scope:
    """Look the names up in `workspace`; Misconfigured with a message naming what is unknown (and what that
    workspace holds: never another workspace's names)."""
    sets = EvalSet.objects.filter(workspace=workspace)
    found_set = sets.filter(name=eval_set).first()
    if found_set is None:
        raise Misconfigured(
            f"no eval set named {eval_set!r}{_known(sets.order_by('name').values_list('name', flat=True))}"
        )
    try:
        rubric_version = RubricVersion.objects.by_ref(rubric, workspace)
    except UnknownName as exc:
        raise Misconfigured(str(exc)) from None
    configs = JudgeConfig.objects.filter(workspace=workspace)
    config = configs.filter(name=judge).first()
    if config is None:
        raise Misconfigured(
            f"no judge config named {judge!r}{_known(configs.order_by('name').values_list('name', flat=True))}"
        )
    return Scope(found_set, rubric_version, config, agent_version or "")


def _known(names) -> str:
    names = list(names[:20])
    return f" (known: {', '.join(names)})" if names else " (there are none yet)"


def outputs_in(scope: Scope):
    outputs = Output.objects.filter(case__eval_set=scope.eval_set)
    if scope.agent_version:
        outputs = outputs.filter(agent_version=scope.agent_version)
    return outputs.order_by("case__case_id", "agent_version", "pk")


def check(scope: Scope, *, check_api_key: bool = True) -> None:
    """Misconfigured unless the run can start. `check_api_key`: the key variable is set in this process."""
    config, rv = scope.judge_config, scope.rubric_version
    if config.backend == JudgeConfig.Backend.IMPORTED:
        raise Misconfigured(
            f"judge {config.name} holds verdicts imported from elsewhere and cannot run; "
            "use import_verdicts for it, or a judge config with a model or instrument backend"
        )
    if config.prompt_template_version not in TEMPLATE_VERSIONS:
        raise Misconfigured(
            f"judge {config.name}: prompt template {config.prompt_template_version!r} is unknown "
            f"(known: {', '.join(TEMPLATE_VERSIONS)})"
        )
    if rv.status == RubricVersion.Status.RETIRED:
        raise Misconfigured(f"rubric {rv.ref} is retired; run a current version")
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    if not keys:
        raise Misconfigured(f"rubric {rv.ref} has no criteria")
    if config.guidance and config.guidance_rubric_version_id != rv.pk:
        # Guidance speaks of one rubric version's criteria: on another its notes could describe another boundary.
        written_for = config.guidance_rubric_version.ref if config.guidance_rubric_version else "no rubric version"
        raise Misconfigured(
            f"judge {config.name} carries guidance written for {written_for}, not {rv.ref}; "
            "derive a version of it for that rubric version (judge_guidance derive)"
        )
    problems = validate_instruments(config.instruments)
    if problems:
        raise Misconfigured(f"judge {config.name}: " + "; ".join(problems))
    model_keys = [k for k in keys if k not in config.instruments]
    if config.backend == JudgeConfig.Backend.INSTRUMENT and model_keys:
        raise Misconfigured(
            f"judge {config.name} uses instruments only, and has none for {', '.join(model_keys)} of {rv.ref}"
        )
    if model_keys:
        if not config.model_id:
            raise Misconfigured(f"judge {config.name} has no model_id")
        refusal = config_refusal(config)  # in every process: the allowlists are the operator's, not the shell's
        if refusal:
            raise Misconfigured(refusal)
        if check_api_key:
            api_key_for(config)
    if not outputs_in(scope).exists():
        if scope.agent_version:
            versions = (
                Output.objects.filter(case__eval_set=scope.eval_set)
                .order_by()
                .values_list("agent_version", flat=True)
                .distinct()
            )
            raise Misconfigured(
                f"eval set {scope.eval_set.name} has no outputs of agent version {scope.agent_version!r}"
                f"{_known(sorted(versions))}"
            )
        raise Misconfigured(f"eval set {scope.eval_set.name} has no outputs to judge")


def create_run(scope: Scope, *, mode: str, started_by=None, check_api_key: bool = True) -> JudgeRun:
    """Check the scope and plan the run's items, in one transaction."""
    check(scope, check_api_key=check_api_key)
    return plan_run(scope, list(outputs_in(scope).values_list("pk", flat=True)), mode=mode, started_by=started_by)


def plan_run(scope: Scope, output_ids: list[int], *, mode: str, started_by=None, **fields) -> JudgeRun:
    """A run of these outputs and its items, in one transaction; `fields` are more JudgeRun fields (a probe
    run's arms). The caller has checked the scope."""
    config = scope.judge_config
    criteria = list(scope.rubric_version.criteria.order_by("order"))
    per_criterion = config.mode == JudgeConfig.Mode.PER_CRITERION
    with transaction.atomic():
        run = JudgeRun.objects.create(
            eval_set=scope.eval_set,
            agent_version=scope.agent_version,
            rubric_version=scope.rubric_version,
            judge_config=config,
            started_by=started_by,
            mode=mode,
            expected_verdicts=len(output_ids) * len(criteria) * config.samples,
            **fields,
        )
        items = [
            RunItem(run=run, output_id=output_id, criterion=criterion, sample=sample)
            for output_id in output_ids
            for criterion in (criteria if per_criterion else [None])
            for sample in range(config.samples)
        ]
        RunItem.objects.bulk_create(items, batch_size=2000)
        JudgeRun.objects.filter(pk=run.pk).update(total_items=len(items))
        run.total_items = len(items)
    log.info("judge run %s planned: %s items, %s verdicts expected", run.pk, run.total_items, run.expected_verdicts)
    return run


# -- runs over one part of a gold split (improving a judge: docs/judging.md, "Improving a judge") ----------


def split_outputs_in(scope: Scope, part: str) -> list[int]:
    """The outputs in scope whose gold is in this part of the eval set's split; Misconfigured when there is
    no split or nothing in that part."""
    split = split_for(scope.eval_set, scope.rubric_version)
    if split is None:
        raise Misconfigured(
            f"{scope.eval_set.name} has no gold split under {scope.rubric_version.ref} yet; start one "
            "(judge_guidance split start) or derive a version with examples"
        )
    if part not in GoldSplit.PARTS:
        raise Misconfigured(f"unknown split part {part!r}; the parts are {', '.join(GoldSplit.PARTS)}")
    wanted = set(part_outputs(split, part))
    ids = [pk for pk in outputs_in(scope).values_list("pk", flat=True) if pk in wanted]
    if not ids:
        raise Misconfigured(f"the {part} split of {scope.eval_set.name} has no outputs in this scope")
    return ids


def create_split_run(scope: Scope, *, part: str, mode: str, started_by=None, check_api_key: bool = True) -> JudgeRun:
    """A run over the gold items of one part of the split only (the development split while improving)."""
    check(scope, check_api_key=check_api_key)
    ids = split_outputs_in(scope, part)
    return plan_run(scope, ids, mode=mode, started_by=started_by, split_part=part)


def start_split_run(scope: Scope, *, part: str, started_by=None, check_api_key: bool = True) -> JudgeRun:
    run = create_split_run(
        scope, part=part, mode=JudgeRun.Mode.CELERY, started_by=started_by, check_api_key=check_api_key
    )
    transaction.on_commit(lambda: enqueue_lanes(run.pk))
    return run


@dataclass(frozen=True)
class CallCount:
    """What a run of these outputs would cost before it starts: work items, how many the cache answers (free),
    how many need no model (instruments only), and the model calls left (retries aside)."""

    items: int
    cached: int
    instrument_only: int
    calls: int


def planned_calls(scope: Scope, output_ids: list[int]) -> CallCount:
    """Count the model calls a run of these outputs would make: every item's request is built as a lane builds it
    and looked up in the verdict cache (one query for all), so a cached request counts as free."""
    config, rv = scope.judge_config, scope.rubric_version
    criteria = list(rv.criteria.order_by("order"))
    model_criteria = [c for c in criteria if c.key not in config.instruments]
    groups = [[c] for c in criteria] if config.mode == JudgeConfig.Mode.PER_CRITERION else [criteria]
    wanted: dict[str, list[str]] = {}
    items = instrument_only = 0
    outputs = outputs_in(scope).filter(pk__in=output_ids).select_related("case")
    for output in outputs:
        shown = Transcript.of(output)
        for group in groups:
            asked = [c for c in group if c in model_criteria]
            items += config.samples
            if not asked:
                instrument_only += config.samples
                continue
            request = request_for(config, rv, asked, shown, reference=output.case.reference)
            for sample in range(config.samples):
                key = cache.cache_key(
                    rubric_hash=rv.content_hash,
                    config_hash=config.content_hash,
                    request_hash=request.hash,
                    sample=sample,
                )
                wanted[key] = [c.key for c in asked]
    cached = len(cache.lookup(wanted, exclude_run=0))
    return CallCount(items=items, cached=cached, instrument_only=instrument_only, calls=len(wanted) - cached)


def start_run(scope: Scope, *, started_by=None, check_api_key: bool = True) -> JudgeRun:
    """Create a run and enqueue its lanes on Celery once the transaction commits."""
    run = create_run(scope, mode=JudgeRun.Mode.CELERY, started_by=started_by, check_api_key=check_api_key)
    transaction.on_commit(lambda: enqueue_lanes(run.pk))
    return run


def enqueue_lanes(run_id: int, lanes: int = LANES_PER_RUN) -> bool:
    """Queue the run's lanes; False (and the run marked failed, saying why) when the broker stays unreachable
    for longer than BROKER_RETRY allows."""
    try:
        for _ in range(lanes):
            signature(RUN_LANE_TASK, args=(run_id,)).apply_async(retry=True, retry_policy=BROKER_RETRY)
    except Exception as exc:  # kombu raises several kinds: whatever it is, the run must not sit queued for ever
        log.error("could not enqueue judge run %s: %s", run_id, exc)
        run_status.fail(
            run_id, f"could not reach the Celery broker to start the run ({type(exc).__name__}); is it running?"
        )
        return False
    return True


def run_in_process(run: JudgeRun, **kwargs) -> str | None:
    """Work the whole run in this process (same code, limits and retries as a lane; no broker)."""
    try:
        return work_lane(run.pk, in_process=True, **kwargs)
    except DatabaseError as exc:
        # No Celery to run the lane again: record why, if the database takes it, rather than stay "running".
        run_status.fail_if_possible(run.pk, f"the run lost its database ({type(exc).__name__}); start it again")
        raise


def cancel_run(run: JudgeRun) -> bool:
    """Stop the run; its lanes notice within a heartbeat. False if it had already ended."""
    return run_status.cancel(run.pk)
