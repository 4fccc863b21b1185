"""Deterministic instruments: criteria that need no model, least interpretive first.

A judge config's `instruments` maps a criterion key to one instrument:

    {"correct_amount": {"kind": "reference_values_contained", "pattern": "\\\\$\\\\d+\\\\.\\\\d{2}"},
     "no_voucher":     {"kind": "regex_must_not_match", "pattern": "voucher|gift card", "ignore_case": true},
     "concise":        {"kind": "max_length", "max_words": 120}}

Kinds (all look at the output's response):
- reference_contained: PASS when the whole case reference appears in the response
  (whitespace-normalized; `ignore_case`, default false); NOT_APPLICABLE when the case has no reference.
- reference_values_contained: every match of `pattern` in the reference (amounts, ids, dates)
  appears verbatim in the response; NOT_APPLICABLE when the reference has no match.
- regex_must_match / regex_must_not_match: regular expression `pattern` (`ignore_case`, default false).
- max_length: PASS when the response has at most `max_chars` characters and/or `max_words` words.
- min_length: PASS when the response has at least `min_chars` characters and/or `min_words` words. A
  crude "substantial answer" check, and by design fooled by padding (the probes' tests use it so).
- constant: always `outcome` (PASS, FAIL, NOT_APPLICABLE or ABSTAIN), whatever the output says: a
  placeholder, or a judge that ignores its input, which a probe run's negative control must expose.

Precedents (docs/judging.md, "Precedent matching"): a version of an instrument judge derived with examples
(judging/guidance.py) carries, per criterion, examples of the people's gold with a quote that decides each.
After its rule, the instrument looks for each example's quote in the graded response, case-insensitively and
with any run of whitespace matching any other; where one is found, that example's outcome decides instead of
the rule. FAIL precedents are looked for before PASS ones, so when a response repeats both, the FAIL wins: a
false pass is the dangerous error, and a phrase people failed is what examples are first there to catch.
This generalises only to responses that repeat an example's phrase; it learns nothing else.

They produce verdicts exactly like a model judge (evidence is the matched text, or NONE),
so they are calibrated against people and gated the same way. Pure functions, no Django.

A lead writes `pattern`, and it runs on every output: with Python's backtracking `re`, `^(a+)+$` took
2 s on 27 characters and doubled with each one more. Lead-written patterns run on RE2 (google-re2),
whose matching time grows linearly with the text whatever the pattern. RE2 has no backreferences and no
lookarounds (the constructs that need backtracking); a pattern using them is refused with a message
when the config is made (form, add_judge, admin) and when a run starts.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from evals.transcript import NONE_QUOTE, normalize_ws

KINDS = (
    "reference_contained",
    "reference_values_contained",
    "regex_must_match",
    "regex_must_not_match",
    "max_length",
    "min_length",
    "constant",
)
CONSTANT_OUTCOMES = ("PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN")
_OPTIONS = {
    "reference_contained": {"ignore_case"},
    "reference_values_contained": {"pattern", "ignore_case"},
    "regex_must_match": {"pattern", "ignore_case"},
    "regex_must_not_match": {"pattern", "ignore_case"},
    "max_length": {"max_chars", "max_words"},
    "min_length": {"min_chars", "min_words"},
    "constant": {"outcome"},
}
_LIMITS = {"max_length": ("max_chars", "max_words"), "min_length": ("min_chars", "min_words")}
# Evidence quotes are for people to check; a very long match is cut to this many characters.
MAX_EVIDENCE_CHARS = 300


@dataclass(frozen=True)
class InstrumentVerdict:
    outcome: str
    evidence: str
    raw: str  # JSON: which instrument, with what settings, found what


def validate_instruments(value: Any) -> list[str]:
    """Every problem with an `instruments` value, as messages naming the criterion and field."""
    if not isinstance(value, dict):
        return ['instruments must be a JSON object mapping criterion keys to {"kind": ...}']
    errors: list[str] = []
    for key, spec in value.items():
        where = f"instruments[{key!r}]"
        if not isinstance(spec, dict):
            errors.append(f'{where} must be an object like {{"kind": "max_length", "max_words": 120}}')
            continue
        kind = spec.get("kind")
        if kind not in KINDS:
            errors.append(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
            continue
        unknown = set(spec) - {"kind"} - _OPTIONS[kind]
        if unknown:
            errors.append(f"{where}: unknown setting(s) {', '.join(sorted(unknown))} for {kind}")
        if "ignore_case" in spec and not isinstance(spec["ignore_case"], bool):
            errors.append(f"{where}: ignore_case must be true or false")
        if "pattern" in _OPTIONS[kind]:
            pattern = spec.get("pattern")
            if not isinstance(pattern, str) or not pattern:
                errors.append(f"{where}: {kind} needs a non-empty regular expression in pattern")
            else:
                problem = pattern_problem(pattern)
                if problem:
                    errors.append(f"{where}: {problem}")
        if kind in _LIMITS:
            limits = {k: spec.get(k) for k in _LIMITS[kind] if k in spec}
            if not limits:
                errors.append(f"{where}: {kind} needs {' or '.join(_LIMITS[kind])}")
            for name, limit in limits.items():
                if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                    errors.append(f"{where}: {name} must be a whole number of at least 1")
        if kind == "constant" and spec.get("outcome") not in CONSTANT_OUTCOMES:
            errors.append(f"{where}: constant needs an outcome, one of {', '.join(CONSTANT_OUTCOMES)}")
    return errors


@functools.lru_cache(maxsize=256)
def lead_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """A lead-written pattern compiled with RE2 (re2.error if RE2 cannot handle it); cached, as `re` caches."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # a refused pattern is told to the lead who wrote it, not logged to stderr
    return re2.compile(pattern, options)


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 cannot run a lead-written pattern (None: it can)."""
    try:
        lead_pattern(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        return (
            f"pattern is not a valid regular expression for RE2 ({reason}). Patterns run on RE2, so that no "
            "pattern can take exponential time: it has no backreferences (\\1) and no lookarounds "
            "((?=...), (?!...), (?<=...), (?<!...)); write $ rather than \\Z"
        )
    return None


def evaluate(spec: dict, *, response: str, reference: str) -> InstrumentVerdict:
    kind = spec["kind"]
    ignore_case = bool(spec.get("ignore_case"))
    flags = re.I if ignore_case else 0
    if kind == "reference_contained":
        if not reference.strip():
            return _verdict("NOT_APPLICABLE", NONE_QUOTE, spec, note="the case has no reference")
        found = _find_words(reference, response, flags)
        return _verdict("PASS" if found else "FAIL", found or NONE_QUOTE, spec)
    if kind == "reference_values_contained":
        pattern = lead_pattern(spec["pattern"], ignore_case=ignore_case)
        values = list(dict.fromkeys(m.group(0) for m in pattern.finditer(reference) if m.group(0)))
        if not values:
            return _verdict("NOT_APPLICABLE", NONE_QUOTE, spec, note="the reference has no value to look for")
        missing = [v for v in values if not _find_words(v, response, flags)]
        quotes = [_find_words(v, response, flags) for v in values if v not in missing]
        outcome = "FAIL" if missing else "PASS"
        evidence = quotes[0] if quotes and not missing else NONE_QUOTE
        return _verdict(outcome, evidence, spec, values=values, missing=missing)
    if kind in ("regex_must_match", "regex_must_not_match"):
        match = lead_pattern(spec["pattern"], ignore_case=ignore_case).search(response)
        matched = match.group(0) if match else ""
        quote = matched if matched.strip() else NONE_QUOTE
        if kind == "regex_must_match":
            return _verdict("PASS" if match else "FAIL", quote, spec, matched=matched if match else None)
        return _verdict("FAIL" if match else "PASS", quote, spec, matched=matched if match else None)
    if kind == "max_length":
        chars, words = len(response), len(response.split())
        too_long = ("max_chars" in spec and chars > spec["max_chars"]) or (
            "max_words" in spec and words > spec["max_words"]
        )
        return _verdict("FAIL" if too_long else "PASS", NONE_QUOTE, spec, chars=chars, words=words)
    if kind == "min_length":
        chars, words = len(response), len(response.split())
        too_short = ("min_chars" in spec and chars < spec["min_chars"]) or (
            "min_words" in spec and words < spec["min_words"]
        )
        return _verdict("FAIL" if too_short else "PASS", NONE_QUOTE, spec, chars=chars, words=words)
    if kind == "constant":
        return _verdict(spec["outcome"], NONE_QUOTE, spec)
    raise ValueError(f"unknown instrument kind {kind!r}")


def with_precedents(verdict: InstrumentVerdict, *, response: str, examples: Sequence[Mapping]) -> InstrumentVerdict:
    """The rule's verdict, or the outcome of the first example whose quote the response repeats (FAIL examples
    first, then PASS ones, each in the order given); the raw output names the precedent and the rule's outcome."""
    for outcome in ("FAIL", "PASS"):
        for n, example in enumerate(examples):
            if example.get("outcome") != outcome:
                continue
            found = _find_words(str(example.get("quote", "")), response, re.I)
            if found:
                raw = json.loads(verdict.raw)
                raw.update(
                    outcome=outcome,
                    rule_outcome=verdict.outcome,
                    precedent={"example": n, "output_id": example.get("output_id"), "quote": example.get("quote")},
                )
                return InstrumentVerdict(
                    outcome=outcome, evidence=found, raw=json.dumps(raw, ensure_ascii=False, sort_keys=True)
                )
    return verdict


def _find_words(needle: str, haystack: str, flags: int) -> str:
    """The text in `haystack` where `needle` occurs with any whitespace between its words ('' if nowhere)."""
    words = normalize_ws(needle).split(" ")
    if not words or words == [""]:
        return ""
    match = re.search(r"\s+".join(re.escape(w) for w in words), haystack, flags)
    return match.group(0)[:MAX_EVIDENCE_CHARS] if match else ""


def _verdict(outcome: str, evidence: str, spec: dict, **found: Any) -> InstrumentVerdict:
    raw = json.dumps({"instrument": spec, "outcome": outcome, **found}, ensure_ascii=False, sort_keys=True)
    return InstrumentVerdict(outcome=outcome, evidence=evidence[:MAX_EVIDENCE_CHARS], raw=raw)
