"""Fewer double labels in calibration: would a partly single-labeled design measure what full double labeling does?

    python bench/double_labels.py                      # 200 repetitions per set (a few minutes)
    python bench/double_labels.py --repetitions 40     # a quick look
    python bench/double_labels.py --only qags usr      # only the sets whose name holds one of these words

Issue 38, item 3: measured before anything is built. docs/calibration.md ("Fewer double labels: measured, not
built") quotes its tables. Pure numpy/pandas, no database: the project's own metrics (calibration/stats/metrics.py's
cohen_agreement for kappa with its bootstrap interval, tier_for for the tier) on labels replayed from the public
sets in ../shared/datasets (or ICEWATER_DATASETS_DIR), each with three raters per item.

Roles. Each repetition deals the raters' labels of every item to roles at random, as a queue hands an output to
whoever comes first: the first annotator, the second, and (where the judge is a model) the adjudicator, who
settles the pair's splits, so that full double labeling's gold is the three raters' majority. Where the set has
no per-item model verdicts (QAGS, XSum hallucination spans), or beside them, one rater position is the judge
("each rater a judge config, gold from the others", issue 38's Goals) and the other two are the annotators in a
random order per item; there is no fourth rater to adjudicate, so their splits stay without gold, as an
unadjudicated split does in the product.

Full double labeling: both annotators label every output; gold is their agreement (else the adjudicator's
label, or none); the human ceiling is first vs second annotator over every output.

The design: a random fraction f of the outputs (exactly round(f N), chosen before any label) is double-labeled
as above and carries the human ceiling alone; every other output gets the first annotator's label and a second
label only where a rule says so:
  disagree    the first annotator's label differs from the judge's verdict (the issue's rule: it reads the label)
  judge-pass  the judge said PASS (fixed before any label is seen: every would-be false pass gets a second look)
  random      never (only the random part is doubled: the cost of single-label gold without any selection)
Gold on a doubled output as under full labeling; on a single-labeled one, the lone first label. That is a
policy change: today a lone label is never gold (labeling/gold.py, MIN_LABELS_FOR_MAJORITY = 2).

Labels counted: every label a person gives, the first, the second and the adjudicator's. Per set, criterion,
judge, f and rule it prints, median and worst over the repetitions (each repetition compares the design with
full labeling on the same deal of roles): labels saved; the ceiling's interval width, full and design; the
judge's kappa against gold, its bias (design minus full, mean) and interval width; how often the tier differs;
and the false passes found (judge PASS, gold FAIL). Then the issue's bar: at least 40% of the labels saved,
interval widths within 0.02 of full labeling, no tier flip in any repetition.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.stats.metrics import FAIL, PASS, Agreement, cohen_agreement, tier_for  # noqa: E402
from labeling.gold import MIN_LABELS_FOR_MAJORITY  # noqa: E402

FRACTIONS = (0.2, 0.3)
BAR_SAVED = 0.40
BAR_WIDTH = 0.02

# Which outputs outside the random part get a second label, from the first label and the judge's verdict
# (True = PASS). Each returns a boolean mask over the outputs.
RULES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "disagree": lambda first, judge: first != judge,
    "judge-pass": lambda first, judge: judge.copy(),
    "random": lambda first, judge: np.zeros_like(first),
}


@dataclass(frozen=True)
class Roles:
    """One deal of the raters' labels to roles, per output (True = PASS). `adjudicator` is None where there is
    no one to settle a split (the judge is one of the three raters)."""

    first: np.ndarray
    second: np.ndarray
    adjudicator: np.ndarray | None
    judge: np.ndarray


@dataclass(frozen=True)
class Labeling:
    """What one labeling design gives the calibration report."""

    labels: int  # every label a person gave: first, second, adjudicator's
    ceiling: Agreement  # first vs second annotator over the random part (every output when fully doubled)
    judge: Agreement  # judge vs gold over the outputs with gold
    tier: str


def _strings(passed: np.ndarray) -> np.ndarray:
    return np.where(passed, PASS, FAIL)


def labeling(roles: Roles, *, doubled: np.ndarray, random_part: np.ndarray) -> Labeling:
    """Gold, labels, ceiling and judge agreement when the outputs in `doubled` get two labels and the rest one.

    Gold on a doubled output is the two labels' agreement, else the adjudicator's label (none without one); on a
    single-labeled output the lone first label (the design's policy change, see the module docstring).
    """
    split = roles.first != roles.second
    adjudicate = doubled & split if roles.adjudicator is not None else np.zeros_like(split)
    labels = len(roles.first) + int(doubled.sum()) + int(adjudicate.sum())
    settled = roles.adjudicator if roles.adjudicator is not None else roles.first  # only read where adjudicated
    gold = np.where(doubled & split, settled, roles.first)
    has_gold = ~(doubled & split) | (roles.adjudicator is not None)
    ceiling = cohen_agreement(_strings(roles.first[random_part]), _strings(roles.second[random_part]))
    judge = cohen_agreement(_strings(roles.judge[has_gold]), _strings(gold[has_gold]))
    return Labeling(labels, ceiling, judge, tier_for(judge.kappa, judge.n))


def full_labeling(roles: Roles) -> Labeling:
    everything = np.ones(len(roles.first), dtype=bool)
    return labeling(roles, doubled=everything, random_part=everything)


def design_labeling(roles: Roles, *, random_part: np.ndarray, rule: str) -> Labeling:
    """The design: `random_part` doubled for the ceiling, a second label elsewhere where RULES[rule] says."""
    second = RULES[rule](roles.first, roles.judge)
    return labeling(roles, doubled=random_part | second, random_part=random_part)


def deal(raters: np.ndarray, judge: np.ndarray | None, judge_rater: int | None, rng: np.random.Generator) -> Roles:
    """Deal each output's three labels (raters: N x 3, True = PASS) to roles at random: with a model `judge`,
    first, second and adjudicator; else rater `judge_rater` is the judge and the other two annotate."""
    n = raters.shape[0]
    if judge is not None:
        order = rng.permuted(np.tile(np.arange(3), (n, 1)), axis=1)
        dealt = np.take_along_axis(raters, order, axis=1)
        return Roles(dealt[:, 0], dealt[:, 1], dealt[:, 2], judge)
    assert judge_rater is not None
    others = raters[:, [c for c in range(3) if c != judge_rater]]
    swap = rng.random(n) < 0.5
    return Roles(
        np.where(swap, others[:, 1], others[:, 0]),
        np.where(swap, others[:, 0], others[:, 1]),
        None,
        raters[:, judge_rater],
    )


def _width(a: Agreement) -> float:
    return a.kappa_ci[1] - a.kappa_ci[0] if a.kappa_ci else np.nan


def _kappa(a: Agreement) -> float:
    return a.kappa if a.kappa is not None else np.nan


def measure(
    raters: np.ndarray,
    judge: np.ndarray | None = None,
    *,
    judge_rater: int | None = None,
    fractions: tuple[float, ...] = FRACTIONS,
    rules: tuple[str, ...] = tuple(RULES),
    repetitions: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per repetition, fraction and rule: the design beside full double labeling on the same deal."""
    rng = np.random.default_rng(seed)
    n = raters.shape[0]
    rows = []
    for rep in range(repetitions):
        roles = deal(raters, judge, judge_rater, rng)
        full = full_labeling(roles)
        for f in fractions:
            random_part = np.zeros(n, dtype=bool)
            random_part[rng.choice(n, size=round(f * n), replace=False)] = True
            for rule in rules:
                design = design_labeling(roles, random_part=random_part, rule=rule)
                rows.append(
                    {
                        "repetition": rep,
                        "f": f,
                        "rule": rule,
                        "saved": 1 - design.labels / full.labels,
                        "ceiling_width_full": _width(full.ceiling),
                        "ceiling_width": _width(design.ceiling),
                        "kappa_full": _kappa(full.judge),
                        "kappa": _kappa(design.judge),
                        "kappa_width_full": _width(full.judge),
                        "kappa_width": _width(design.judge),
                        "tier_full": full.tier,
                        "tier": design.tier,
                        "false_pass_full": full.judge.false_pass,
                        "false_pass": design.judge.false_pass,
                    }
                )
    return pd.DataFrame(rows)


def worst(gaps: pd.Series) -> float:
    """The gap farthest from zero, with its sign (NaN if none is defined)."""
    return float(gaps.loc[gaps.abs().idxmax()]) if gaps.notna().any() else np.nan


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Per fraction and rule: medians and worst cases over the repetitions, and whether the issue's bar holds:
    median labels saved >= 40%, the median interval width gaps within 0.02 of full labeling either way (a
    narrower interval is no better: on a near-constant subsample the bootstrap collapses), no tier flip at all."""
    out = []
    for (f, rule), g in runs.groupby(["f", "rule"], sort=False):
        ceiling_gap = g["ceiling_width"] - g["ceiling_width_full"]
        kappa_gap = g["kappa_width"] - g["kappa_width_full"]
        bias = g["kappa"] - g["kappa_full"]
        flips = float((g["tier"] != g["tier_full"]).mean())
        row = {
            "f": f,
            "rule": rule,
            "saved": g["saved"].median(),
            "saved_worst": g["saved"].min(),
            "ceiling_width_full": g["ceiling_width_full"].median(),
            "ceiling_width": g["ceiling_width"].median(),
            "ceiling_gap_worst": worst(ceiling_gap),
            "kappa_full": g["kappa_full"].median(),
            "bias": bias.mean(),
            "bias_worst": worst(bias),
            "kappa_width_full": g["kappa_width_full"].median(),
            "kappa_width": g["kappa_width"].median(),
            "kappa_gap_worst": worst(kappa_gap),
            "tier_full": g["tier_full"].mode().iloc[0],
            "flips": flips,
            "false_pass_full": g["false_pass_full"].median(),
            "false_pass": g["false_pass"].median(),
            "false_pass_missed_worst": (g["false_pass_full"] - g["false_pass"]).max(),
        }
        row["bar"] = bool(
            row["saved"] >= BAR_SAVED
            and abs(ceiling_gap.median()) <= BAR_WIDTH
            and abs(kappa_gap.median()) <= BAR_WIDTH
            and flips == 0
        )
        out.append(row)
    return pd.DataFrame(out)


# --- The public sets: (name, criterion, raters N x 3 (True = PASS), model judge or None) -----------------


def datasets_dir() -> Path:
    return Path(os.environ.get("ICEWATER_DATASETS_DIR", ROOT.parent / "shared" / "datasets"))


Set = tuple[str, np.ndarray, np.ndarray | None, str]


def qags(base: Path) -> Iterator[Set]:
    votes = []
    for name in ("mturk_cnndm.jsonl", "mturk_xsum.jsonl"):
        for line in (base / "qags" / name).read_text().splitlines():
            for sentence in json.loads(line)["summary_sentences"]:
                votes.append([r["response"] == "yes" for r in sentence["responses"]])
    yield "qags factually_consistent", np.array(votes), None, ""


XSUM_SYSTEMS = {"bert_withckpt": "BERTS2S", "ptgen": "PtGen", "tconvs2s": "TConvS2S", "bert_nockpt": "TranS2S"}
POSITIONS = ("wid_0", "wid_1", "wid_2")


def xsum(base: Path) -> Iterator[Set]:
    folder = base / "xsum_hallucination"
    factual: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    with open(folder / "factuality_annotations_xsum_summaries.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["is_factual"] in ("yes", "no"):
                factual[(row["bbcid"], row["system"])][row["worker_id"]] = row["is_factual"] == "yes"
    entailment = {}
    with open(folder / "eval_scores_xsum_summaries.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            prefix, bbcid = row["system_bbcid"].rsplit("_", 1)
            entailment[(bbcid, XSUM_SYSTEMS[prefix])] = float(row["Entailment"]) >= 0.5
    keys = sorted(k for k, v in factual.items() if len(v) == 3 and k in entailment)
    raters = np.array([[factual[k][p] for p in POSITIONS] for k in keys])
    yield "xsum factual", raters, np.array([entailment[k] for k in keys]), "Entailment>=0.5"
    # No hallucinated span: a rater passes a summary where every row they wrote has no hallucination type.
    clean: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    with open(folder / "hallucination_annotations_xsum_summaries.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            item = clean[(row["bbcid"], row["system"])]
            item[row["worker_id"]] = item.get(row["worker_id"], True) and row["hallucination_type"] == "NULL"
    keys = sorted(k for k, v in clean.items() if len(v) == 3)
    yield "xsum no_hallucination", np.array([[clean[k][p] for p in POSITIONS] for k in keys]), None, ""


def usr(base: Path) -> Iterator[Set]:
    folder = base / "usr_dialog"
    for corpus, name in (("topical", "topical_chat"), ("persona", "percona_chat")):
        contexts = json.loads((folder / f"usr_{name}.json").read_text())
        scored = json.loads((folder / f"eval_usr_{name}.json").read_text())
        responses = [r for c in contexts for r in c["responses"]]
        scores = [s for c in scored for s in c["responses"]]
        # The README's weak GLUE judges at 0.5: cola for Understandable, fact_mrpc for Uses Knowledge.
        for criterion, column, metric in (
            ("understandable", "Understandable", "cola"),
            ("uses_knowledge", "Uses Knowledge", "fact_mrpc"),
        ):
            raters = np.array([[s == 1 for s in r[column]] for r in responses])
            judge = np.array([s[metric] >= 0.5 for s in scores])
            yield f"usr-{corpus} {criterion}", raters, judge, f"{metric}>=0.5"


# --- Printing ------------------------------------------------------------------------------------------


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if pd.isna(x) else f"{x:.{digits}f}"


HEADER = (
    f"{'judge':<17} {'f':>4} {'rule':<10} {'saved% med/min':>15} {'ceil width full/des':>20} {'gap worst':>9}"
    f" {'kappa full':>10} {'bias mean/worst':>16} {'kappa width full/des':>21} {'gap worst':>9} {'flips':>6}"
    f" {'FP full/des':>12} {'FP missed max':>13} {'bar':>4}"
)


def print_rows(judge: str, table: pd.DataFrame) -> None:
    for r in table.itertuples():
        print(
            f"{judge:<17} {r.f:>4} {r.rule:<10} {f'{100 * r.saved:.1f}/{100 * r.saved_worst:.1f}':>15}"
            f" {f'{_f(r.ceiling_width_full)}/{_f(r.ceiling_width)}':>20} {_f(r.ceiling_gap_worst):>9}"
            f" {_f(r.kappa_full):>10} {f'{_f(r.bias)}/{_f(r.bias_worst)}':>16}"
            f" {f'{_f(r.kappa_width_full)}/{_f(r.kappa_width)}':>21} {_f(r.kappa_gap_worst):>9}"
            f" {f'{100 * r.flips:.0f}%':>6} {f'{r.false_pass_full:.0f}/{r.false_pass:.0f}':>12}"
            f" {r.false_pass_missed_worst:>13.0f} {'yes' if r.bar else 'no':>4}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=200, help="random deals and random parts per judge")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=[], help="only the sets whose name holds one of these words")
    args = parser.parse_args()
    base = datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base}: set ICEWATER_DATASETS_DIR", file=sys.stderr)
        return 1
    print(
        f"{args.repetitions} repetitions; the design's single-labeled outputs take the lone first label as gold"
        f" (today MIN_LABELS_FOR_MAJORITY = {MIN_LABELS_FOR_MAJORITY}: a lone label is never gold)."
    )
    print("Medians over repetitions; 'worst' is the repetition farthest from full labeling. Gaps: design minus full.")
    started = time.perf_counter()
    tables = []
    for source in (qags(base), xsum(base), usr(base)):
        for name, raters, model, model_name in source:
            if args.only and not any(word in name for word in args.only):
                continue
            print(f"\n{name}: {raters.shape[0]} outputs, PASS rate of the labels {raters.mean():.3f}")
            print(HEADER)
            judges: list[tuple[str, np.ndarray | None, int | None]] = [(f"rater {k}", None, k) for k in range(3)]
            if model is not None:
                judges.insert(0, (model_name, model, None))
            for label, judge, judge_rater in judges:
                runs = measure(raters, judge, judge_rater=judge_rater, repetitions=args.repetitions, seed=args.seed)
                table = summarise(runs)
                print_rows(label, table)
                tables.append(table.assign(set=name, judge=label))
    if not tables:
        print("no set matches --only", file=sys.stderr)
        return 1
    cells = pd.concat(tables, ignore_index=True)
    print(f"\n{len(cells)} set x judge x design cells, {time.perf_counter() - started:.0f} s")
    print("Per design, over every set and judge (ranges of the medians; flips: the most repetitions of one cell):")
    for (f, rule), g in cells.groupby(["f", "rule"], sort=False):
        ratio = g["ceiling_width"] / g["ceiling_width_full"]
        print(
            f"  f = {f} {rule:<10} saved {100 * g['saved'].min():.1f}-{100 * g['saved'].max():.1f}%,"
            f" ceiling width x{ratio.min():.2f}-x{ratio.max():.2f}, kappa bias {g['bias'].min():+.3f} to"
            f" {g['bias'].max():+.3f}, tier flips in {int((g['flips'] > 0).sum())} of {len(g)} cells"
            f" (at most {100 * g['flips'].max():.0f}%)"
        )
    passing = cells[cells["bar"]]
    print(
        f"The issue's bar (median labels saved >= {BAR_SAVED:.0%}, median interval widths within {BAR_WIDTH} of"
        f" full labeling either way, no tier flip in any repetition): met in {len(passing)} of {len(cells)} cells."
    )
    for r in passing.itertuples():
        print(f"  met: {r.set}, judge {r.judge}, f = {r.f}, {r.rule}")
    everywhere = [key for key, g in cells.groupby(["f", "rule"], sort=False) if g["bar"].all()]
    print(
        "A design that meets it on every set: "
        + (", ".join(f"f = {f} {rule}" for f, rule in everywhere) or f"none (of {cells['set'].nunique()} sets)")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
