"""The progress page: outputs by annotations, pending adjudications, gold, and human-human kappa per criterion.

Expected figures are worked out by hand in the comments, never with the code under test.
"""

from __future__ import annotations

import pandas as pd
import pytest
from django.urls import reverse

from evals.models import Criterion
from labeling.gold import ADJUDICATED, AGREED, AWAITING, DISAGREED, item_states
from labeling.models import GoldLabel
from overview.labeling_progress import annotation_buckets, criterion_counts, progress
from tests.factories import annotate_directly, labeling_setup, make_output, make_user
from tests.labeling_helpers import next_url

# --- Pure functions ---------------------------------------------------------------------------------


def test_outputs_are_bucketed_by_submitted_annotations():
    # 7 outputs: 2 have one annotation, 3 have two, 1 has three (an import): the rest (1) have none.
    assert annotation_buckets(7, [1, 1, 2, 2, 2, 3]) == {0: 1, 1: 2, 2: 4}
    assert annotation_buckets(3, []) == {0: 3, 1: 0, 2: 0}


def labels(rows):
    return pd.DataFrame(rows, columns=["output", "criterion", "annotation", "slot", "outcome"])


def test_item_states_by_hand():
    frame = labels(
        [
            (1, 10, 101, 1, "PASS"), (1, 10, 102, 2, "PASS"),  # agreed PASS
            (2, 10, 201, 1, "PASS"), (2, 10, 202, 2, "FAIL"),  # disagreed, adjudicated below
            (3, 10, 301, 1, "FAIL"), (3, 10, 302, 2, "NOT_APPLICABLE"),  # disagreed, pending
            (4, 10, 401, 1, "FAIL"),  # one label: awaiting
        ]
    )  # fmt: skip
    adjudicated = pd.DataFrame([(2, 10, "FAIL")], columns=["output", "criterion", "outcome"])
    got = {
        int(r.output): (r.state, r.gold if isinstance(r.gold, str) else None)
        for r in item_states(frame, adjudicated).itertuples()
    }
    assert got == {1: (AGREED, "PASS"), 2: (ADJUDICATED, "FAIL"), 3: (DISAGREED, None), 4: (AWAITING, None)}


def test_criterion_counts_by_hand():
    frame = labels([(1, 10, 1, 1, "PASS"), (1, 10, 2, 2, "PASS"), (2, 10, 3, 1, "PASS"), (2, 10, 4, 2, "FAIL")])
    states = item_states(frame, pd.DataFrame(columns=["output", "criterion", "outcome"]))
    c = Criterion(pk=10, key="k")
    counts = criterion_counts(states, [c, Criterion(pk=11, key="unused")])
    assert counts[10] == {
        "awaiting": 0,
        "agreed": 1,
        "pending": 1,
        "adjudicated": 0,
        "gold": {"PASS": 1, "FAIL": 0, "NOT_APPLICABLE": 0, "ABSTAIN": 0},
    }
    assert counts[11]["agreed"] == 0 and counts[11]["gold"]["PASS"] == 0


# --- The page ---------------------------------------------------------------------------------------

# correct_amount over 10 double-labeled outputs (A, B):
#   (PASS, PASS) x4, (FAIL, FAIL) x3, (PASS, FAIL) x2, (FAIL, PASS) x1
#   observed agreement po = 7/10 = 0.70
#   A says PASS 6/10, B says PASS 5/10: chance agreement pe = 0.6*0.5 + 0.4*0.5 = 0.50
#   kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40, n = 10
#   Krippendorff's alpha (nominal, 20 pairable values: 11 PASS, 9 FAIL, 3 disagreeing units):
#   alpha = 1 - (n-1) * (o_PF + o_FP) / (2 * n_P * n_F) = 1 - 19 * 6 / (2 * 11 * 9) = 1 - 114/198 = 0.42
# next_step: (PASS, PASS) x9 and (N/A, PASS) x1: the N/A pair is not a PASS/FAIL pair, so n = 9, and both
#   annotators said PASS on all 9: chance agreement is 1, kappa undefined.
PAIRS = [("PASS", "PASS")] * 4 + [("FAIL", "FAIL")] * 3 + [("PASS", "FAIL")] * 2 + [("FAIL", "PASS")]


@pytest.fixture
def labeled(annotator, annotator2):
    eval_set, rv, outputs = labeling_setup(n_outputs=15)
    for i, (a, b) in enumerate(PAIRS):
        step_a = "NOT_APPLICABLE" if i == 9 else "PASS"
        annotate_directly(outputs[i], rv, annotator, {"correct_amount": (a, "NONE"), "next_step": (step_a, "")})
        annotate_directly(outputs[i], rv, annotator2, {"correct_amount": (b, "NONE"), "next_step": ("PASS", "NONE")})
    for output in outputs[10:12]:  # one annotation each
        annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    return eval_set, rv, outputs


def url(eval_set, rv):
    return reverse("overview:progress") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}"


@pytest.mark.django_db
def test_progress_counts_and_kappa(labeled, reviewer):
    eval_set, rv, outputs = labeled
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    GoldLabel.objects.create(
        output=outputs[7], rubric_version=rv, criterion=criterion, outcome="FAIL", decided_by=reviewer, rationale="r"
    )
    p = progress(eval_set, rv)
    assert p.n_outputs == 15
    assert p.by_annotations == {0: 3, 1: 2, 2: 10}
    rows = {r.criterion.key: r for r in p.criteria}
    amount, step = rows["correct_amount"], rows["next_step"]
    # correct_amount: 7 agreed, 3 disagreed of which 1 adjudicated; the 2 single labels await a second.
    assert (amount.agreed, amount.pending, amount.adjudicated, amount.awaiting) == (7, 2, 1, 2)
    assert amount.gold == {"PASS": 4, "FAIL": 3 + 1, "NOT_APPLICABLE": 0, "ABSTAIN": 0}
    assert amount.agreement.n == 10
    assert amount.agreement.kappa == pytest.approx(0.40)
    assert amount.agreement.alpha == pytest.approx(1 - 114 / 198)
    assert (step.agreed, step.pending) == (9, 1)
    assert step.agreement.n == 9 and step.agreement.kappa is None
    assert p.pending_adjudications == 3
    assert p.gold_labels == 7 + 1 + 9


@pytest.mark.django_db
def test_the_page_shows_the_figures_to_reviewers_and_leads(client, labeled, reviewer, lead):
    eval_set, rv, outputs = labeled
    for user in (reviewer, lead):
        client.force_login(user)
        page = client.get(url(eval_set, rv)).content.decode()
        assert ">0.40<" in page and ">0.42<" in page
        assert "undef." in page
        assert '>15</div><div class="label">outputs' in page
        assert "pending adjudications" in page


@pytest.mark.django_db
def test_a_draft_being_labeled_counts_as_in_progress_not_as_an_annotation(client, annotator, reviewer):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    client.force_login(annotator)
    client.post(next_url(eval_set))
    p = progress(eval_set, rv)
    assert p.by_annotations == {0: 2, 1: 0, 2: 0} and p.drafts_in_progress == 1


@pytest.mark.django_db
def test_annotators_see_only_their_own_progress(client, annotator, annotator2):
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    annotate_directly(outputs[0], rv, annotator2, {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    annotate_directly(outputs[1], rv, annotator, {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    client.force_login(annotator)
    assert client.get(url(eval_set, rv)).status_code == 403
    page = client.get(reverse("labeling:my_work")).content.decode()
    assert "You have submitted 1." in page
    # Outputs 1 and 3 still need a label this annotator could give (output 2 is theirs already).
    assert "2 outputs still need a label you could give" in page
    assert "case-002" in page and "case-001" not in page


@pytest.mark.django_db
def test_an_empty_eval_set_shows_zeros_not_errors(client, reviewer):
    eval_set, rv, outputs = labeling_setup(n_outputs=1)
    client.force_login(reviewer)
    page = client.get(url(eval_set, rv)).content.decode()
    assert "pending adjudications" in page and "—" in page
    make_user("unused")
    assert client.get(reverse("overview:progress") + "?eval_set=abc&rubric_version=").status_code == 200
    make_output(eval_set)
