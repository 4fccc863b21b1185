"""Loading what the gold rule (labeling/gold.py, pure) reads: a rubric version's gold policies, and the
item states of an eval set under it."""

from __future__ import annotations

import pandas as pd

from .gold import item_states
from .label_frames import Scope, load_adjudicated, load_labels


def gold_policies(rubric_version) -> dict[int, str]:
    """criterion id -> gold policy of a rubric version (one query)."""
    return dict(rubric_version.criteria.values_list("id", "gold_policy"))


def load_item_states(eval_set, rubric_version) -> pd.DataFrame:
    """Item states of an eval set under one rubric version (three queries)."""
    scope = Scope(eval_set, rubric_version)
    return item_states(load_labels(scope), load_adjudicated(scope), gold_policies(rubric_version))
