"""Verdicts from the scores of an Inspect AI eval log: calibrate the judge a team already runs.

Each scorer of the log goes to the rubric criterion of the same key, unless mapped otherwise
(`--scorer NAME=KEY`) or left out (`--skip-scorer NAME`); each sample's score of it becomes
one verdict. Values map to outcomes by VALUE_MAP, extended or overridden with
`--score VALUE=OUTCOME`:

    C -> PASS, I -> FAIL     (inspect_ai's CORRECT / INCORRECT, e.g. model_graded_qa, model_graded_fact)
    PASS -> PASS, FAIL -> FAIL, true -> PASS, false -> FAIL

Anything else (a partial "P", a number, a missing score, a failed sample) is an ERROR verdict
with the reason, never a FAIL: the judge did not give a PASS/FAIL answer. The grader's
explanation is kept as the raw output; it is not a verbatim quote, so the evidence is empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals import record_fields as f
from evals.problems import Problems, RecordError, suggest
from formats.inspect_log import read_log
from formats.readers import Source
from formats.record_model import AGENT_VERSION_MAX, CASE_ID_MAX
from formats.verdict_records import VerdictRecord
from judging.models import VerdictOutcome

VALUE_MAP = {
    "C": VerdictOutcome.PASS,
    "I": VerdictOutcome.FAIL,
    "PASS": VerdictOutcome.PASS,
    "FAIL": VerdictOutcome.FAIL,
    "true": VerdictOutcome.PASS,
    "false": VerdictOutcome.FAIL,
}
OUTCOMES = tuple(VerdictOutcome.values)


def value_text(value: Any) -> str:
    """A score value as the mapping names it: C, I, true, 1, 0.5, ..."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class ScoreMapping:
    scorers: dict[str, str] = field(default_factory=dict)  # scorer name -> criterion key
    skip: frozenset[str] = frozenset()
    values: dict[str, str] = field(default_factory=lambda: dict(VALUE_MAP))
    # Where the mapping came from, so that refusals name what the caller can change: the command's flags
    # (--scorer NAME=CRITERION) or the API's query parameters (scorer=NAME=CRITERION).
    via_api: bool = False

    @classmethod
    def parse(
        cls, scorers: Sequence[str] = (), values: Sequence[str] = (), skip: Sequence[str] = (), *, via_api: bool = False
    ) -> ScoreMapping:
        """From `NAME=KEY` and `VALUE=OUTCOME` texts (the command's flags or the API's parameters); ValueError
        says what is wrong."""
        by_scorer = dict(_pair(text, option("scorer", "NAME=CRITERION", via_api)) for text in scorers)
        by_value: dict[str, str] = dict(VALUE_MAP)
        for text in values:
            value, outcome = _pair(text, option("score", "VALUE=OUTCOME", via_api))
            if outcome not in OUTCOMES:
                raise ValueError(f"{option('score', text, via_api)}: {outcome!r} is not one of {', '.join(OUTCOMES)}")
            by_value[value] = outcome
        both = set(by_scorer) & set(skip)
        if both:
            raise ValueError(f"scorer {sorted(both)[0]!r} is both mapped and skipped")
        return cls(by_scorer, frozenset(skip), by_value, via_api)

    def option(self, name: str, value: str) -> str:
        return option(name, value, self.via_api)

    def outcome(self, value: Any) -> tuple[str, str]:
        """(outcome, error reason) for one score value."""
        text = value_text(value)
        outcome = self.values.get(text)
        if outcome is None:
            known = ", ".join(f"{v}={o}" for v, o in self.values.items())
            return VerdictOutcome.ERROR, (
                f"Inspect score {text} has no outcome (mapped: {known}); map it with --score {text}=OUTCOME"
            )
        return outcome, ""


def option(name: str, value: str, via_api: bool) -> str:
    """How the caller writes an option: `--skip-scorer X` on the command line, `skip_scorer=X` in an API query."""
    return f"{name.replace('-', '_')}={value}" if via_api else f"--{name} {value}"


def _pair(text: str, form: str) -> tuple[str, str]:
    left, sep, right = text.partition("=")
    if not sep or not left.strip() or not right.strip():
        raise ValueError(f"{text!r} must be written {form}")
    return left.strip(), right.strip()


def _criteria_of(log: Any, keys: list[str], mapping: ScoreMapping, problems: Problems) -> dict[str, str]:
    """Scorer name -> criterion key for every scorer of the log that is not skipped."""
    names: list[str] = []
    for sample in log.samples:
        for name in sample.scores or {}:
            if name not in names:
                names.append(name)
    if not names:
        raise problems.fatal(None, "scores", "the log has no scores, so there are no verdicts to import")
    for name in sorted((set(mapping.scorers) | mapping.skip) - set(names)):
        problems.add(None, f"scorers.{name}", f"the log has no scorer {name!r} (its scorers: {', '.join(names)})")
    targets: dict[str, str] = {}
    for name in names:
        if name in mapping.skip:
            continue
        key = mapping.scorers.get(name, name)
        if key not in keys:
            problems.add(
                None,
                f"scorers.{name}",
                f'"{key}" is not a criterion of the rubric{suggest(key, keys)} (its criteria are {", ".join(keys)}); '
                f"map the scorer with {mapping.option('scorer', name + '=CRITERION')} or leave it out with "
                f"{mapping.option('skip-scorer', name)}",
            )
            continue
        if key in targets.values():
            other = next(n for n, k in targets.items() if k == key)
            problems.add(None, f"scorers.{name}", f"scorers {other!r} and {name!r} both go to criterion {key!r}")
            continue
        targets[name] = key
    if not targets and not problems:
        raise problems.fatal(None, "scores", "every scorer of the log is left out: nothing to import")
    return targets


def inspect_records(
    source: Source, problems: Problems, keys: list[str], mapping: ScoreMapping, agent_version: str
) -> Iterator:
    """One VerdictRecord per sample and mapped scorer; outputs under the model's name unless `agent_version`."""
    log = read_log(source, problems)
    targets = _criteria_of(log, keys, mapping, problems)
    try:
        version = agent_version or f.ident(log.eval.model, "agent_version", AGENT_VERSION_MAX)
    except RecordError as exc:
        raise problems.fatal(None, "eval.model", f"the model name cannot be an agent_version: {exc.message}") from None
    for i, sample in enumerate(log.samples):
        try:
            case_id = f.ident(sample.id, "case_id", CASE_ID_MAX)
        except RecordError as exc:
            problems.add(None, f"samples[{i}].id", exc.message)
            continue
        for name, key in targets.items():
            score = (sample.scores or {}).get(name)
            raw = ""
            outcome: str
            if sample.error is not None:
                outcome, reason = VerdictOutcome.ERROR, f"the sample failed in Inspect: {sample.error.message[:300]}"
            elif score is None:
                outcome, reason = VerdictOutcome.ERROR, f"Inspect has no {name} score for this sample"
            else:
                outcome, reason = mapping.outcome(score.value)
                raw = f.stored_json(
                    {"scorer": name, "value": score.value, "answer": score.answer, "explanation": score.explanation},
                    "raw",
                )
            yield VerdictRecord(
                line=None,
                case_id=case_id,
                agent_version=version,
                criterion=key,
                outcome=outcome,
                evidence="",
                raw=raw,
                error_reason=reason,
                check_quote=False,
            )
