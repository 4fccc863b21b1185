"""The transport test (issue 40): its false warnings and its power, by simulation with known truth.

    python bench/transport.py               # 2,000 candidates a cell (about a minute)
    python bench/transport.py --sims 500    # a quick look

The calibration is the issue's FaithBench judge: TPR 0.90 on 1,000 gold PASS outputs, TNR 0.228 on 250 gold FAIL
outputs (and, beside it, a judge with TNR 0.80 on 250). A candidate has n gold outputs, 41% of them FAIL as in the
issue, and the judge's TNR there is the calibration's, or 0.05 or 0.10 lower (TPR unchanged). Every simulated
candidate draws both samples afresh (the calibration's counts too: its rates are estimates as well) and runs
calibration.candidate_evidence.transport_test at level 0.05 (Fisher's exact test per rate at 0.025).

It prints, per n in 50, 100, 200, 400: the false-warning rate with no move (goal: at most the level, 0.05), the
warning rate under each move (the power, simulated) beside the power the gate states for the median candidate
(statsmodels' z-test approximation), and how often the gate says "no warning, but it means little".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.stats.candidate_evidence import drop_power, transport_test  # noqa: E402

LEVEL = 0.05
SIZES = (50, 100, 200, 400)
MOVES = (0.0, 0.05, 0.10)
FAIL_SHARE = 207 / 350  # the candidate: 0.409 pass
CALIBRATION_PASS, CALIBRATION_FAIL, TPR = 1000, 250, 0.90


def cells(rng: np.random.Generator, good: int, bad: int, tpr: float, tnr: float) -> tuple[int, int, int, int]:
    tp, tn = int(rng.binomial(good, tpr)), int(rng.binomial(bad, tnr))
    return tp, bad - tn, good - tp, tn


def run(tnr: float, sims: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"\ncalibration TNR {tnr:.3f} on {CALIBRATION_FAIL} gold FAIL, TPR {TPR:.2f} on {CALIBRATION_PASS} gold PASS")
    print(f"{'gold n':>6} {'move':>5} {'warned':>7} {'stated power':>12} {'means little':>12}")
    worst_false = 0.0
    for n in SIZES:
        for move in MOVES:
            warned = little = 0
            for _ in range(sims):
                calibration = cells(rng, CALIBRATION_PASS, CALIBRATION_FAIL, TPR, tnr)
                bad = int(rng.binomial(n, FAIL_SHARE))
                candidate = cells(rng, n - bad, bad, TPR, tnr - move)
                t = transport_test(calibration=calibration, candidate=candidate, level=LEVEL)
                warned += t.warning is not None
                little += t.too_little_gold is not None
            stated = (
                drop_power(
                    rate=tnr,
                    calibration_n=CALIBRATION_FAIL,
                    candidate_n=round(n * FAIL_SHARE),
                    move=move,
                    level=LEVEL / 2,
                )
                if move
                else None
            )
            rate = warned / sims
            if not move:
                worst_false = max(worst_false, rate)
            shown = "—" if stated is None else f"{stated:.0%}"
            print(f"{n:>6} {move:>5.2f} {rate:>7.1%} {shown:>12} {little / sims:>12.0%}")
    verdict = "met" if worst_false <= LEVEL else "MISSED"
    print(f"false warnings with no move: worst {worst_false:.1%} (goal <= {LEVEL:.0%}): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=40)
    args = parser.parse_args()
    for tnr in (0.228, 0.80):
        run(tnr, args.sims, args.seed)


if __name__ == "__main__":
    main()
