"""What bench/audit.py, bench/audit_jury.py and bench/audit_unsure.py share (imported by them, not run): where the
public sets are, XSum's items, the thresholds each set is measured at, and the stratified design's replay. A module
of its own so that bench/audit.py can run the other two benches' designs without a circular import."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from calibration.stats import audit_strata
from calibration.stats.audit_stats import FAIL, PASS

ROOT = Path(__file__).resolve().parent.parent
DISTANCES = (0.02, 0.05, 0.10)
CONFIDENCE = 0.95


def datasets_dir() -> Path:
    return Path(os.environ.get("ICEWATER_DATASETS_DIR", ROOT.parent / "shared" / "datasets"))


def xsum_items(base: Path):
    """XSum's three raters' is_factual votes and the Entailment score by (bbcid, system), and the items with
    both (bench/audit.py and bench/audit_jury.py read them)."""
    folder = base / "xsum_hallucination"
    labels: dict[tuple[str, str], list[int]] = {}
    with open(folder / "factuality_annotations_xsum_summaries.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["is_factual"] in ("yes", "no"):
                labels.setdefault((row["bbcid"], row["system"]), []).append(int(row["is_factual"] == "yes"))
    systems = {"bert_withckpt": "BERTS2S", "ptgen": "PtGen", "tconvs2s": "TConvS2S", "bert_nockpt": "TranS2S"}
    entailment = {}
    with open(folder / "eval_scores_xsum_summaries.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            prefix, bbcid = row["system_bbcid"].rsplit("_", 1)
            entailment[(bbcid, systems[prefix])] = float(row["Entailment"])
    keys = [k for k, v in labels.items() if len(v) == 3 and k in entailment]
    return labels, entailment, keys


def thresholds(theta: float, distances: tuple[float, ...]):
    """(distance, sign, minimum, the right decision) for each distance below (sign -1) and above the truth,
    minimums outside (0, 1) left out (every audit bench measures the same cells)."""
    for distance in distances:
        for sign in (-1, 1):
            minimum = theta + sign * distance
            if 0 < minimum < 1:
                yield distance, sign, minimum, PASS if theta >= minimum else FAIL


def stratified_decisions(
    strata_gold: tuple[np.ndarray, np.ndarray], minimum: float, path: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """stats/audit_strata.py's decisions and labels to them along each order, 100 orders at a time: counted in
    `path` (each order's strata, in its sequence), or with path None as the adaptive allocation chooses."""
    decided, at = [], []
    for start in range(0, strata_gold[0].shape[0], 100):
        part = (strata_gold[0][start : start + 100], strata_gold[1][start : start + 100])
        d, a = audit_strata.replay(
            gold=part,
            start=np.zeros((part[0].shape[0], 2), int),
            minimum=minimum,
            path=None if path is None else path[start : start + 100],
        )
        decided.append(d)
        at.append(a)
    return np.concatenate(decided), np.concatenate(at)
