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


def least_squares_score(gold: np.ndarray, signals: np.ndarray) -> np.ndarray:
    """The whole set's least-squares fit of gold on its signals (with an intercept): the best linear predictor, known
    only to a bench that holds every gold label. Its correlation with gold is the jury's R (audit_jury.fit_r)."""
    X = np.c_[np.ones(gold.size), signals]
    return X @ np.linalg.lstsq(X, gold, rcond=None)[0]


def oracle_labels(
    gold: np.ndarray, score: np.ndarray, *, minimum: float, right: str, confidence: float = CONFIDENCE
) -> np.ndarray:
    """Labels to a decision of the growth-optimal betting test for this very set, along each order: gold (S, N) and
    score (S, N) in each order, `right` the decision the truth calls for.

    What the audit's test learns from the labels, this one is told from the whole set (what only a simulation
    knows): the best linear predictor (`least_squares_score`, slope 1) and, before each draw, the multiset of the
    outputs not drawn yet. It bets the growth-optimal (Kelly) share against that multiset: the bet b that
    maximises the mean of log(1 + b (z - c)) over what the next draw can be, found by bisection, below the bet that
    the worst next draw would ruin. Otherwise it is the audit's test on the right side: without replacement, z the
    gold less the predictor's deviation, c its mean under theta = m, at (1 - confidence)/2, with the exact rule and
    no minimum of gold. It is still a valid test: "bet as if the set were this one" is a fixed rule of the past
    draws, so its capital is a test martingale under any set whose pass rate is m. What it shows is how far the
    audit's test is from the best bets there can be on these data (Kelly's growth is the most a betting test can
    have per label in expectation; its median is a reference, not a bound: another rule can stop sooner in some
    orders).

    And the floor (labels_per_decision's fixed_n, under the normal approximation): by the Neyman-Pearson lemma no
    valid test, sequential or not, has a median below the fixed-n size at which the most powerful test has a power
    of one half. "Reject at n if the sequential test decided by n" is a valid fixed-n test, so a sequential test
    that decided by its median in half the orders makes the most powerful test's power there at least one half."""
    y, f, m = (gold, score, minimum) if right == PASS else (1.0 - gold, 1.0 - score, 1.0 - minimum)
    S, N = y.shape
    f_mean = float(f[0].mean())
    z = y - (f - f_mean)
    # The distinct values z takes (the predictor's few levels times gold's two; a continuous score rounded to 1/64
    # for the bet's choice only, the capital reads the exact z) and each output's among them.
    key = np.round(z * 64) / 64
    atoms, which = np.unique(key, return_inverse=True)
    which = which.reshape(S, N)
    counts = np.stack([np.bincount(row, minlength=atoms.size) for row in which]).astype(float)
    z_min_rest = np.minimum.accumulate(z[:, ::-1], axis=1)[:, ::-1]
    s_y = np.zeros(S)
    log_k = np.zeros(S)
    at = np.full(S, N)
    threshold = np.log(2 / (1 - confidence))
    open_ = np.ones(S, dtype=bool)
    rows = np.arange(S)
    f_rest = f.sum(axis=1)
    for t in range(N):
        rest = N - t
        f_rest_mean = f_rest / rest
        c = (N * m - s_y) / rest - (f_rest_mean - f_mean)
        gap = atoms[None, :] - c[:, None]  # (S, A): what z - c can be
        p = counts / rest
        room = c - z_min_rest[:, t]
        top = np.where(room > 1e-12, (1 - 1e-6) / np.maximum(room, 1e-12), 1e6)
        low, high = np.zeros(S), top.copy()
        for _ in range(40):
            mid = (low + high) / 2
            slope = np.sum(p * gap / np.maximum(1 + mid[:, None] * gap, 1e-12), axis=1)
            up = slope > 0
            low = np.where(up, mid, low)
            high = np.where(up, high, mid)
        beta = np.where(np.sum(p * gap, axis=1) > 0, low, 0.0)
        log_k += np.log1p(np.maximum(beta * (z[:, t] - c), -1 + 1e-15))
        s_y += y[:, t]
        f_rest -= f[:, t]
        counts[rows, which[:, t]] -= 1
        # The exact rule: the passes already labeled settle it, whatever the rest are.
        decided = open_ & ((log_k >= threshold) | (s_y >= N * m))
        at[decided] = t + 1
        open_ &= ~decided
        if not open_.any():
            break
    return at
