"""The rule that splits gold items into a development and a held-out part: pure, no Django.

Split by output (one output's criteria stay together: an example drawn from an output must not leave that
output's other criteria in the held-out part), stratified on the number of FAIL golds each output has,
so each part sees about as many clean, partly failing and badly failing outputs as the other.

How, exactly (docs/calibration.md, "Development and held-out splits"):
1. group the outputs by their number of FAIL golds (0, 1, 2, ...), ascending;
2. inside each group, order the output ids ascending and shuffle them with `random.Random(f"{seed}:{n_fail}")`;
3. put the groups one after the other (0 first) and deal the outputs in turn: the first to development,
   the second to held-out, the third to development, and so on across group boundaries.
A group of n outputs thus gives ceil(n/2) or floor(n/2) to each part, and the parts differ in size by at
most one. Gold that arrives after the split was fixed is dealt by `later_part`: from the seed and the output
id alone, so it never moves either.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping

DEVELOPMENT = "development"
HELD_OUT = "held_out"


def split_outputs(fail_counts: Mapping[int, int], *, seed: int) -> tuple[list[int], list[int]]:
    """(development, held-out) output ids, each ascending, for outputs -> their number of FAIL golds."""
    strata: dict[int, list[int]] = {}
    for output_id, n_fail in fail_counts.items():
        strata.setdefault(int(n_fail), []).append(int(output_id))
    dealt: list[int] = []
    for n_fail in sorted(strata):
        ids = sorted(strata[n_fail])
        random.Random(f"{seed}:{n_fail}").shuffle(ids)
        dealt.extend(ids)
    return sorted(dealt[0::2]), sorted(dealt[1::2])


def later_part(output_id: int, *, seed: int) -> str:
    """The part of an output whose gold arrived after the split was fixed: the lowest bit of
    sha256("SEED:OUTPUT_ID"), 0 development, 1 held-out (about half each, never moving)."""
    digest = hashlib.sha256(f"{seed}:{output_id}".encode()).digest()
    return HELD_OUT if digest[-1] & 1 else DEVELOPMENT
