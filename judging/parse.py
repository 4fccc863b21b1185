"""Turning what a judge answered into one outcome per criterion. ERROR is not FAIL.

The parser never trusts the judge's list: every criterion of the request gets
exactly one result, in the request's (rubric) order. A criterion the judge skipped,
a verdict outside the vocabulary, conflicting duplicates, an empty or unparseable
answer and a refusal each become ERROR with the reason; criteria the rubric does
not have are ignored. Pure functions, no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .prompt import JUDGE_VERDICTS

ERROR = "ERROR"
PARSE = "parse"
REFUSAL = "refusal"
# Long judge text is kept whole in raw_output; reasons quote only this much of it.
REASON_QUOTE_CHARS = 200
_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\s*\Z", re.S | re.I)


@dataclass(frozen=True)
class Parsed:
    criterion: str
    outcome: str
    evidence: str = ""
    error_kind: str = ""
    error_reason: str = ""


def all_error(keys: Sequence[str], kind: str, reason: str) -> list[Parsed]:
    return [Parsed(criterion=k, outcome=ERROR, error_kind=kind, error_reason=reason) for k in keys]


def clip(text: str, limit: int = REASON_QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_refusal(keys: Sequence[str], refusal: str) -> list[Parsed]:
    return all_error(keys, REFUSAL, f"the judge refused: {clip(refusal) or '(no reason given)'}")


def parse_answer(raw: str | None, keys: Sequence[str]) -> list[Parsed]:
    """One Parsed per key, in the order of `keys`."""
    text = (raw or "").strip()
    if not text:
        return all_error(keys, PARSE, "the judge returned an empty answer")
    fenced = _FENCE.match(text)
    if fenced:  # a lone ```json block around otherwise valid JSON is a formatting habit, not a different answer
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return all_error(
            keys, PARSE, f"the judge's answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        )
    if not isinstance(data, dict) or not isinstance(data.get("criteria"), list):
        return all_error(keys, PARSE, 'the judge\'s answer is JSON but has no "criteria" list')
    wanted = set(keys)
    entries: dict[str, list[dict]] = {}
    for entry in data["criteria"]:
        if isinstance(entry, dict) and isinstance(entry.get("criterion"), str) and entry["criterion"] in wanted:
            entries.setdefault(entry["criterion"], []).append(entry)
    return [_one(key, entries.get(key, [])) for key in keys]


def _one(key: str, entries: list[dict]) -> Parsed:
    if not entries:
        return Parsed(key, ERROR, error_kind=PARSE, error_reason="the judge skipped this criterion")
    verdicts = {_normalize(e.get("verdict")) for e in entries}
    if len(verdicts) > 1:
        return Parsed(
            key,
            ERROR,
            error_kind=PARSE,
            error_reason=f"the judge gave {len(entries)} conflicting verdicts for this criterion",
        )
    entry = entries[0]
    evidence = entry.get("evidence")
    evidence = evidence if isinstance(evidence, str) else ""
    verdict = _normalize(entry.get("verdict"))
    if verdict not in JUDGE_VERDICTS:
        shown = clip(json.dumps(entry.get("verdict"), ensure_ascii=False), 60)
        return Parsed(
            key,
            ERROR,
            evidence=evidence,
            error_kind=PARSE,
            error_reason=f"verdict {shown} is not one of {', '.join(JUDGE_VERDICTS)}",
        )
    return Parsed(key, verdict, evidence=evidence)


def _normalize(verdict: object) -> str | None:
    # Case and surrounding spaces carry no meaning ("pass" is PASS); anything else must match exactly.
    return verdict.strip().upper() if isinstance(verdict, str) else None
