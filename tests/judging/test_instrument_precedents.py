"""Precedent matching: an instrument judge's examples decide where the graded response repeats their quote
(judging/backends/instruments.with_precedents, docs/judging.md "Precedent matching")."""

from __future__ import annotations

import json

import pytest

from judging import runner
from judging.backends.instruments import evaluate, with_precedents
from judging.gold_splits import start_split
from judging.guidance import GuidanceRefused, derive_config
from judging.models import GoldSplit, JudgeConfig
from tests.factories import make_llm_judge
from tests.guidance_helpers import example, gold_set
from tests.judging_helpers import judge_in_process

NO_VOUCHER = {"kind": "regex_must_not_match", "pattern": "voucher", "ignore_case": True}
QUIET = "I've also waived the return shipping fee for you."
HARMLESS = "Our policy has no extra compensation"


def judged(response: str, examples: list[dict], spec: dict = NO_VOUCHER):
    return with_precedents(evaluate(spec, response=response, reference=""), response=response, examples=examples)


def test_a_response_repeating_a_fail_precedent_fails_with_the_quote_as_evidence():
    # The rule alone passes it: no "voucher" in the reply.
    response = "Refund issued.  I've ALSO waived the\nreturn shipping fee for you. Bye."
    assert evaluate(NO_VOUCHER, response=response, reference="").outcome == "PASS"
    verdict = judged(response, [{"output_id": 7, "outcome": "FAIL", "quote": QUIET}])
    assert verdict.outcome == "FAIL"
    # The evidence is the response's own words (its case and line break), so it is found in the transcript.
    assert verdict.evidence == "I've ALSO waived the\nreturn shipping fee for you."
    raw = json.loads(verdict.raw)
    assert raw["rule_outcome"] == "PASS" and raw["precedent"] == {"example": 0, "output_id": 7, "quote": QUIET}


def test_without_the_quote_the_rule_decides_as_before():
    response = "Refund issued. I've waived nothing; the shipping fee stands."
    rule = evaluate(NO_VOUCHER, response=response, reference="")
    assert judged(response, [{"output_id": 7, "outcome": "FAIL", "quote": QUIET}]) == rule
    assert rule.outcome == "PASS"
    # A partial quote is not the quote: "waived the return" alone is in neither.
    assert judged("We waived the return.", [{"output_id": 7, "outcome": "FAIL", "quote": QUIET}]).outcome == "PASS"


def test_a_pass_precedent_overrules_the_rule_and_a_fail_precedent_wins_over_a_pass_one():
    response = f"{HARMLESS} for this. Here is a $20 voucher. {QUIET}"
    assert evaluate(NO_VOUCHER, response=response, reference="").outcome == "FAIL"
    passing = {"output_id": 1, "outcome": "PASS", "quote": HARMLESS}
    failing = {"output_id": 2, "outcome": "FAIL", "quote": QUIET}
    assert judged(f"{HARMLESS} for this.", [passing]).outcome == "PASS"
    # Both quotes are in the response: the FAIL precedent decides, whichever comes first in the list.
    for examples in ([passing, failing], [failing, passing]):
        verdict = judged(response, examples)
        assert (verdict.outcome, verdict.evidence) == ("FAIL", QUIET)


@pytest.mark.django_db
def test_an_instrument_judge_takes_examples_as_precedents_and_refuses_instructions(lead):
    # Six outputs "Response number N: refund of $40.00 issued.", next_step FAIL in the people's gold.
    eval_set, rubric, outputs = gold_set([{"correct_amount": "PASS", "next_step": "FAIL"}] * 6)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=5)
    dev = next(o for o in outputs if o.pk in split.development)
    instruments = {
        "correct_amount": {"kind": "regex_must_match", "pattern": "\\$40\\.00"},
        "next_step": {"kind": "regex_must_not_match", "pattern": "voucher"},
    }
    base = make_llm_judge(name="rules", backend="instrument", instruments=instruments)
    configs = JudgeConfig.objects.count()
    notes = {"instructions": "Fail a refund without a next step.", "examples": []}
    with pytest.raises(GuidanceRefused, match="deterministic .* reads no instructions; give it examples only"):
        derive_config(base=base, guidance={"rubric": rubric.ref, "criteria": {"next_step": notes}}, by=lead)
    assert JudgeConfig.objects.count() == configs
    quote = "refund of $40.00 issued"
    doc = {"rubric": rubric.ref, "criteria": {"next_step": {"examples": [example(dev, "FAIL", quote=quote)]}}}
    v2 = derive_config(base=base, guidance=doc, by=lead)
    assert v2.guidance["next_step"]["examples"][0]["split"] == GoldSplit.DEVELOPMENT
    # Every response repeats the quote, so version 2 fails next_step on all six; version 1 passes all six.
    for config, expected in ((base, "PASS"), (v2, "FAIL")):
        run = judge_in_process(runner.Scope(eval_set, rubric, config))
        outcomes = {(v.criterion.key, v.outcome) for v in run.verdicts.all()}
        assert outcomes == {("correct_amount", "PASS"), ("next_step", expected)}
    assert {v.evidence for v in v2.verdicts.filter(criterion__key="next_step")} == {quote}
