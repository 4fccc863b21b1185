"""Adjudication: disagreements wait for a reviewer, agreements are gold already, every decision is kept."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Criterion
from labeling.gold import ADJUDICATED, AGREED, AWAITING, DISAGREED
from labeling.gold_loaders import load_item_states
from labeling.models import GoldLabel
from tests.factories import annotate_directly, labeling_setup, make_output, make_user

pytestmark = pytest.mark.django_db

TOOL_QUOTE = '"duplicate_charge": 40.0'
RESPONSE_QUOTE = "refund of $40.00"


@pytest.fixture
def split(annotator, annotator2):
    """Two annotators who agree on next_step and disagree on correct_amount."""
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(
        output, rv, annotator, {"correct_amount": ("PASS", RESPONSE_QUOTE), "next_step": ("PASS", "NONE")}
    )
    annotate_directly(
        output, rv, annotator2, {"correct_amount": ("FAIL", TOOL_QUOTE), "next_step": ("PASS", "within 5 business")}
    )
    criteria = {c.key: c for c in Criterion.objects.filter(rubric_version=rv)}
    return eval_set, rv, output, criteria


def url(output, criterion):
    return reverse("labeling:adjudicate", args=[output.pk, criterion.pk])


def queue_url(eval_set, rv):
    return reverse("labeling:adjudication_queue") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}"


def states(eval_set, rv):
    df = load_item_states(eval_set, rv)
    return {(int(r.criterion), int(r.output)): (r.state, r.gold) for r in df.itertuples()}


def test_agreement_is_gold_and_disagreement_waits_for_a_reviewer(split):
    eval_set, rv, output, crit = split
    got = states(eval_set, rv)
    assert got[(crit["next_step"].pk, output.pk)] == (AGREED, "PASS")
    state, gold = got[(crit["correct_amount"].pk, output.pk)]
    assert state == DISAGREED and gold != gold  # NaN: no gold yet


def test_one_submitted_annotation_is_not_gold_yet(annotator):
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE")})
    ((state, gold),) = states(eval_set, rv).values()
    assert state == AWAITING


def test_a_strict_majority_of_three_imported_annotations_is_gold(annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    for user, outcome in ((annotator, "PASS"), (annotator2, "FAIL"), (make_user("third"), "PASS")):
        annotate_directly(output, rv, user, {"correct_amount": (outcome, "NONE")})
    ((state, gold),) = states(eval_set, rv).values()
    assert (state, gold) == (AGREED, "PASS")


def test_the_queue_lists_only_disagreements(client, reviewer, split):
    eval_set, rv, output, crit = split
    client.force_login(reviewer)
    page = client.get(queue_url(eval_set, rv)).content.decode()
    assert url(output, crit["correct_amount"]) in page
    assert url(output, crit["next_step"]) not in page
    assert "1 waiting" in page


def test_the_page_highlights_both_quotes_and_names_nobody(client, reviewer):
    eval_set, rv, (output,) = labeling_setup()
    zoe, yuki = make_user("zoe-labeler"), make_user("yuki-labeler")
    annotate_directly(output, rv, zoe, {"correct_amount": ("PASS", RESPONSE_QUOTE)})
    annotate_directly(output, rv, yuki, {"correct_amount": ("FAIL", TOOL_QUOTE)})
    crit = {c.key: c for c in Criterion.objects.filter(rubric_version=rv)}
    client.force_login(reviewer)
    page = client.get(url(output, crit["correct_amount"])).content.decode()
    assert '<mark class="hl-a">refund of $40.00</mark>' in page
    assert '<mark class="hl-b">&quot;duplicate_charge&quot;: 40.0</mark>' in page
    assert "Annotator A" in page and "Annotator B" in page
    assert 'o-PASS">PASS' in page and 'o-FAIL">FAIL' in page
    assert crit["correct_amount"].definition in page
    assert crit["correct_amount"].pass_example in page
    assert "zoe-labeler" not in page and "yuki-labeler" not in page


def test_deciding_records_who_when_and_why_and_moves_on(client, reviewer, split):
    eval_set, rv, output, crit = split
    client.force_login(reviewer)
    data = {"outcome": "FAIL", "rationale": "The tool says 40.0 but the policy caps it.", "based_on": 0}
    response = client.post(url(output, crit["correct_amount"]), data)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("labeling:adjudication_queue"))  # nothing else pending
    gold = GoldLabel.objects.get()
    assert (gold.outcome, gold.decided_by, gold.revision, gold.is_current, gold.source) == (
        "FAIL",
        reviewer,
        1,
        True,
        "adjudication",
    )
    assert gold.rationale == "The tool says 40.0 but the policy caps it." and gold.decided_at is not None
    assert gold.rubric_version == rv and gold.criterion == crit["correct_amount"]
    assert states(eval_set, rv)[(crit["correct_amount"].pk, output.pk)] == (ADJUDICATED, "FAIL")
    assert "0 waiting" in client.get(queue_url(eval_set, rv)).content.decode()


def test_after_a_decision_the_next_disagreement_opens(client, reviewer, annotator, annotator2, split):
    eval_set, rv, output, crit = split
    other = make_output(eval_set, case_id="case-002")
    annotate_directly(other, rv, annotator, {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    annotate_directly(other, rv, annotator2, {"correct_amount": ("PASS", "NONE"), "next_step": ("FAIL", "NONE")})
    client.force_login(reviewer)
    data = {"outcome": "PASS", "rationale": "Amount matches.", "based_on": 0}
    response = client.post(url(output, crit["correct_amount"]), data)
    assert response["Location"] == url(other, crit["next_step"])


def test_changing_gold_later_is_a_new_revision_with_the_history_kept(client, reviewer, lead, split):
    eval_set, rv, output, crit = split
    client.force_login(reviewer)
    client.post(url(output, crit["correct_amount"]), {"outcome": "FAIL", "rationale": "first", "based_on": 0})
    client.force_login(lead)
    page = client.get(url(output, crit["correct_amount"])).content.decode()
    assert "currently FAIL (revision 1)" in page and "first" in page
    client.post(url(output, crit["correct_amount"]), {"outcome": "PASS", "rationale": "second look", "based_on": 1})
    rows = list(GoldLabel.objects.order_by("revision").values_list("outcome", "revision", "is_current", "decided_by"))
    assert rows == [("FAIL", 1, False, reviewer.pk), ("PASS", 2, True, lead.pk)]
    page = client.get(url(output, crit["correct_amount"])).content.decode()
    assert "second look" in page and "first" in page


def test_a_decision_made_meanwhile_by_someone_else_is_not_overwritten(client, reviewer, lead, split):
    eval_set, rv, output, crit = split
    client.force_login(lead)
    client.post(url(output, crit["correct_amount"]), {"outcome": "FAIL", "rationale": "lead was first", "based_on": 0})
    client.force_login(reviewer)
    response = client.post(url(output, crit["correct_amount"]), {"outcome": "PASS", "rationale": "me", "based_on": 0})
    assert response.status_code == 409
    assert "lead saved a gold label for this item after this page was loaded" in response.content.decode()
    assert list(GoldLabel.objects.values_list("outcome", "revision")) == [("FAIL", 1)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"outcome": "FAIL", "rationale": "   ", "based_on": 0}, "a rationale is required"),
        ({"outcome": "FAIL", "based_on": 0}, "a rationale is required"),
        ({"outcome": "WRONG", "rationale": "x", "based_on": 0}, "“WRONG” is not an outcome"),
        ({"rationale": "x", "based_on": 0}, "Pick the gold outcome."),
        ({"outcome": "FAIL", "rationale": "x", "based_on": "?"}, "Reload the page."),
    ],
)
def test_bad_adjudication_input_is_refused_and_nothing_saved(client, reviewer, split, data, message):
    eval_set, rv, output, crit = split
    client.force_login(reviewer)
    response = client.post(url(output, crit["correct_amount"]), data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not GoldLabel.objects.exists()


def test_an_item_without_two_submitted_annotations_cannot_be_adjudicated(client, reviewer, annotator):
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE")})
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.force_login(reviewer)
    response = client.post(url(output, criterion), {"outcome": "PASS", "rationale": "x", "based_on": 0})
    assert response.status_code == 409
    assert "does not have two submitted annotations" in response.content.decode()
    assert not GoldLabel.objects.exists()


def test_a_reviewer_cannot_adjudicate_an_output_they_labeled(client, reviewer, annotator):
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, reviewer, {"correct_amount": ("PASS", "NONE")})
    annotate_directly(output, rv, annotator, {"correct_amount": ("FAIL", "NONE")})
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.force_login(reviewer)
    assert client.get(url(output, criterion)).status_code == 403
    response = client.post(url(output, criterion), {"outcome": "PASS", "rationale": "mine", "based_on": 0})
    assert response.status_code == 403
    assert not GoldLabel.objects.exists()
    assert "0 waiting" in client.get(queue_url(eval_set, rv)).content.decode()  # not even listed
    # A lead who did not label it may.
    lead = make_user("lead2", "lead")
    client.force_login(lead)
    assert client.post(url(output, criterion), {"outcome": "PASS", "rationale": "ok", "based_on": 0}).status_code == 302


def test_unknown_items_are_404(client, reviewer, split):
    eval_set, rv, output, crit = split
    client.force_login(reviewer)
    assert client.get(reverse("labeling:adjudicate", args=[output.pk, 999999])).status_code == 404
    assert client.get(reverse("labeling:adjudicate", args=[999999, crit["next_step"].pk])).status_code == 404


def test_what_people_entered_here_is_what_export_data_writes(client, annotator, annotator2, reviewer):
    import json
    from io import StringIO

    from django.core.management import call_command

    from labeling.models import Annotation
    from tests.labeling_helpers import next_url, save_url, submit_url

    eval_set, rv, (output,) = labeling_setup()
    answers = {
        annotator: {"correct_amount": ("PASS", RESPONSE_QUOTE), "next_step": ("PASS", "NONE")},
        annotator2: {"correct_amount": ("FAIL", TOOL_QUOTE), "next_step": ("PASS", "NONE")},
    }
    for user, given in answers.items():
        client.force_login(user)
        client.post(next_url(eval_set))
        mine = Annotation.objects.get(annotator=user)
        for key, (outcome, evidence) in given.items():
            data = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": rv.pk}
            assert client.post(save_url(mine), data, HTTP_HX_REQUEST="true").status_code == 200
        # A correction after submitting is exported as the current answer, not the first one.
        assert client.post(submit_url(mine), {"rubric_version": rv.pk}).status_code == 302
    client.force_login(annotator)
    mine = Annotation.objects.get(annotator=annotator)
    data = {"criterion": "next_step", "outcome": "FAIL", "evidence": "NONE", "rubric_version": rv.pk, "based_on": 1}
    assert client.post(save_url(mine), data, HTTP_HX_REQUEST="true").status_code == 200
    client.force_login(reviewer)
    amount = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.post(url(output, amount), {"outcome": "FAIL", "rationale": "Tool shows it.", "based_on": 0})

    def export(what):
        out = StringIO()
        call_command("export_data", "--eval-set", eval_set.name, "--what", what, "--rubric", rv.ref, stdout=out)
        return [json.loads(line) for line in out.getvalue().splitlines()]

    labels = {(r["annotator"], r["criterion"]): (r["outcome"], r["evidence"]) for r in export("labels")}
    assert labels == {
        ("ann", "correct_amount"): ("PASS", RESPONSE_QUOTE),
        ("ann", "next_step"): ("FAIL", "NONE"),
        ("ann2", "correct_amount"): ("FAIL", TOOL_QUOTE),
        ("ann2", "next_step"): ("PASS", "NONE"),
    }
    gold = {r["criterion"]: r for r in export("gold")}
    assert (gold["correct_amount"]["outcome"], gold["correct_amount"]["adjudicator"]) == ("FAIL", "rev")
    assert gold["correct_amount"]["rationale"] == "Tool shows it."
    assert "next_step" not in gold  # after the correction the annotators disagree and nobody decided yet


def test_the_adjudication_page_never_shows_a_judge_verdict(client, reviewer, split):
    from judging.models import JudgeConfig, JudgeRun, Verdict

    eval_set, rv, output, crit = split
    # In the eval set's workspace: a verdict the reviewer could otherwise be shown.
    config = JudgeConfig.objects.create(name="anchoring-judge", backend="instrument", workspace=eval_set.workspace)
    run = JudgeRun.objects.create(eval_set=eval_set, rubric_version=rv, judge_config=config)
    Verdict.objects.create(
        run=run, output=output, rubric_version=rv, criterion=crit["correct_amount"], judge_config=config,
        judge_config_hash=config.content_hash, outcome="PASS", evidence="zq-judge-says-7431",
        raw_output="zq-judge-says-7431",
    )  # fmt: skip
    client.force_login(reviewer)
    for page in (
        client.get(url(output, crit["correct_amount"])),
        client.get(queue_url(eval_set, rv)),
        client.get(reverse("overview:progress") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}"),
    ):
        body = page.content.decode()
        assert page.status_code == 200
        assert "zq-judge-says-7431" not in body and "anchoring-judge" not in body


def test_an_item_with_one_annotation_shows_nothing_of_it(client, reviewer, annotator):
    """A reviewer who also labels could otherwise read slot A, then take slot B of the same output."""
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, {"correct_amount": ("FAIL", RESPONSE_QUOTE)})
    criterion = Criterion.objects.get(rubric_version=rv, key="correct_amount")
    client.force_login(reviewer)
    response = client.get(url(output, criterion))
    body = response.content.decode()
    assert response.status_code == 409
    assert "does not have two submitted annotations yet" in body
    assert "<mark" not in body and 'o-FAIL">FAIL' not in body and "Annotator A" not in body
