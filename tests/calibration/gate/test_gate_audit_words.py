"""The gate names each audited criterion's design and predictor in a lead's words (issue 38 item 1): in its JSON
(`audit_in_words`), its text answer and its result page; a result stored before the words falls back to its design
and predictor; a criterion without an audit says none of it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape

from calibration.audits.design_words import design_and_predictor
from calibration.audits.plans import release_plan_next
from calibration.models import AuditPlan, AuditPlanSignal, GateResult
from tests.audit_helpers import KEY, candidate, gold, in_order, plan_on
from tests.factories import add_verdict, make_judge, make_run

pytestmark = pytest.mark.django_db

ARGS = ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge"]
STRATIFIED_WORDS = "stratified audit, predictor: the judge's verdict (two strata, PASS and the rest)"
JURY_WORDS = "uniform audit, predictor: the judge's vote share + 1 other config (instrument)"


@pytest.mark.parametrize(
    ("design", "predictor", "extra", "words"),
    [
        ("uniform", "jury", ["instrument"], JURY_WORDS),
        ("uniform", "jury", ["a", "b"], "uniform audit, predictor: the judge's vote share + 2 other configs (a, b)"),
        ("uniform", "jury", [], "uniform audit, predictor: the judge's vote share"),
        (
            "uniform",
            "jury",
            None,
            "uniform audit, predictor: the judge's vote share and any other configs the lead picked",
        ),
        ("uniform", "verdict", [], "uniform audit, predictor: the judge's verdict"),
        # A stratified plan reads the verdict whatever it is told (its strata are the judge's PASS and the rest).
        ("stratified", "jury", None, STRATIFIED_WORDS),
        (None, None, None, ""),
    ],
)
def test_the_words_for_each_design_and_predictor(design, predictor, extra, words):
    assert design_and_predictor(design, predictor, extra) == words


def gate(fmt: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", *ARGS, "--format", fmt, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue()


def audited(design: str = "uniform", extra: bool = True, labeled: int = 20):
    """A 40-output candidate gating on an audit, every output released, gold PASS on the first `labeled` of the order
    (20: the exact rule's PASS at a minimum of 0.5); with an instrument config beside the judge when `extra`."""
    c = candidate(n=40, decide_on="audit")
    picks = []
    if extra:
        instrument = make_judge("instrument")
        run = make_run(c.eval_set, c.rubric_version, instrument, agent_version="default")
        for i, output in enumerate(c.outputs):
            add_verdict(run, output, KEY, "PASS" if i % 2 == 0 else "FAIL")
        picks = [instrument]
    plan = plan_on(c, release=None if design == "stratified" else 40, design=design, extra_judges=picks)
    if design == "stratified":
        release_plan_next(plan=plan, by=c.lead, k=40)  # a stratified plan releases each side's next outputs
    for output in in_order(plan)[:labeled]:
        gold(c, output, "PASS")
    return c, plan


def result_page(client, lead) -> str:
    client.force_login(lead)
    record = GateResult.objects.latest("pk")
    return client.get(reverse("calibration:gate_result", args=[record.pk])).content.decode()


def test_a_jury_audit_is_named_with_its_extra_config_in_the_json_the_text_and_the_page(client):
    c, _ = audited()
    code, out = gate("json")
    row = json.loads(out)["criteria"][0]
    assert code == 0
    assert (row["audit_design"], row["audit_predictor"], row["audit_in_words"]) == ("uniform", "jury", JURY_WORDS)
    code, out = gate("text")
    assert code == 0 and f"correct_amount: {JURY_WORDS}" in out.splitlines()
    body = result_page(client, c.lead)
    assert '<span class="audit-method" id="audit-method-correct_amount">' + escape(JURY_WORDS) + "</span>" in body
    # The audit's gold is not "no gold": the candidate-gold section says the audit decides on it.
    assert "its gold is the audit's" in body and "no gold on the candidate" not in body


def test_a_stratified_audit_says_it_reads_the_verdict_and_no_vote_share(client):
    c, _ = audited(design="stratified", extra=False, labeled=40)  # every output PASS: decided, whatever the strata
    code, out = gate("text")
    assert code == 0 and f"correct_amount: {STRATIFIED_WORDS}" in out.splitlines() and "vote share" not in out
    assert 'id="audit-method-correct_amount">stratified audit' in result_page(client, c.lead)


def test_a_plan_from_before_the_jury_says_the_verdict(client):
    c, plan = audited(extra=False)
    # A uniform plan started before issue 38 reads the verdict and has no signals.
    AuditPlanSignal.objects.filter(plan=plan).delete()
    AuditPlan.objects.filter(pk=plan.pk).update(predictor="verdict")
    code, out = gate("json")
    assert json.loads(out)["criteria"][0]["audit_in_words"] == "uniform audit, predictor: the judge's verdict"


def test_without_an_audit_the_gate_names_no_design_negative_control(client):
    c = candidate(n=40)  # decides on the observed bound: no audit
    code, out = gate("text")
    assert code == 0 and "audit, predictor" not in out
    code, out = gate("json")
    assert json.loads(out)["criteria"][0]["audit_in_words"] is None
    body = result_page(client, c.lead)
    assert "audit-method" not in body and "predictor:" not in body and "its gold is the audit" not in body


def test_a_result_stored_before_the_words_falls_back_to_its_design_and_predictor(client):
    c, _ = audited()
    assert gate("json")[0] == 0
    record = GateResult.objects.get()
    row = record.result["criteria"][0]
    row.pop("audit_in_words")  # as the gate stored it before the words
    record.save(update_fields=["result"])
    body = result_page(client, c.lead)
    assert "uniform audit, predictor: the judge&#x27;s vote share and any other configs the lead picked" in body
    # Older still (no design stored): the levels without words.
    row.pop("audit_design"), row.pop("audit_predictor")
    record.save(update_fields=["result"])
    body = result_page(client, c.lead)
    assert 'id="audit-levels-correct_amount"' in body and "audit-method" not in body
