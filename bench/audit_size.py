"""An audit plan's figures at candidate sizes from 1,000 to 1,000,000 outputs: what the worker computes, timed.

    python bench/audit_size.py                         # N = 1,000 ... 1,000,000, 2,000 labels, both designs
    python bench/audit_size.py --sizes 4000 --labels 800 --designs stratified
    python bench/audit_size.py --sizes 100000 --margin 0.0   # the minimum at the truth: the forecast's worst
    python bench/audit_size.py --sizes 100000 --margin 0.0 --designs jury   # the jury plan's decision and forecast

Pure statistics, no database: each case runs what a plan's figures run (calibration/audits/figures.py) on one
synthetic candidate, in a fresh process of its own on one core (so its peak memory is its own): the decision with
its anytime-valid bounds (stratified: strata_plan.stratified_decision; uniform: audit_stats.audit_decision) and the
forecast of the labels to come (strata_plan.stratified_forecast / audit_forecast.audit_forecast, with the number of
simulations a plan of that size runs, `figures.stratified_forecast_sims` / `figures.forecast_sims`). The jury design
(issue 38) is a uniform plan reading three signals: audit_predictor.jury_decision and jury_forecast.jury_forecast.

The candidate: N outputs, a true pass rate of 0.70, a judge that passes 75% with judge-gold correlation 0.6, one
seeded random order; the first --labels of it are labeled (at most a fifth of N, so the small candidates are not
labeled through), for the jury also the judge's vote share over 5 samples (each sample its verdict, flipped with
chance 0.15) and two other configs' verdicts (each gold, flipped with chance 0.2 and 0.3), the minimum --margin
below the truth (0.01 by default: undecided at 2,000 labels, so the forecast
runs; a decided plan has no forecast to compute). Peak memory: the process's peak resident set during the two
calls, above what it held before them.

Times: CPU seconds of the process (wall seconds in brackets; on a shared machine the wall time also holds the time
other processes took the core). Goals (issue 37, item 2), at N = 100,000 with 2,000 labels, both designs, in CPU
seconds: decision and bounds <= 2 s, forecast <= 10 s (the jury's forecast, issue 38: <= 10 s at margin 0).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

# One core: no BLAS threads (the figures are elementwise numpy, but a library call must not fan out either).
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from calibration.audits import figures  # noqa: E402
from calibration.stats import (  # noqa: E402
    audit_forecast,
    audit_predictor,
    audit_stats,
    audit_strata,
    jury_forecast,
    strata_plan,
)
from labeling.audit_order import DEFAULT_RELEASE  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000)
THETA, JUDGE_RATE, PHI = 0.70, 0.75, 0.6
GOAL_N, GOAL_LABELS, GOAL_DECISION, GOAL_FORECAST = 100_000, 2_000, 2.0, 10.0


def candidate(N: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gold and the judge's verdicts of N outputs in the plan's order (bench/audit.py's synthetic sets)."""
    p11 = THETA * JUDGE_RATE + PHI * math.sqrt(THETA * (1 - THETA) * JUDGE_RATE * (1 - JUDGE_RATE))
    n11, n1, nf = round(N * p11), round(N * THETA), round(N * JUDGE_RATE)
    n10, n01 = n1 - n11, nf - n11
    gold = np.r_[np.ones(n11), np.ones(n10), np.zeros(n01), np.zeros(N - n11 - n10 - n01)]
    judge = np.r_[np.ones(n11), np.zeros(n10), np.ones(n01), np.zeros(N - n11 - n10 - n01)]
    order = np.random.default_rng(seed).permutation(N)
    return gold[order], judge[order]


def jury_signals(gold: np.ndarray, judge: np.ndarray, seed: int) -> np.ndarray:
    """The jury's signals F (N, 3): the judge's vote share over 5 samples and two other configs' verdicts."""
    rng = np.random.default_rng(seed + 1)
    N = gold.size
    samples = np.where(rng.random((N, 5)) < 0.85, judge[:, None], 1 - judge[:, None])
    signals = {
        "judge": samples.mean(axis=1).tolist(),
        "second": np.where(rng.random(N) < 0.8, gold, 1 - gold).tolist(),
        "third": np.where(rng.random(N) < 0.7, gold, 1 - gold).tolist(),
    }
    return audit_predictor.predictor(signals).scores


def one_case(design: str, N: int, labels: int, margin: float, seed: int) -> dict:
    """Time one design at one size, in this process; the figures as a dict."""
    gold, judge = candidate(N, seed)
    n = min(labels, N // 5)
    minimum = THETA - margin
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    f = jury_signals(gold, judge, seed) if design == "jury" else None
    started, cpu_started = time.perf_counter(), time.process_time()
    later: Callable[..., audit_forecast.AuditForecast]
    if design == "stratified":
        strata = audit_strata.strata_of(judge)
        sizes = (int(np.sum(strata == 0)), int(np.sum(strata == 1)))
        path, ahead = strata[:n], strata[n:]
        decision = strata_plan.stratified_decision(gold=gold[:n], path=path, sizes=sizes, minimum=minimum)
        sims = figures.stratified_forecast_sims(N)
        later = partial(strata_plan.stratified_forecast, gold=gold[:n], path=path, ahead=ahead, sizes=sizes)
    elif f is not None:
        decision = audit_predictor.jury_decision(gold=gold[:n], f=f, minimum=minimum)
        sims = figures.forecast_sims(N)
        later = partial(jury_forecast.jury_forecast, gold=gold[:n], f=f, seed=figures.FORECAST_SEED)
    else:
        decision = audit_stats.audit_decision(gold=gold[:n], verdicts=judge, minimum=minimum)
        sims = figures.forecast_sims(N)
        later = partial(audit_forecast.audit_forecast, gold=gold[:n], verdicts=judge)
    decided_in, decided_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    # As a plan's figures do: a decided plan has nothing to forecast.
    forecast = (
        audit_forecast.AuditForecast.settled(k=DEFAULT_RELEASE, decided=decision.decided, n_sims=sims)
        if decision.decided
        else later(minimum=minimum, k=DEFAULT_RELEASE, n_sims=sims)
    )
    forecast_in = time.perf_counter() - started - decided_in
    forecast_cpu = time.process_time() - cpu_started - decided_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "design": design,
        "N": N,
        "labels": n,
        "minimum": minimum,
        "decided": decision.decided or "-",
        "lower": decision.lower,
        "upper": decision.upper,
        "decision_s": decided_in,
        "forecast_s": forecast_in,
        "decision_cpu": decided_cpu,
        "forecast_cpu": forecast_cpu,
        "sims": sims,
        "expected_more": forecast.expected_labels,
        "peak_mib": max(peak - before, 0) / 1024,
    }


def in_own_process(design: str, N: int, labels: int, margin: float, seed: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--one", design, str(N), "--labels", str(labels), "--margin", str(margin)]
        + ["--seed", str(seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{design} at N = {N} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES), help="candidate sizes N")
    parser.add_argument("--labels", type=int, default=GOAL_LABELS, help="labels so far (at most N / 5)")
    parser.add_argument("--margin", type=float, default=0.01, help="the true pass rate's distance above the minimum")
    parser.add_argument(
        "--designs", nargs="*", default=["stratified", "uniform"], choices=["stratified", "uniform", "jury"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", nargs=2, metavar=("DESIGN", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(args.one[0], int(args.one[1]), args.labels, args.margin, args.seed)))
        return 0
    print(
        f"true pass rate {THETA}, minimum {THETA - args.margin:g}, judge passes {JUDGE_RATE:.0%} (phi {PHI}), "
        f"{args.labels:,} labels (at most N / 5), k = {DEFAULT_RELEASE}, one process per case"
    )
    print(
        f"{'design':>10} {'N':>9} {'labels':>6} {'decided':>7} {'bounds':>15} {'decision s':>14} {'sims':>5}"
        f" {'forecast s':>14} {'E[more]':>8} {'peak MiB':>8}"
    )
    rows = []
    for N in args.sizes:
        for design in args.designs:
            r = in_own_process(design, N, args.labels, args.margin, args.seed)
            rows.append(r)
            print(
                f"{design:>10} {N:>9,} {r['labels']:>6,} {r['decided']:>7} {r['lower']:7.3f}-{r['upper']:.3f}"
                f" {r['decision_cpu']:6.2f} ({r['decision_s']:5.2f}) {r['sims']:>5}"
                f" {r['forecast_cpu']:6.2f} ({r['forecast_s']:5.2f}) {r['expected_more']:8.0f}"
                f" {r['peak_mib']:8.0f}",
                flush=True,
            )
    at_goal = [r for r in rows if r["N"] == GOAL_N and r["labels"] == GOAL_LABELS]
    for design in args.designs:
        mine = [r for r in at_goal if r["design"] == design]
        if not mine:
            print(f"  (no {design} case at N = {GOAL_N:,} with {GOAL_LABELS:,} labels: goals not measured)")
            continue
        r = mine[0]
        for what, seconds, goal in (
            ("decision and bounds", r["decision_cpu"], GOAL_DECISION),
            ("forecast", r["forecast_cpu"], GOAL_FORECAST),
        ):
            verdict = "met " if seconds <= goal else "MISSED"
            where = f"at N = {GOAL_N:,}, {GOAL_LABELS:,} labels"
            print(f"  {verdict}  {design} {what} {where} <= {goal:g} s of CPU: {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
