"""A jury audit plan's signals (issue 38): chosen by the lead and frozen when the plan starts, read by its figures.

The uniform design's tests read, beside gold, one or more signals per output (calibration/stats/audit_predictor.py):
the vote share of the plan's own judge config's samples, and that of each extra judge config the lead picked. Each
is read from its own config's verdicts only (the provenance rule) and only once, at the start, before the first
label: a re-run of a judge afterwards must not move the tests, or the lead could re-run until the audit passes.
So they are stored (AuditPlanSignal, N float64 each) and the figures read what was stored.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import Prefetch

from calibration.audits.plan_outputs import population_of, vote_shares
from calibration.data import frames
from calibration.models import AuditPlan, AuditPlanSignal
from calibration.stats import audit_predictor
from calibration.stats.metrics import FAIL, PASS
from evals.models import Criterion, EvalSet
from judging.models import JudgeConfig, Verdict
from labeling import label_frames

# More configs than this add little (the bench: a second config saves 0 to 5% of N, a third less) and each costs a
# slope the first labels must learn.
MAX_EXTRA_JUDGES = 4


class SignalError(ValueError):
    """The lead's choice of extra judge configs cannot be used; the message says why and what to do."""


def checked_extra_judges(
    extra: Sequence[JudgeConfig],
    *,
    judge_config: JudgeConfig,
    criterion: Criterion,
    eval_set: EvalSet,
    agent_version: str,
    design: str,
) -> list[JudgeConfig]:
    """The extra configs, in the lead's order, if each may join the plan's jury; SignalError otherwise. A config
    must be of the eval set's workspace, other than the plan's own judge and named once, and have verdicts of the
    criterion on the candidate (of its agent version, if any) from its own runs. One query per config."""
    extra = list(extra)
    if not extra:
        return []
    if design != AuditPlan.Design.UNIFORM:
        raise SignalError(
            "Extra judge configs are read by the uniform design only: a stratified plan reads its judge's verdict "
            "(its two strata). Start a uniform plan, or leave the extra configs out."
        )
    if len(extra) > MAX_EXTRA_JUDGES:
        raise SignalError(f"At most {MAX_EXTRA_JUDGES} extra judge configs, not {len(extra)}.")
    seen: set[int] = set()
    for config in extra:
        if config.workspace_id != eval_set.workspace_id:
            # Another workspace's config answers as a missing one.
            raise SignalError(f"There is no judge config {config.name!r} in {eval_set.name}'s workspace.")
        if config.pk == judge_config.pk:
            raise SignalError(
                f"{config.name} is the plan's own judge: its vote share is already the jury's first signal. Pick "
                "other judge configs, or none."
            )
        if config.pk in seen:
            raise SignalError(f"{config.name} is named twice: each extra judge config counts once.")
        seen.add(config.pk)
        judged = Verdict.objects.counted().filter(
            judge_config=config,
            criterion=criterion,
            rubric_version=criterion.rubric_version,
            output__case__eval_set=eval_set,
        )
        if agent_version:
            judged = judged.filter(output__agent_version=agent_version)
        if not judged.exists():
            where = f"{eval_set.name}" + (f" ({agent_version})" if agent_version else "")
            raise SignalError(
                f"{config.name} has no verdicts of {criterion.key} ({criterion.rubric_version.ref}) on {where}: run "
                "it on the candidate under that rubric version first (a config's signal comes only from its own "
                "runs)."
            )
    return extra


def _signal(plan: AuditPlan, config: JudgeConfig, ids: list[int]) -> tuple[np.ndarray, int]:
    """One config's vote share on each output of `ids` (NaN where it has none), and its usable samples there."""
    scope = label_frames.Scope(plan.eval_set, plan.criterion.rubric_version, plan.agent_version or None)
    verdicts = frames.load_verdicts(scope, config)
    shares = np.array([np.nan if v is None else v for v in vote_shares(verdicts, plan.criterion.pk, ids)], dtype="<f8")
    rows = verdicts[(verdicts["criterion"] == plan.criterion.pk) & verdicts["output"].isin(ids)]
    current = rows.sort_values("run_rank", kind="stable").drop_duplicates(["output", "sample"], keep="first")
    return shares, int(current["outcome"].isin([PASS, FAIL]).sum())


def freeze(plan: AuditPlan, extra: Sequence[JudgeConfig]) -> list[AuditPlanSignal]:
    """Store the jury plan's signals on its population now: its own judge's vote share, then each extra config's."""
    ids = [output_id for output_id, _, _ in population_of(plan.order_id, plan.agent_version)]
    rows = []
    for position, config in enumerate([plan.judge_config, *extra]):
        shares, samples = _signal(plan, config, ids)
        rows.append(
            AuditPlanSignal(
                plan=plan,
                position=position,
                judge_config=config,
                values=shares.tobytes(),
                missing=int(np.isnan(shares).sum()),
                samples=samples,
            )
        )
    return AuditPlanSignal.objects.bulk_create(rows)


def without_values() -> Prefetch:
    """The plans' signal rows without their values (what a list of plans prefetches: names, not N floats)."""
    return Prefetch(
        "signals", queryset=AuditPlanSignal.objects.defer("values").select_related("judge_config").order_by("position")
    )


def also_judges(plan: AuditPlan) -> list[str]:
    """The names of a jury plan's extra judge configs, in the lead's order (prefetched by `without_values`, or one
    query)."""
    if "signals" in getattr(plan, "_prefetched_objects_cache", {}):
        return [s.judge_config.name for s in plan.signals.all() if s.position > 0]
    rows = AuditPlanSignal.objects.filter(plan=plan, position__gt=0).order_by("position")
    return list(rows.values_list("judge_config__name", flat=True))


@dataclass(frozen=True)
class Jury:
    """A jury plan's frozen signals as its figures read them."""

    names: tuple[str, ...]  # the configs' names, the plan's own judge first
    samples: tuple[int, ...]  # each config's usable samples on the population at the start
    raw: dict[str, list[float | None]]  # each signal per output in order position, None where missing
    predictor: audit_predictor.Predictor  # the imputed signals, F (N, K)
    digest: str  # of every value: the figures' state and cache key

    def usable(self) -> np.ndarray:
        """Which outputs have at least one signal (N,): the forecast models the rest as a stratum of their own."""
        present = np.column_stack([[v is not None for v in values] for values in self.raw.values()])
        return np.asarray(present.any(axis=1))


def frozen(plan: AuditPlan, n_outputs: int) -> Jury:
    """The signals stored at the plan's start (one query); `n_outputs`, the population's size, is checked."""
    rows = list(AuditPlanSignal.objects.filter(plan=plan).select_related("judge_config").order_by("position"))
    if not rows:
        raise ValueError(f"audit plan {plan.pk} reads the jury predictor but has no stored signals")
    h = hashlib.sha256()
    raw: dict[str, list[float | None]] = {}
    for row in rows:
        data = bytes(row.values)
        h.update(row.judge_config.name.encode() + b"\x00" + data)
        values = np.frombuffer(data, dtype="<f8")
        if values.size != n_outputs:
            raise ValueError(f"audit plan {plan.pk}'s signal {row.position} has {values.size} values, not {n_outputs}")
        raw[row.judge_config.name] = [None if math.isnan(v) else float(v) for v in values.tolist()]
    return Jury(
        names=tuple(raw),
        samples=tuple(row.samples for row in rows),
        raw=raw,
        predictor=audit_predictor.predictor(raw),
        digest=h.hexdigest(),
    )


STRATIFIED_WORDS = (
    "the judge's verdict when the plan started, as the design's two strata (the jury predictor is the uniform design's)"
)


def predictor_reading(
    plan: AuditPlan,
    gold: Sequence[float],
    p: audit_predictor.Predictor,
    raw: dict[str, list[float | None]],
    samples: Sequence[int] | None,
) -> dict:
    """What a uniform plan's tests read beside gold, for the page, the API and the CLI: each signal's correlation
    with the gold settled so far (only where the signal exists: an imputed value never counts as agreement) and
    its weight (the least-squares slope on that gold, clipped to [0, 1]), and the jury's correlation R. `samples`:
    each jury signal's usable samples at the start (None for a verdict plan's one signal)."""
    reading = audit_predictor.jury_reading(gold=list(gold), p=p, raw=raw)
    jury = plan.predictor == AuditPlan.Predictor.JURY
    signals = []
    for k, s in enumerate(reading.signals):
        signals.append(
            {
                "name": s.name,
                "role": "the plan's judge" if k == 0 else "extra judge config",
                "reads": "vote share" if jury else "verdict",
                "samples": samples[k] if samples is not None else None,
                "n": s.n,
                "correlation": s.correlation,
                "weight": s.coefficient,
                "missing": s.missing,
            }
        )
    if jury:
        others = [s.name for s in reading.signals[1:]]
        words = f"the jury: the vote share of {reading.signals[0].name}'s samples" + (
            f", and of {', '.join(others)}'s" if others else ""
        )
        words += ", frozen when the plan started, each weighted by its slope on the gold settled before each label"
    else:
        words = (
            f"{reading.signals[0].name}'s verdict, one bit per output (the plan started before the jury predictor, "
            "so its decisions stay as they were)"
        )
    return {
        "kind": plan.predictor,
        "in_words": words,
        "signals": signals,
        "jury": {"correlation": reading.correlation, "n": reading.n},
    }
