"""The development and held-out split of an eval set's gold items (judging.models.GoldSplit): fixing it,
reading which part an output is in, and counting the looks at the held-out figures.

The rule itself is judging/split_rule.py (pure). A split is fixed once per (eval set, rubric version), when
the first improvement starts: the first derived config with examples (judging/guidance.py) or an explicit
start (`judge_guidance split start`, the API). It never changes afterwards; gold that arrives later is dealt
from the seed and the output id (split_rule.later_part).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from evals.access import has_role
from evals.models import EvalSet, Role, RubricVersion, User
from labeling.gold import FAIL
from labeling.gold_loaders import load_item_states

from .models import GoldSplit, HoldoutLook, JudgeConfig
from .split_rule import later_part, split_outputs

# Seeds are drawn below 2**31 so they read well and fit every integer column.
SEED_BOUND = 2**31


class SplitRefused(Exception):
    """The split cannot be started or read as asked; the message says why."""


def gold_fail_counts(eval_set: EvalSet, rubric_version: RubricVersion) -> dict[int, int]:
    """Every output with gold on at least one criterion -> how many of its golds are FAIL (three queries)."""
    states = load_item_states(eval_set, rubric_version)
    gold = states[states["gold"].notna()]
    counts = (gold["gold"] == FAIL).groupby(gold["output"]).sum()
    return {int(output): int(n) for output, n in counts.items()}


def split_for(eval_set: EvalSet, rubric_version: RubricVersion) -> GoldSplit | None:
    return GoldSplit.objects.filter(eval_set=eval_set, rubric_version=rubric_version).first()


def start_split(
    *, eval_set: EvalSet, rubric_version: RubricVersion, by: User | None, seed: int | None = None
) -> GoldSplit:
    """The split of this eval set under this rubric version: the one already fixed, or a new one.

    A new one needs a lead (`by`) and gold to split. `seed`: given, or drawn at random; stored either way.
    """
    existing = split_for(eval_set, rubric_version)
    if existing is not None:
        if seed is not None and seed != existing.seed:
            raise SplitRefused(
                f"the split of {eval_set.name} under {rubric_version.ref} was fixed on "
                f"{existing.created_at:%Y-%m-%d} with seed {existing.seed}; a split never changes"
            )
        return existing
    if by is None or not has_role(by, eval_set.workspace_id, Role.LEAD):
        raise SplitRefused("only a lead starts a split of the gold items")
    if seed is not None and not 0 <= seed < SEED_BOUND:
        raise SplitRefused(f"the seed must be between 0 and {SEED_BOUND - 1}, not {seed}")
    counts = gold_fail_counts(eval_set, rubric_version)
    if len(counts) < 2:
        raise SplitRefused(
            f"{eval_set.name} has gold on {len(counts)} output(s) under {rubric_version.ref}; "
            "a split needs at least two (label and adjudicate first)"
        )
    seed = secrets.randbelow(SEED_BOUND) if seed is None else seed
    development, held_out = split_outputs(counts, seed=seed)
    try:
        with transaction.atomic():
            return GoldSplit.objects.create(
                eval_set=eval_set,
                rubric_version=rubric_version,
                seed=seed,
                development=development,
                held_out=held_out,
                created_by=by,
            )
    except IntegrityError:
        # Another lead fixed it a moment ago: theirs stands.
        found = split_for(eval_set, rubric_version)
        if found is None:
            raise
        return found


def part_of(split: GoldSplit, output_id: int) -> str:
    """The part an output is in: as stored, else (gold that came later, or none yet) by split_rule.later_part."""
    if output_id in set(split.development):
        return GoldSplit.DEVELOPMENT
    if output_id in set(split.held_out):
        return GoldSplit.HELD_OUT
    return later_part(output_id, seed=split.seed)


def part_outputs(split: GoldSplit, part: str) -> list[int]:
    """The outputs of one part that have gold now (stored ones, and later gold dealt by the seed), ascending."""
    if part not in GoldSplit.PARTS:
        raise SplitRefused(f"unknown part {part!r}; the parts are {', '.join(GoldSplit.PARTS)}")
    gold = gold_fail_counts(split.eval_set, split.rubric_version)
    return sorted(o for o in gold if part_of(split, o) == part)


def record_look(*, split: GoldSplit, by: User | None, configs: Iterable[JudgeConfig], via: str) -> HoldoutLook:
    """Count one look at the held-out figures (who, when, which versions); returns it."""
    compared = [{"id": c.pk, "name": c.name, "content_hash": c.content_hash} for c in configs]
    return HoldoutLook.objects.create(split=split, looked_by=by, configs=compared, via=via)


def look_count(split: GoldSplit) -> int:
    return split.looks.count()


def describe(split: GoldSplit) -> dict:
    """The split as the API and the command show it (the held-out ids are not figures: showing them is no look)."""
    development = part_outputs(split, GoldSplit.DEVELOPMENT)
    held_out = part_outputs(split, GoldSplit.HELD_OUT)
    return {
        "eval_set": split.eval_set.name,
        "rubric_version": split.rubric_version.ref,
        "seed": split.seed,
        "fixed_at": split.created_at.isoformat(),
        "fixed_by": split.created_by.username if split.created_by else None,
        "development": development,
        "held_out": held_out,
        "later_gold": sorted(set(development + held_out) - set(split.development) - set(split.held_out)),
        "held_out_looks": look_count(split),
    }
