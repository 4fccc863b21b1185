"""Each annotator's agreement (issue 38, item 4): with gold their own label did not decide, with the others.

The hand-worked set: three annotators A, B, C label ten items of one criterion (majority policy).

    item  1 2 3 4 5 6 7 8 9 10
    A     P P P F F P F P F P
    B     P P P F F F P P F F
    C     F F P P F P F F P F

A and B split on items 6, 7 and 10, so C's vote is the tie-breaker there. Every expected value below is
worked out in the comments from this table, never taken from the code.
"""

from __future__ import annotations

import pandas as pd
import pytest
from django.urls import reverse

from calibration.report.annotator_agreement import MIN_ITEMS_TO_FLAG, annotator_agreement, leave_one_out_gold
from labeling.gold import ANY_FAIL, derive_gold
from tests.annotator_helpers import ADJUDICATED, TABLE, WORDS, A, B, C, build_world
from tests.factories import annotator as annotator_named

REVIEWER, CRITERION = 9, 7


def labels_frame(blocks: int = 1) -> pd.DataFrame:
    """The table, repeated `blocks` times (block b's item i is output 100 * b + i)."""
    rows = [
        {"criterion": CRITERION, "output": 100 * b + i, "annotator": who, "outcome": WORDS[letter]}
        for b in range(blocks)
        for who, letters in TABLE.items()
        for i, letter in enumerate(letters, start=1)
    ]
    return pd.DataFrame(rows)


def adjudicated_frame(blocks: int = 1, by: int = REVIEWER) -> pd.DataFrame:
    rows = [
        {"criterion": CRITERION, "output": 100 * b + i, "outcome": outcome, "decided_by": by}
        for b in range(blocks)
        for i, outcome in ADJUDICATED.items()
    ]
    return pd.DataFrame(rows)


NO_ADJUDICATION = pd.DataFrame({"criterion": [], "output": [], "outcome": []})


def by_person(rows):
    return {r.annotator: r for r in rows}


def test_agreement_with_gold_reads_only_the_others_labels():
    rows = by_person(annotator_agreement(labels_frame(), NO_ADJUDICATION))
    # C against A and B where those two agree (items 1-5, 8, 9; gold P P P F F P F):
    #   C says F F P P F F P: agrees on 3 and 5, 2 of 7. Cells (C, gold): PASS/PASS item 3; PASS/FAIL 4, 9;
    #   FAIL/PASS 1, 2, 8; FAIL/FAIL 5. C's pass rate 3/7, gold's 4/7, chance 24/49,
    #   kappa = (14/49 - 24/49) / (25/49) = -0.4.
    c = rows[C]
    assert (c.gold.n, c.labeled) == (7, 10)
    assert c.agreement.successes == 2
    assert c.gold.kappa == pytest.approx(-0.4)
    assert (c.gold.false_pass, c.gold_fails) == (2, 3)
    # Wilson 95% for 2 of 7 by hand: centre (2/7 + 1.96^2/14) / (1 + 1.96^2/7) = 0.3616, half-width
    # 1.96 * sqrt(0.2041/7 + 1.96^2/196) / 1.5488 = 0.2794.
    assert (c.agreement.lower, c.agreement.upper) == (pytest.approx(0.0822, abs=1e-3), pytest.approx(0.6410, abs=1e-3))
    # A against B and C where they agree (items 3, 5, 10; gold P F F): A says P F P, 2 of 3. Pass rates 2/3
    # and 1/3, chance 4/9, kappa = (6/9 - 4/9) / (5/9) = 0.4; A said PASS on item 10, gold FAIL.
    a = rows[A]
    assert (a.gold.n, a.agreement.successes, a.gold.false_pass, a.gold_fails) == (3, 2, 1, 2)
    assert a.gold.kappa == pytest.approx(0.4)
    # B against A and C where they agree (items 3, 5, 6, 7; gold P F P F): B says P F F P, 2 of 4; both pass
    # rates 1/2, chance 1/2, kappa 0.
    b = rows[B]
    assert (b.gold.n, b.agreement.successes) == (4, 2)
    assert b.gold.kappa == pytest.approx(0.0)


def test_counting_their_own_vote_would_flatter_the_tie_breaker():
    # Negative control: gold from all three labels (the product's gold, C's vote included) settles the splits
    # 6, 7 and 10 by C's vote, so C "agrees" there by construction: 5 of 10 instead of 2 of 7.
    labels = labels_frame()
    naive = derive_gold(labels, NO_ADJUDICATION).merge(labels[labels["annotator"] == C], on=["criterion", "output"])
    assert (naive["gold"] == naive["outcome"]).sum() == 5 and len(naive) == 10
    c = by_person(annotator_agreement(labels, NO_ADJUDICATION))[C]
    assert (c.agreement.successes, c.gold.n) == (2, 7)


def test_kappa_with_the_others_is_the_mean_over_each_other_person():
    rows = by_person(annotator_agreement(labels_frame(), NO_ADJUDICATION))
    # Pairs over all ten items:
    #   A-B: PP 1 2 3 8, A P/B F 6 10, A F/B P 7, FF 4 5 9: observed 0.7, pass rates 0.6 and 0.5, chance 0.5,
    #        kappa 0.4.
    #   A-C: agree on 3, 5, 6, 7 (0.4); pass rates 0.6 and 0.4, chance 0.48, kappa -0.08/0.52 = -2/13.
    #   B-C: agree on 3, 5, 10 (0.3); pass rates 0.5 and 0.4, chance 0.5, kappa -0.4.
    assert rows[A].others.kappa == pytest.approx((0.4 - 2 / 13) / 2)
    assert rows[B].others.kappa == pytest.approx((0.4 - 0.4) / 2)
    assert rows[C].others.kappa == pytest.approx((-2 / 13 - 0.4) / 2)
    assert (rows[C].others.pairs, rows[C].others.items) == (2, 10)
    low, high = rows[C].others.kappa_ci
    assert low <= rows[C].others.kappa <= high


def test_an_adjudication_counts_for_everyone_but_the_person_who_decided_it():
    # Items 6, 7, 10 adjudicated by C themselves (say, imported gold with C as the decider): C's gold there
    # would be C's own word, so for C only the others' agreement counts (items 1-5, 8, 9 as before), while
    # A and B get the adjudication beside what the other two settle.
    gold = leave_one_out_gold(labels_frame(), adjudicated_frame(by=C))
    items = {who: set(g["output"]) for who, g in gold.groupby("annotator")}
    assert items[C] == {1, 2, 3, 4, 5, 8, 9}
    assert items[A] == {3, 5, 6, 7, 10}  # B and C agree on 3, 5, 10; the adjudication adds 6 and 7
    assert items[B] == {3, 5, 6, 7, 10}  # A and C agree on 3, 5, 6, 7; the adjudication adds 10


def test_the_criterion_gold_policy_is_the_one_applied_to_the_others():
    # Under any_fail one FAIL among B and C makes A's gold FAIL: B, C give F F P F F F F F F F over the ten
    # items (only item 3 is P, P), so A (P P P F F P F P F P) agrees on 3, 4, 5, 7, 9: 5 of 10.
    a = by_person(annotator_agreement(labels_frame(), NO_ADJUDICATION, {CRITERION: ANY_FAIL}))[A]
    assert (a.gold.n, a.agreement.successes) == (10, 5)


def test_a_person_far_below_the_rest_is_flagged_first():
    # With the reviewer's decisions on 6, 7, 10 (P, F, F), per block of ten:
    #   A: gold on 3 5 6 7 10 = P F P F F, A says P F P F P: 4 of 5, cells (2, 1, 0, 2), chance 0.48, kappa 8/13.
    #   B: gold on 3 5 6 7 10 = P F P F F, B says P F F P F: 3 of 5, chance 0.52, kappa 0.08/0.48 = 1/6.
    #   C: gold on all ten = P P P F F P F P F F, C says F F P P F P F F P F: 5 of 10, chance 0.5, kappa 0.
    # Six blocks: A and B have 30 items, C 60. C's bar is the median of 8/13 and 1/6, 0.39; kappa's standard
    # error at n = 60 is about sqrt(0.25/60)/0.5 = 0.13, so C's upper end (about 0.25) is below it. B's bar is
    # median(8/13, 0) = 0.31, but at n = 30 B's interval reaches about 0.17 + 2 * 0.19: not flagged.
    rows = annotator_agreement(labels_frame(6), adjudicated_frame(6))
    assert [r.annotator for r in rows] == [C, B, A]  # flagged first, then lowest kappa first
    c, b, a = rows
    assert c.flagged and not b.flagged and not a.flagged
    assert (c.gold.n, b.gold.n, a.gold.n) == (60, 30, 30)
    assert c.gold.kappa == pytest.approx(0.0) and a.gold.kappa == pytest.approx(8 / 13)
    assert b.gold.kappa == pytest.approx(1 / 6)
    assert c.bar == pytest.approx((8 / 13 + 1 / 6) / 2)
    assert c.gold.kappa_ci[1] < c.bar


def test_nobody_is_flagged_without_enough_items_with_gold():
    # Three blocks: A and B have 15 items each, below MIN_ITEMS_TO_FLAG, so there is no "rest" to compare C's
    # 30 with, even though C's figures are the same as above.
    assert MIN_ITEMS_TO_FLAG == 20
    rows = by_person(annotator_agreement(labels_frame(3), adjudicated_frame(3)))
    assert (rows[A].gold.n, rows[C].gold.n) == (15, 30)
    assert not any(r.flagged for r in rows.values())
    assert rows[C].bar is None


# --- The page ---


def page_url(es, rv) -> str:
    return reverse("calibration:annotator_agreement", args=[es.pk, rv.pk])


@pytest.mark.django_db
def test_annotators_cannot_open_the_page(client, annotator):
    es, rv, _ = build_world()
    assert client.get(page_url(es, rv)).status_code == 302  # signed out: to the login page
    client.force_login(annotator)
    assert client.get(page_url(es, rv)).status_code == 403
    client.force_login(annotator_named("ann-c"))  # one of the people on the page: not even their own row
    assert client.get(page_url(es, rv)).status_code == 403


@pytest.mark.django_db
def test_garbage_ids_are_not_found(client, reviewer):
    es, rv, _ = build_world()
    client.force_login(reviewer)
    assert client.get(reverse("calibration:annotator_agreement", args=[es.pk + 999, rv.pk])).status_code == 404
    assert client.get(reverse("calibration:annotator_agreement", args=[es.pk, rv.pk + 999])).status_code == 404
    assert client.get(f"/calibration/annotators/{es.pk}/x/").status_code == 404


@pytest.mark.django_db
def test_the_page_puts_the_flagged_person_and_their_false_passes_first(client, lead):
    es, rv, key = build_world(blocks=6)
    client.force_login(lead)
    response = client.get(page_url(es, rv))
    assert response.status_code == 200
    body = response.content.decode()
    flagged = body[body.index('id="flagged"') : body.index(f'id="criterion-{key}"')]
    # C: said PASS where gold is FAIL on items 4 and 9 of each block (gold FAIL on 4, 5, 7, 9, 10): 12 of 30.
    assert "ann-c" in flagged and "12 of 30" in flagged and "ann-a" not in flagged and "ann-b" not in flagged
    table = body[body.index(f'id="criterion-{key}"') :]
    assert table.index("ann-c") < table.index("ann-b") < table.index("ann-a")
    assert "below the rest" in table
    assert "60 of 60" in table and "30 of 60" in table  # items with gold of items labeled


@pytest.mark.django_db
def test_reviewers_reach_it_from_the_report(client, reviewer):
    from tests.factories import make_judge

    es, rv, _ = build_world()
    client.force_login(reviewer)
    report = client.get(reverse("calibration:report", args=[es.pk, rv.pk, make_judge("j").pk]))
    assert page_url(es, rv) in report.content.decode()
    assert client.get(page_url(es, rv)).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("extra", [0, 4])
def test_the_page_runs_a_fixed_number_of_queries(client, lead, django_assert_max_num_queries, extra):
    # Session and user, eval set, rubric version, criteria, labels, adjudications, the annotators' names:
    # the same whatever the number of annotators (4 more people must not add queries).
    es, rv, _ = build_world(extra_annotators=extra)
    client.force_login(lead)
    with django_assert_max_num_queries(8):
        assert client.get(page_url(es, rv)).status_code == 200


def test_one_label_per_output_so_far_has_no_gold_and_no_error():
    """Every output labeled by one person only (an audit's first labels): no gold to compare with yet.

    Was a 500 on the page (an empty gold frame had no column types to merge on); found by the workspace
    authorization matrix, whose world has one label.
    """
    single = pd.DataFrame([{"criterion": CRITERION, "output": 1, "annotator": A, "outcome": "PASS"}])
    (row,) = annotator_agreement(single, NO_ADJUDICATION)
    assert (row.annotator, row.labeled, row.gold.n) == (A, 1, 0)
