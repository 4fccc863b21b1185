"""The calibration report read from the database: gold, current verdicts, buckets, the human ceiling."""

from __future__ import annotations

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.report.ceiling import human_agreement_from_labels
from calibration.report.compose import calibration_report, criterion_tiers, human_agreement, segmented_report
from calibration.report.rows import REPORT_KEYS
from labeling.models import Annotation, GoldLabel, Label
from tests.factories import (
    add_verdict,
    adjudicate,
    annotate,
    annotator,
    bulk_calibration,
    calibration_set,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_run,
)

pytestmark = pytest.mark.django_db

P, F, NA, AB, ER = "PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN", "ERROR"


@pytest.fixture
def setup():
    es = make_eval_set("cal")
    rv = make_rubric_version("refund", "1")
    judge = make_judge("gpt-judge")
    return es, rv, judge


def report(es, rv, judge, **kw):
    return calibration_report(eval_set=es, rubric_version=rv, judge_config=judge, **kw)


def test_the_worked_example_read_from_the_database(setup):
    es, rv, judge = setup
    # 145 true passes, 15 false passes, 5 false fails, 35 true fails; both annotators agree (gold by majority).
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35)})
    row = report(es, rv, judge).row("correct_amount")
    assert row.judge.n == 200
    assert row.judge.kappa == pytest.approx(0.25 / 0.35)
    assert (row.judge.true_pass, row.judge.false_pass, row.judge.false_fail, row.judge.true_fail) == (145, 15, 5, 35)
    assert row.judge.reference_pass_rate == pytest.approx(0.75) and row.judge.rater_pass_rate == pytest.approx(0.80)
    assert row.tier == "gate"
    assert row.human.kappa == pytest.approx(1.0) and row.human.n == 200 and row.human.alpha == pytest.approx(1.0)
    # Named for people (PASS positive): of 50 failures it catches 35, of 150 good outputs it passes 145.
    assert row.rates.tnr == pytest.approx(0.7) and row.rates.tpr == pytest.approx(145 / 150)
    assert row.in_words == "catches 70% of failures (35 of 50), passes 97% of good outputs (145 of 150)"
    assert row.rates.balanced_accuracy == pytest.approx(0.8333, abs=1e-4) and row.rates.f1 == pytest.approx(290 / 310)
    data = row.as_dict()
    assert data["tnr_ci"][0] < 0.7 < data["tnr_ci"][1] and data["f1_ci"][0] < data["f1"] < data["f1_ci"][1]


def test_the_tiers_alone_are_the_reports_tiers(setup):
    es, rv, judge = setup
    # correct_amount: the worked example above, kappa 0.714 on 200 items (gate); next_step: a judge that
    # passes all 200 of which people fail 50: observed 0.75, chance 1 * 0.75 + 0 * 0.25 = 0.75, kappa 0 (unusable).
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (150, 50, 0, 0)})
    tiers = criterion_tiers(eval_set=es, rubric_version=rv, judge_config=judge)
    assert tiers == {"correct_amount": "gate", "next_step": "unusable"}
    assert tiers == {r.criterion: r.tier for r in report(es, rv, judge).rows}
    # 60 items: below MIN_N for any tier.
    small = make_eval_set("small")
    bulk_calibration(small, rv, judge, {"correct_amount": (30, 10, 10, 10)})
    assert criterion_tiers(eval_set=small, rubric_version=rv, judge_config=judge)["correct_amount"] == "insufficient"


def test_always_pass_judge_is_flagged_as_constant(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"next_step": (P, P, P)}] * 9 + [{"next_step": (F, F, P)}])
    row = report(es, rv, judge).row("next_step")
    assert row.judge.observed_agreement == pytest.approx(0.9)
    assert row.judge.kappa == 0.0
    assert "constant_judge" in row.warning_codes
    message = next(w.message for w in row.warnings if w.code == "constant_judge")
    assert "cannot discriminate" in message and "0.90" in message
    assert row.tier == "insufficient"  # and n = 10 is far too small anyway
    assert "small_n" in row.warning_codes


def test_undefined_kappa_is_null_with_the_reason(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"next_step": (P, P, P)}] * 4)
    row = report(es, rv, judge).row("next_step")
    assert row.judge.kappa is None and row.judge.kappa_ci is None
    assert row.as_dict()["kappa"] is None
    assert row.warning_codes[0] == "kappa_undefined"
    assert "undefined" in row.warnings[0].message


def test_a_criterion_without_data_says_no_data(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}])
    row = report(es, rv, judge).row("next_step")
    assert row.judge.n == 0 and row.judge.kappa is None and row.judge.observed_agreement is None
    assert row.warning_codes == ["no_data"]
    assert row.tier == "insufficient"


def test_every_item_lands_in_exactly_one_bucket(setup):
    es, rv, judge = setup
    key = "correct_amount"
    rows = [
        {key: (P, P, P)},  # n (true pass)
        {key: (F, F, P)},  # n (false pass)
        {key: (P, P, ER)},  # judge_error
        {key: (None, None, ER)},  # judge_error even without gold
        {key: (F, F, AB)},  # judge_abstain
        {key: (P, P, NA)},  # not_applicable (judge side)
        {key: (NA, NA, P)},  # not_applicable (gold side)
        {key: (P, F, P)},  # pending_gold: split, not adjudicated
        {key: (P, None, F)},  # pending_gold: one label only
        {key: (AB, AB, F)},  # pending_gold: people could not tell
        {key: (P, F, F, F)},  # n (true fail): split, adjudicated FAIL
        {key: (P, P, None)},  # no verdict: warning only
    ]
    calibration_set(es, rv, judge, rows)
    row = report(es, rv, judge).row(key)
    assert (row.judge.n, row.judge.true_pass, row.judge.false_pass, row.judge.true_fail, row.judge.false_fail) == (
        3,
        1,
        1,
        1,
        0,
    )
    assert (
        row.buckets.judge_error,
        row.buckets.judge_abstain,
        row.buckets.not_applicable,
        row.buckets.pending_gold,
    ) == (2, 1, 2, 3)
    assert row.buckets.no_verdict == 1 and "no_verdict" in row.warning_codes
    assert row.judge_items + row.buckets.no_verdict == len(rows)


def test_adjudicated_gold_wins_over_the_majority_and_only_the_current_revision_counts(setup):
    es, rv, judge = setup
    [out] = calibration_set(es, rv, judge, [{"correct_amount": (P, P, P, F)}])
    row = report(es, rv, judge).row("correct_amount")
    assert (row.judge.false_pass, row.judge.true_pass) == (1, 0)
    gold = GoldLabel.objects.get(output=out)
    gold.is_current = False
    gold.save()
    adjudicate(out, rv, "correct_amount", P, gold.decided_by, revision=2)
    row = report(es, rv, judge).row("correct_amount")
    assert (row.judge.false_pass, row.judge.true_pass) == (0, 1)


def test_drafts_and_old_label_revisions_are_not_gold(setup):
    es, rv, judge = setup
    out = make_output(es, case_id="x")
    run = make_run(es, rv, judge)
    annotate(out, rv, annotator("amy"), 1, {"correct_amount": P})
    annotate(out, rv, annotator("bo"), 2, {"correct_amount": P}, submitted=False)
    add_verdict(run, out, "correct_amount", F)
    assert report(es, rv, judge).row("correct_amount").buckets.pending_gold == 1
    Annotation.objects.filter(slot=2).update(status=Annotation.Status.SUBMITTED)
    assert report(es, rv, judge).row("correct_amount").judge.false_fail == 1
    # B corrects the label after submission: the old revision stays but no longer counts.
    old = Label.objects.get(annotation__slot=2)
    old.is_current = False
    old.save()
    Label.objects.create(annotation=old.annotation, criterion=old.criterion, outcome=F, revision=2, evidence="NONE")
    assert report(es, rv, judge).row("correct_amount").buckets.pending_gold == 1


def test_the_newest_run_wins_and_samples_vote(setup):
    es, rv, judge = setup
    outs = calibration_set(es, rv, judge, [{"correct_amount": (P, P, None)}] * 3)
    old, new = make_run(es, rv, judge), make_run(es, rv, judge)
    # output 0: the old run said FAIL, the new one PASS -> PASS.
    add_verdict(old, outs[0], "correct_amount", F)
    add_verdict(new, outs[0], "correct_amount", P)
    # output 1: three samples PASS, FAIL, PASS -> PASS (2 of 3).
    for s, o in enumerate([P, F, P]):
        add_verdict(new, outs[1], "correct_amount", o, sample=s)
    # output 2: two samples that disagree -> a tie -> ABSTAIN.
    add_verdict(new, outs[2], "correct_amount", P, sample=0)
    add_verdict(new, outs[2], "correct_amount", F, sample=1)
    row = report(es, rv, judge).row("correct_amount")
    assert (row.judge.true_pass, row.judge.false_fail, row.buckets.judge_abstain) == (2, 0, 1)


def test_other_judges_rubric_versions_and_eval_sets_are_left_out(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}])
    other_judge, other_set = make_judge("other"), make_eval_set("other-set")
    calibration_set(es, rv, other_judge, [{"correct_amount": (F, F, P)}])
    calibration_set(other_set, rv, judge, [{"correct_amount": (F, F, P)}])
    row = report(es, rv, judge).row("correct_amount")
    assert (row.judge.n, row.judge.true_pass, row.buckets.no_verdict) == (
        1,
        1,
        1,
    )  # the other judge's output has no verdict here


def test_evidence_not_found_is_counted_but_stays_in_kappa(setup):
    es, rv, judge = setup
    out = make_output(es, case_id="q")
    annotate(out, rv, annotator("amy"), 1, {"correct_amount": P})
    annotate(out, rv, annotator("bo"), 2, {"correct_amount": P})
    add_verdict(make_run(es, rv, judge), out, "correct_amount", P, evidence="made up", evidence_found=False)
    row = report(es, rv, judge).row("correct_amount")
    assert row.buckets.evidence_not_found == 1 and row.judge.n == 1
    assert "evidence_not_found" in row.warning_codes


def test_the_report_has_exactly_the_documented_keys(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, F, P)}])
    data = report(es, rv, judge).as_dict()
    assert [tuple(c) for c in data["criteria"]] == [REPORT_KEYS] * 2
    assert data["judge_config"] == "gpt-judge" and data["model_id"] == "judge-model-1"
    assert data["rubric_version"] == "refund@1" and "computed_at" in data


def test_human_ceiling_of_three_annotators_by_hand(setup):
    es, rv, judge = setup
    key = "correct_amount"
    triples = [(P, P, P), (P, F, F), (F, F, F), (P, P, F)]  # amy, bo, cy on four outputs
    people = [annotator(n) for n in ("amy", "bo", "cy")]
    for i, triple in enumerate(triples):
        out = make_output(es, case_id=f"h{i}")
        for slot, (person, outcome) in enumerate(zip(people, triple, strict=True), start=1):
            annotate(out, rv, person, slot, {key: outcome})
    h = human_agreement(eval_set=es, rubric_version=rv)[key]
    # Pairs by hand (po observed, pe chance agreement):
    #   amy-bo (P,P) (P,F) (F,F) (P,P): po 3/4, pass rates 3/4 and 1/2, pe 1/2,   kappa 1/2
    #   amy-cy (P,P) (P,F) (F,F) (P,F): po 1/2, pass rates 3/4 and 1/4, pe 3/8,   kappa 1/5
    #   bo-cy  (P,P) (F,F) (F,F) (P,F): po 3/4, pass rates 1/2 and 1/4, pe 1/2,   kappa 1/2
    # mean pairwise kappa = (1/2 + 1/5 + 1/2) / 3 = 2/5.
    assert h.pairwise.kappa == pytest.approx(0.4)
    assert (h.pairwise.pairs, h.pairwise.undefined_pairs, h.pairwise.items) == (3, 0, 4)
    low, high = h.pairwise.kappa_ci
    assert low <= 0.4 <= high
    # Alpha over all three: each unit of 3 adds pair weights 1/(3-1): PPP -> o_PP 3; PFF -> o_PF 1, o_FP 1,
    # o_FF 1; FFF -> o_FF 3; PPF -> o_PP 1, o_PF 1, o_FP 1. n_P = 6, n_F = 6, n = 12, disagreeing mass 4.
    # alpha = 1 - (n - 1) * 4 / (2 * n_P * n_F) = 1 - 11 * 4 / 72 = 28 / 72.
    assert h.alpha == pytest.approx(28 / 72)
    assert h.alpha_ci[0] <= 28 / 72 <= h.alpha_ci[1]
    # No output has exactly two labels: A vs B has nothing, and says why.
    assert (h.n, h.kappa, h.over_two) == (0, None, 4)
    # Four shared items per pair are far fewer than PAIR_MIN_ITEMS: the ceiling is alpha.
    assert h.ceiling == ("alpha", h.alpha, h.alpha_ci)
    assert human_agreement(eval_set=es.pk, rubric_version=rv.pk)["next_step"].n == 0


def test_annotator_a_vs_b_counts_only_items_two_people_labeled(setup):
    es, rv, judge = setup
    key = "correct_amount"
    rows = [(P, P), (P, F), (F, F), (P, P)]  # two labels each: A vs B kappa 1/2 (by hand above)
    for i, (a, b) in enumerate(rows):
        out = make_output(es, case_id=f"two{i}")
        annotate(out, rv, annotator("amy"), 1, {key: a})
        annotate(out, rv, annotator("bo"), 2, {key: b})
    out = make_output(es, case_id="three")
    for slot, (who, outcome) in enumerate((("amy", F), ("bo", P), ("cy", P)), start=1):
        annotate(out, rv, annotator(who), slot, {key: outcome})
    row = report(es, rv, judge).row(key)
    assert (row.human.n, row.human.over_two) == (4, 1)
    assert row.human.kappa == pytest.approx(0.5)
    message = next(w.message for w in row.warnings if w.code == "human_ab_subset")
    assert "only the 4 items exactly two people labeled" in message and "1 item with more" in message


def test_human_agreement_runs_two_queries_whatever_the_size(setup, django_assert_num_queries):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P), "next_step": (F, P, F)}] * 3)
    with django_assert_num_queries(2):
        human_agreement(eval_set=es, rubric_version=rv)
    calibration_set(es, rv, judge, [{"correct_amount": (P, F, P), "next_step": (F, F, F)}] * 12)
    with django_assert_num_queries(2):
        human_agreement(eval_set=es, rubric_version=rv)


def test_report_query_count_is_constant(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}])
    with CaptureQueriesContext(connection) as small:
        report(es, rv, judge)
    calibration_set(es, rv, judge, [{"correct_amount": (P, F, P, F), "next_step": (F, F, ER)}] * 25)
    make_run(es, rv, judge)
    with CaptureQueriesContext(connection) as large:
        report(es, rv, judge)
    assert len(small) == len(large) == 6  # five, and one asking for the newest complete probe run (none here)


def test_agent_version_filter_and_segments(setup):
    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}, {"correct_amount": (F, F, F)}], agent_version="v1")
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, F)}, {"correct_amount": (F, F, F)}], agent_version="v2")
    assert report(es, rv, judge, agent_version="v1").row("correct_amount").judge.kappa == pytest.approx(1.0)
    seg = segmented_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert [s.agent_version for s in seg.segments] == ["v1", "v2"]
    v2 = seg.segments[1].rows[0]
    assert v2.judge.false_fail == 1 and v2.judge.kappa == pytest.approx(0.0)  # judge always FAIL on v2: constant
    assert seg.as_dict()["mean_kappa"]["correct_amount"]["mean_kappa"] == pytest.approx(0.5)


# --- the command ----------------------------------------------------------------------------------


def command(*args: str) -> str:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("calibration_report", *args, stdout=out)
    return out.getvalue()


SCOPE = ("--eval-set", "cal", "--rubric", "refund@1", "--judge", "gpt-judge")


def test_the_command_prints_json_csv_and_text(setup):
    import csv
    import io
    import json

    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}, {"correct_amount": (F, F, P)}])
    data = json.loads(command(*SCOPE, "--format", "json"))
    assert [c["criterion"] for c in data["criteria"]] == ["correct_amount", "next_step"]
    assert data["criteria"][0]["false_pass"] == 1 and data["criteria"][1]["kappa"] is None
    assert {"judge_config", "model_id", "rubric_version", "computed_at"} <= set(data)
    rows = list(csv.DictReader(io.StringIO(command(*SCOPE, "--format", "csv"))))
    # A constant judge has kappa 0 in every resample too: the interval is [0, 0], not empty.
    assert rows[0]["criterion"] == "correct_amount" and rows[0]["kappa_ci_low"] == "0.0"
    assert rows[1]["kappa"] == "" and rows[1]["kappa_ci_low"] == ""
    assert rows[0]["tpr"] == "1.0" and rows[0]["tnr"] == "0.0" and rows[0]["tnr_ci_low"] == "0.0"
    assert rows[1]["tpr"] == "" and rows[1]["balanced_accuracy_ci_low"] == ""
    text = command(*SCOPE)
    assert "judge catches 0% of failures (0 of 1), passes 100% of good outputs (1 of 1)" in text
    assert "no data" in text  # next_step: n = 0, never shown as agreement
    assert "FALSE PASS" in text and "the judge said PASS on every one of the 2 items" in text


def test_the_command_splits_by_agent_version(setup):
    import json

    es, rv, judge = setup
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, P)}, {"correct_amount": (F, F, F)}], agent_version="v1")
    calibration_set(es, rv, judge, [{"correct_amount": (P, P, F)}, {"correct_amount": (F, F, F)}], agent_version="v2")
    data = json.loads(command(*SCOPE, "--by", "agent_version", "--format", "json"))
    assert [s["agent_version"] for s in data["segments"]] == ["v1", "v2"]
    assert data["mean_kappa"]["correct_amount"] == {"mean_kappa": 0.5, "segments_with_kappa": 2, "segments": 2}
    text = command(*SCOPE, "--by", "agent_version")
    assert "== agent version v1" in text and "mean of per-segment kappas" in text
    assert "agent_version,criterion" in command(*SCOPE, "--by", "agent_version", "--format", "csv")


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ("--eval-set", "nope", "--rubric", "refund@1", "--judge", "gpt-judge"),
            "unknown eval set 'nope' (known: cal)",
        ),
        (
            ("--eval-set", "cal", "--rubric", "refund@2", "--judge", "gpt-judge"),
            "rubric 'refund' has no version '2' (known: 1)",
        ),
        (("--eval-set", "cal", "--rubric", "refund", "--judge", "gpt-judge"), "NAME@VERSION"),
        (("--eval-set", "cal", "--rubric", "refund@1", "--judge", "x"), "unknown judge config 'x' (known: gpt-judge)"),
        ((*SCOPE, "--by", "agent_version", "--agent-version", "v1"), "exclude each other"),
        ((*SCOPE, "--format", "xml"), "invalid choice: 'xml'"),
        ((*SCOPE, "--by", "case"), "invalid choice: 'case'"),
    ],
)
def test_the_command_refuses_bad_input_clearly(setup, args, message):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        command(*args)


def test_a_perfect_small_sample_says_its_interval_is_not_certainty(setup):
    es, rv, judge = setup
    bulk_calibration(es, rv, judge, {"correct_amount": (20, 0, 0, 5)})
    row = report(es, rv, judge).row("correct_amount")
    assert row.judge.kappa == pytest.approx(1.0) and row.judge.kappa_ci == (1.0, 1.0)
    message = next(w.message for w in row.warnings if w.code == "degenerate_interval")
    assert "only more items can" in message


def test_a_judge_that_disagrees_with_itself_is_named_beside_its_agreement_with_people(setup):
    es, rv, judge = setup
    key = "correct_amount"
    outs = calibration_set(es, rv, judge, [{key: (P, P, None)}] * 4 + [{key: (F, F, None)}] * 4)
    run = make_run(es, rv, judge)
    # Three samples per item. Items 0-3 (gold PASS): P,P,P  P,P,P  P,F,P  F,P,F; items 4-7 (gold FAIL):
    # F,F,F  F,F,F  F,P,F  P,F,P. Per item (PASS, FAIL): (3,0) (3,0) (2,1) (1,2) (0,3) (0,3) (1,2) (2,1).
    # Alpha by hand: D = sum p*f/(m-1) = 4 * 2/2 = 4; n_P = n_F = 12, n = 24;
    # alpha = 1 - (n - 1) * D / (n_P * n_F) = 1 - 23 * 4 / 144 = 13/36.
    samples = ["PPP", "PPP", "PFP", "FPF", "FFF", "FFF", "FPF", "PFP"]
    for out, outcomes in zip(outs, samples, strict=True):
        for s, o in enumerate(outcomes):
            add_verdict(run, out, key, P if o == "P" else F, sample=s)
    row = report(es, rv, judge).row(key)
    assert (row.self_agreement.samples, row.self_agreement.n) == (3, 8)
    assert row.self_agreement.alpha == pytest.approx(13 / 36)
    assert "judge_inconsistent" in row.warning_codes
    # One sample per item: nothing to compare, no figure.
    assert report(es, rv, judge).row("next_step").self_agreement.alpha is None
    text = command(*SCOPE)
    assert "judge against itself (3 samples, 8 items): alpha 0.361" in text


def test_people_quotes_found_only_outside_the_response_are_counted_per_criterion(setup, client, lead):
    """The worked example of docs/calibration.md, written through the labeling page's own save; the count is
    stored on each label and summed by the report in JSON, CSV, text and on the page."""
    import csv
    import io
    import json

    from labeling.annotate import save_label, submit

    es, rv, judge = setup
    output = make_output(
        es,
        input="Refund order 1234 please",
        tool_calls=[{"name": "lookup", "args": {"order": "1234"}, "response": {"amount": 40}}],
        response="Refunded order 1234: $40.",
    )
    criteria = {c.key: c for c in rv.criteria.all()}
    quotes = {"maria": ("Refund order", ['"amount": 40']), "li": ("1234", []), "ola": ("NONE", [])}
    annotations = {}
    for slot, (name, (first, more)) in enumerate(quotes.items(), start=1):
        ann = Annotation.objects.create(output=output, rubric_version=rv, annotator=annotator(name), slot=slot)
        save_label(annotation=ann, criterion=criteria["correct_amount"], outcome=P, evidence=first, more_evidence=more)
        save_label(annotation=ann, criterion=criteria["next_step"], outcome=P, evidence="$40.")
        submit(annotation=ann)
        annotations[name] = ann
    # A draft's quotes are not counted: only submitted annotations make gold.
    draft = Annotation.objects.create(output=output, rubric_version=rv, annotator=annotator("pat"), slot=4)
    save_label(annotation=draft, criterion=criteria["correct_amount"], outcome=F, evidence="Refund order")
    assert Label.objects.get(annotation=draft).quotes_outside_response == 1

    stored = dict(
        Label.objects.filter(criterion__key="correct_amount").values_list(
            "annotation__annotator__username", "quotes_outside_response"
        )
    )
    assert stored == {"maria": 2, "li": 0, "ola": 0, "pat": 1}
    row = report(es, rv, judge).row("correct_amount")
    assert row.human_quotes_outside_response == 2
    assert report(es, rv, judge).row("next_step").human_quotes_outside_response == 0

    data = json.loads(command(*SCOPE, "--format", "json"))
    assert [c["human_quotes_outside_response"] for c in data["criteria"]] == [2, 0]
    rows = list(csv.DictReader(io.StringIO(command(*SCOPE, "--format", "csv"))))
    assert [r["human_quotes_outside_response"] for r in rows] == ["2", "0"]
    assert "people's quotes found only outside the response (in the input or a tool call): 2" in command(*SCOPE)
    client.force_login(lead)
    page = client.get(reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])).content.decode()
    assert page.count("people quoted outside the response") == 1  # next_step has none: nothing to say
    assert "people quoted outside the response 2 times" in page

    # Maria corrects her label to quote the response only: a new revision, counted anew; the old one is history.
    save_label(annotation=annotations["maria"], criterion=criteria["correct_amount"], outcome=P, evidence="$40.")
    assert list(
        Label.objects.filter(annotation=annotations["maria"], criterion__key="correct_amount")
        .order_by("revision")
        .values_list("revision", "is_current", "quotes_outside_response")
    ) == [(1, False, 2), (2, True, 0)]
    assert report(es, rv, judge).row("correct_amount").human_quotes_outside_response == 0


def test_a_vs_b_depends_on_who_is_first_on_each_item_and_the_ceiling_does_not():
    """Worked by hand (docs/calibration.md): amy says P P P F, bo says F F P F on four outputs.
    amy first everywhere: A = P P P F, B = F F P F; observed 2/4, pass rates 3/4 and 1/4, chance
    0.75 * 0.25 + 0.25 * 0.75 = 0.375, kappa 0.125 / 0.625 = 0.2. bo first on the second output:
    A = P F P F, B = F P P F; pass rates 1/2 and 1/2, chance 0.5, kappa 0. The pair amy-bo is 0.2 both ways."""
    amy, bo = ["P", "P", "P", "F"], ["F", "F", "P", "F"]
    word = {"P": P, "F": F}

    def labels(bo_first_on: set[int]):
        rows = []
        for output, (a, b) in enumerate(zip(amy, bo, strict=True)):
            slots = (2, 1) if output in bo_first_on else (1, 2)
            rows.append((output, 1, output * 2, 1, slots[0], word[a]))
            rows.append((output, 1, output * 2 + 1, 2, slots[1], word[b]))
        return pd.DataFrame(rows, columns=["output", "criterion", "annotation", "annotator", "slot", "outcome"])

    in_order = human_agreement_from_labels(labels(set()), [(1, "c")])["c"]
    swapped = human_agreement_from_labels(labels({1}), [(1, "c")])["c"]
    assert in_order.kappa == pytest.approx(0.2) and swapped.kappa == pytest.approx(0.0, abs=1e-12)
    assert in_order.pairwise.kappa == pytest.approx(0.2) and swapped.pairwise.kappa == pytest.approx(0.2)
    # The ceiling (alpha here: one pair sharing fewer than PAIR_MIN_ITEMS items) is the same both ways.
    assert in_order.ceiling == swapped.ceiling and in_order.ceiling[0] == "alpha"
