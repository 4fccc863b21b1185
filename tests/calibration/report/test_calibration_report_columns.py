"""The calibration report's exports keep their shape: the JSON keys of a criterion, the CSV columns, their order
and every byte of a worked report, as the report wrote them before its row was composed of its parts. The text
file, the price of gating and the transport test are pinned as they were written before compose.py was split
into its concepts (issue 35), so that the row's shape can change without the files changing.

Programs read these files by name and by position (a spreadsheet, a CI step), so a key that moves is a break.
The lists below are copied from the output of the report as it was (not from the code that makes them now).
"""

from __future__ import annotations

import json
import re
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from calibration.report.compose import CalibrationReport, Segment, SegmentedReport
from calibration.report.files import to_csv, to_json, to_text
from calibration.report.pricing import MarkedCalibration, price_rows, transport_rows
from calibration.report.rows import REPORT_COLUMNS, REPORT_KEYS, CriterionReport, build_rows

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "calibration_report"

JSON_KEYS = [
    "criterion", "gold_policy", "n", "kappa", "kappa_ci", "observed_agreement", "expected_agreement",
    "gold_pass_rate", "judge_pass_rate", "true_pass", "false_pass", "true_fail", "false_fail", "tpr", "tpr_ci",
    "tnr", "tnr_ci", "balanced_accuracy", "balanced_accuracy_ci", "f1", "f1_ci", "judge_error", "judge_abstain",
    "not_applicable", "pending_gold", "evidence_not_found", "labeled_items", "gold_ties", "awaiting_gold",
    "human_kappa", "human_kappa_ci", "human_n", "human_alpha", "human_alpha_ci", "human_pairwise_kappa",
    "human_pairwise_kappa_ci", "human_pairs", "human_pairs_undefined", "human_pair_median_items",
    "human_items_over_two", "human_ceiling", "human_ceiling_ci", "human_ceiling_source",
    "human_quotes_outside_response", "judge_samples", "judge_self_alpha", "judge_self_alpha_ci", "judge_self_n",
    "tier", "warnings",
]  # fmt: skip

CSV_HEADER = (
    "criterion,gold_policy,n,kappa,kappa_ci_low,kappa_ci_high,observed_agreement,expected_agreement,"
    "gold_pass_rate,judge_pass_rate,true_pass,false_pass,true_fail,false_fail,tpr,tpr_ci_low,tpr_ci_high,tnr,"
    "tnr_ci_low,tnr_ci_high,balanced_accuracy,balanced_accuracy_ci_low,balanced_accuracy_ci_high,f1,f1_ci_low,"
    "f1_ci_high,judge_error,judge_abstain,not_applicable,pending_gold,evidence_not_found,labeled_items,gold_ties,"
    "awaiting_gold,human_kappa,human_kappa_ci_low,human_kappa_ci_high,human_n,human_alpha,human_alpha_ci_low,"
    "human_alpha_ci_high,human_pairwise_kappa,human_pairwise_kappa_ci_low,human_pairwise_kappa_ci_high,"
    "human_pairs,human_pairs_undefined,human_pair_median_items,human_items_over_two,human_ceiling,"
    "human_ceiling_ci_low,human_ceiling_ci_high,human_ceiling_source,human_quotes_outside_response,"
    "judge_samples,judge_self_alpha,judge_self_alpha_ci_low,judge_self_alpha_ci_high,judge_self_n,tier,warnings"
)

P, F, NA, AB, ER = "PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN", "ERROR"
CRITERIA = [(1, "correct_amount"), (2, "next_step"), (3, "tone")]


def frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Three annotators on twelve outputs, one adjudication, a judge with two samples on some items: enough
    for every part of a row (kappa, the rates, every bucket, the human figures, self-agreement, warnings)."""
    people = {
        1: "PPFPFPPFPPFP",  # criterion 1: amy, bo and cy
        2: "PPPPPPPPPPPP",
        3: "FFPPNNPPFPPF",
    }
    labels = []
    for crit, amy in people.items():
        bo = amy[::-1]
        cy = "".join("F" if i % 3 == 0 else c for i, c in enumerate(amy))
        for who, row in ((1, amy), (2, bo), (3, cy)):
            for output, c in enumerate(row, start=1):
                if who == 3 and output > 8:
                    continue  # cy labeled only eight
                outcome = {"P": P, "F": F, "N": NA}[c]
                labels.append(
                    (output, crit, 100 * who + output, who, who, outcome, int(output == 2 and who == 1 and crit == 1))
                )
    label_frame = pd.DataFrame(
        labels,
        columns=["output", "criterion", "annotation", "annotator", "slot", "outcome", "quotes_outside_response"],
    )
    adjudicated = pd.DataFrame([(5, 1, F)], columns=["output", "criterion", "outcome"])
    verdicts = []
    judge = {1: "PPPPFPPFPPFE", 2: "PPPPPPPPPPPA", 3: "FPPFNNPPFPPP"}
    for crit, row in judge.items():
        for output, c in enumerate(row, start=1):
            outcome = {"P": P, "F": F, "N": NA, "A": AB, "E": ER}[c]
            verdicts.append((output, crit, -7, 0, outcome, output != 4))
            if crit == 3 and output <= 6:  # a second sample, disagreeing now and then
                verdicts.append((output, crit, -7, 1, F if output % 2 else outcome, True))
            if crit == 1 and output == 1:  # an older run: superseded
                verdicts.append((output, crit, -3, 0, F, True))
    verdict_frame = pd.DataFrame(
        verdicts, columns=["output", "criterion", "run_rank", "sample", "outcome", "evidence_found"]
    )
    return label_frame, adjudicated, verdict_frame


def worked_rows():
    labels, adjudicated, verdicts = frames()
    return build_rows(
        criteria=CRITERIA,
        labels=labels,
        adjudicated=adjudicated,
        verdicts=verdicts,
        gating=["correct_amount"],
        gold_policies={1: "majority", 2: "unanimous", 3: "any_fail"},
    )


AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def worked_report() -> CalibrationReport:
    head = {"eval_set": "cal", "rubric_version": "refund@1", "judge_config": "gpt-judge"}
    return CalibrationReport(
        **head,
        judge_config_hash="abc123",
        model_id="judge-model-1",
        agent_version=None,
        computed_at=AT,
        rows=tuple(worked_rows()),
    )


def worked_segments() -> SegmentedReport:
    rows = tuple(worked_rows())
    return SegmentedReport(
        eval_set="cal",
        rubric_version="refund@1",
        judge_config="gpt-judge",
        judge_config_hash="abc123",
        model_id="judge-model-1",
        computed_at=AT,
        segments=(Segment("v1", rows), Segment("v2", rows[:1])),
    )


def worked_priced_report() -> CalibrationReport:
    """The worked report as a release candidate: the price of gating and the transport test read the row's
    confusion cells, so they are pinned too."""
    report = worked_report()
    marks = [
        MarkedCalibration("correct_amount", 99, 0.9, 0.95, (40, 3, 5, 20)),
        MarkedCalibration("tone", 99, 0.8, 0.9, (10, 2, 2, 10)),
    ]
    return replace(
        report,
        gating_prices=price_rows(report.rows, 200, {"correct_amount": 0.9}, "this eval set"),
        transport=transport_rows(report.rows, marks, eval_set_id=1),
    )


def test_a_criterion_has_exactly_these_json_keys_in_this_order():
    data = json.loads(to_json(worked_report()))
    assert [list(c) for c in data["criteria"]] == [JSON_KEYS] * 3


def test_the_key_table_reads_every_key_once_from_one_part_of_the_row():
    keys = [key for key, _, _ in REPORT_COLUMNS]
    assert keys == JSON_KEYS and list(REPORT_KEYS) == JSON_KEYS  # each key once, in the documented order
    sources = [(part, attribute) for _, part, attribute in REPORT_COLUMNS]
    assert len(set(sources)) == len(sources)  # no figure is exported under two keys
    row = worked_rows()[0]
    for _, part, attribute in REPORT_COLUMNS:
        assert hasattr(getattr(row, part) if part else row, attribute)
    # Every field of the row is a part the table reads or a figure of its own, except what only the pages use.
    read = {part or attribute for _, part, attribute in REPORT_COLUMNS}
    assert {f.name for f in fields(CriterionReport)} - read == {"criterion_id", "gating"}


def test_the_csv_has_exactly_these_columns_in_this_order():
    assert to_csv(worked_report()).splitlines()[0] == CSV_HEADER
    assert to_csv(worked_segments()).splitlines()[0] == "agent_version," + CSV_HEADER


@pytest.mark.parametrize(
    ("name", "render"),
    [
        ("report.json", lambda: to_json(worked_report())),
        ("report.csv", lambda: to_csv(worked_report())),
        ("segments.json", lambda: to_json(worked_segments())),
        ("segments.csv", lambda: to_csv(worked_segments())),
        ("report.txt", lambda: to_text(worked_report())),
        ("segments.txt", lambda: to_text(worked_segments())),
        ("priced.json", lambda: to_json(worked_priced_report())),
    ],
)
def test_a_worked_report_exports_byte_for_byte_as_before(name, render):
    assert render() == (GOLDEN / name).read_text(encoding="utf-8")


def test_the_worked_report_exercises_every_part_of_a_row():
    # Otherwise the byte-for-byte comparison would pin empty figures only.
    rows = {r.criterion: r for r in worked_rows()}
    amount, step, tone = rows["correct_amount"], rows["next_step"], rows["tone"]
    assert amount.judge.kappa is not None and amount.human.pairwise_kappa is not None and amount.human.alpha is not None
    assert (
        amount.judge.false_pass
        and amount.buckets.judge_error
        and amount.buckets.evidence_not_found
        and amount.gold.gold_ties
    )
    assert step.buckets.judge_abstain and step.judge.kappa is None
    assert tone.buckets.not_applicable and tone.self_agreement.samples == 2 and tone.self_agreement.alpha is not None
    assert tone.human_quotes_outside_response == 0 and amount.human_quotes_outside_response == 1
    codes = {code for r in rows.values() for code in r.warning_codes}
    assert {"false_pass_on_gating", "kappa_undefined", "small_n", "humans_disagree", "human_pairs_sparse"} <= codes
    assert {"human_ab_subset", "evidence_not_found", "many_ties", "much_gold_pending"} <= codes


def test_docs_list_every_key_of_a_criterion_and_no_other():
    docs = (Path(__file__).resolve().parents[3] / "docs" / "calibration.md").read_text(encoding="utf-8")
    table = docs.split("| key | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = {key for line in table.splitlines()[2:] for key in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1])}
    assert documented == set(JSON_KEYS) - {"criterion"}  # the criterion's key names the row
