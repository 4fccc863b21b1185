"""Gold policies per criterion (majority, any_fail, unanimous): the one rule, its place in the rubric
version's content, the report's counts of ties and items without gold, and real data through the importers."""

from __future__ import annotations

import json
from itertools import combinations_with_replacement

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from calibration.report.rows import build_rows
from evals.models import GoldPolicy, RubricVersion
from formats.rubric_import import import_rubric
from labeling.gold import AGREED, DISAGREED, derive_gold, gold_of_votes, item_states
from tests.factories import default_workspace
from tests.io_helpers import row_counts, source

P, F, NA, AB = "PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN"
MAJORITY, ANY_FAIL, UNANIMOUS = "majority", "any_fail", "unanimous"


@pytest.mark.parametrize(
    ("votes", "majority", "any_fail", "unanimous"),
    [
        ([P, P], P, P, P),
        ([P, F], None, F, None),  # a tie: only any_fail settles it
        ([P, P, F], P, F, None),  # FaithBench's rule: one annotator's FAIL is gold FAIL
        ([F, F, P], F, F, None),
        ([P, P, NA], P, P, None),
        ([P, NA], None, None, None),
        ([NA, NA], NA, NA, NA),
        ([P, F, NA], None, F, None),
        ([AB, AB, P], AB, AB, None),
        ([F], None, None, None),  # a lone label is never gold, not even a lone FAIL
        ([], None, None, None),
    ],
)
def test_the_gold_of_one_item_under_each_policy(votes, majority, any_fail, unanimous):
    assert gold_of_votes(votes, MAJORITY) == majority
    assert gold_of_votes(votes, ANY_FAIL) == any_fail
    assert gold_of_votes(votes, UNANIMOUS) == unanimous


def test_the_frame_rule_agrees_with_the_one_item_rule_on_every_combination_of_up_to_five_labels():
    combos = [list(c) for k in range(1, 6) for c in combinations_with_replacement((P, F, NA, AB), k)]
    rows, policies = [], {}
    for crit, policy in enumerate((MAJORITY, ANY_FAIL, UNANIMOUS)):
        policies[crit] = policy
        for output, votes in enumerate(combos):
            rows += [(crit, output, v) for v in votes]
    labels = pd.DataFrame(rows, columns=["criterion", "output", "outcome"])
    got = derive_gold(labels, pd.DataFrame({"criterion": [], "output": [], "outcome": []}), policies)
    found = {(int(r.criterion), int(r.output)): (r.gold, r.gold_source) for r in got.itertuples()}
    for crit, policy in policies.items():
        for output, votes in enumerate(combos):
            want = gold_of_votes(votes, policy)
            expected = (want, policy) if want else (None, None)
            assert found.get((crit, output), (None, None)) == expected, (policy, votes)


def test_an_adjudication_wins_over_every_policy():
    labels = pd.DataFrame({"criterion": [1, 1, 2, 2], "output": [5, 5, 5, 5], "outcome": [F, P, P, P]})
    adjudicated = pd.DataFrame({"criterion": [1, 2], "output": [5, 5], "outcome": [P, F]})
    got = derive_gold(labels, adjudicated, {1: ANY_FAIL, 2: UNANIMOUS})
    assert sorted(zip(got["criterion"], got["gold"], got["gold_source"], strict=True)) == [
        (1, P, "adjudicated"),
        (2, F, "adjudicated"),
    ]


def test_unanimous_sends_a_two_to_one_split_to_the_adjudication_queue():
    labels = pd.DataFrame({"criterion": [1, 1, 1, 2, 2, 2], "output": [9] * 6, "outcome": [P, P, F] * 2})
    empty = pd.DataFrame({"criterion": [], "output": [], "outcome": []})
    states = item_states(labels, empty, {1: MAJORITY, 2: UNANIMOUS}).set_index("criterion")
    assert states.loc[1, "state"] == AGREED and states.loc[1, "gold"] == P
    assert states.loc[2, "state"] == DISAGREED


# --- the rubric file and the content hash --------------------------------------------------------

RUBRIC = {
    "name": "safety",
    "version": "1",
    "instruction": "Grade it.",
    "criteria": [{"key": "no_hallucination", "definition": "Every claim is in the source."}],
}


def rubric_with(policy: str | None, version: str = "1") -> str:
    criteria = [dict(RUBRIC["criteria"][0], **({"gold_policy": policy} if policy else {}))]
    return json.dumps({**RUBRIC, "version": version, "criteria": criteria})


@pytest.mark.django_db
def test_the_policy_comes_from_the_rubric_file_and_is_part_of_the_content_hash():
    import_rubric(workspace=default_workspace(), source=source("a.json", rubric_with(None, "1")))
    import_rubric(workspace=default_workspace(), source=source("b.json", rubric_with("majority", "2")))
    import_rubric(workspace=default_workspace(), source=source("c.json", rubric_with("any_fail", "3")))
    v1, v2, v3 = RubricVersion.objects.order_by("version")
    assert [v.criteria.get().gold_policy for v in (v1, v2, v3)] == [MAJORITY, MAJORITY, ANY_FAIL]
    # Saying "majority" is saying nothing new (old versions keep their hash); any_fail is another instrument.
    assert v1.content_hash == v2.content_hash != v3.content_hash
    assert v3.content_hash == v3.compute_hash()


@pytest.mark.django_db
def test_changing_the_policy_of_an_existing_version_is_refused_as_an_edit():
    import_rubric(workspace=default_workspace(), source=source("a.json", rubric_with(None)))
    before = row_counts()
    with pytest.raises(CommandError, match="already exists with different content; a rubric edit is a new version"):
        call_command("import_rubric", _file(rubric_with("unanimous")))
    assert row_counts() == before
    assert RubricVersion.objects.get().criteria.get().gold_policy == GoldPolicy.MAJORITY


def _file(content: str) -> str:
    import tempfile

    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    handle.write(content)
    handle.close()
    return handle.name


# --- the report: the policy, ties and items without gold, said out loud --------------------------


def frames(items: list[tuple[list[str], str | None]]):
    """items: (labels by two or three people, the judge's verdict) for criterion 1."""
    labels, verdicts = [], []
    for output, (votes, judge) in enumerate(items):
        labels += [(output, 1, output * 10 + i, i, i, v) for i, v in enumerate(votes, start=1)]
        if judge:
            verdicts.append((output, 1, 0, judge, True, 0))
    return (
        pd.DataFrame(labels, columns=["output", "criterion", "annotation", "annotator", "slot", "outcome"]),
        pd.DataFrame({"output": [], "criterion": [], "outcome": []}),
        pd.DataFrame(verdicts, columns=["output", "criterion", "sample", "outcome", "evidence_found", "run_rank"]),
    )


def row_for(items, policy=MAJORITY):
    labels, adjudicated, verdicts = frames(items)
    return build_rows(
        criteria=[(1, "c")], labels=labels, adjudicated=adjudicated, verdicts=verdicts, gold_policies={1: policy}
    )[0]


def test_56_ties_in_750_items_are_counted_and_warned_about():
    # 7.5% ties: above MAX_UNSETTLED_SHARE (5%).
    items = [([P, P], P)] * 600 + [([F, F], F)] * 94 + [([P, F], P)] * 56
    row = row_for(items)
    assert (row.gold_policy, row.gold.labeled_items, row.gold.gold_ties, row.gold.awaiting_gold) == (
        MAJORITY,
        750,
        56,
        56,
    )
    assert row.buckets.pending_gold == 56 and row.judge.n == 694
    assert {"many_ties", "much_gold_pending"} <= set(row.warning_codes)
    assert "56 of 750 labeled items are ties" in next(w.message for w in row.warnings if w.code == "many_ties")
    # Negative control: 37 of 750 (4.9%) is under the threshold.
    calm = row_for([([P, P], P)] * 619 + [([F, F], F)] * 94 + [([P, F], P)] * 37)
    assert calm.gold.gold_ties == 37 and not {"many_ties", "much_gold_pending"} & set(calm.warning_codes)


def test_the_ties_warning_says_where_ties_go_under_each_policy():
    items = [([P, P], P)] * 600 + [([F, F], F)] * 94 + [([P, F], P)] * 56
    said = {
        policy: next(w.message for w in row_for(items, policy).warnings if w.code == "many_ties")
        for policy in (MAJORITY, ANY_FAIL)
    }
    # Under any_fail a P/F tie is FAIL gold and counts (56 false passes here); under majority it waits.
    assert row_for(items, ANY_FAIL).judge.false_pass == 56 and row_for(items, MAJORITY).buckets.pending_gold == 56
    assert "each of them is FAIL gold and counts" in said[ANY_FAIL] and "left out" not in said[ANY_FAIL]
    assert "wait for a reviewer and are left out" in said[MAJORITY]


def test_any_fail_settles_the_ties_and_unanimous_leaves_the_splits_waiting():
    items = [([P, P, P], P)] * 80 + [([P, P, F], P)] * 15 + [([F, F, F], F)] * 30
    majority, any_fail, unanimous = (row_for(items, p) for p in (MAJORITY, ANY_FAIL, UNANIMOUS))
    assert (majority.judge.false_pass, majority.judge.n, majority.gold.awaiting_gold) == (0, 125, 0)
    assert (any_fail.judge.false_pass, any_fail.judge.n, any_fail.gold.awaiting_gold) == (
        15,
        125,
        0,
    )  # one FAIL is gold FAIL
    assert (unanimous.judge.n, unanimous.gold.awaiting_gold, unanimous.buckets.pending_gold) == (110, 15, 15)
    assert "under the unanimous gold policy" in " ".join(w.message for w in unanimous.warnings)
    assert any_fail.as_dict()["gold_policy"] == ANY_FAIL
