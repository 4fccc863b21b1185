"""The guidance editor's domain: a judge version's guidance as lines to diff, and the document a save sends.

The page edits one criterion at a time; the base's guidance for its other criteria is carried over as it
is, so saving derives a version that differs only where the lead edited (judging/guidance.derive_config
checks and writes it; nothing here writes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evals.models import RubricVersion
from evals.rubric_edit import line_diff
from judging.models import JudgeConfig

# What a guidance document's example holds (judging/guidance.py); the stored copy adds the eval set and the
# split it was checked against, which a new document must not carry (derive_config checks them again).
EXAMPLE_FIELDS = ("output_id", "input", "response", "outcome", "quote")


def guidance_lines(guidance: Mapping[str, Mapping]) -> list[str]:
    """Guidance as lines people can compare: per criterion (in key order) its instructions and examples."""
    lines: list[str] = []
    for key in sorted(guidance):
        g = guidance[key]
        lines.append(f"Criterion {key}:")
        instructions = str(g.get("instructions", "")).strip()
        lines += [f"  instructions: {line}" for line in instructions.splitlines()] or ["  instructions: (none)"]
        for n, e in enumerate(g.get("examples", []), start=1):
            lines.append(f"  example {n}: output {e.get('output_id')}, {e.get('outcome')}, quote {e.get('quote')!r}")
            lines += [f"    input: {line}" for line in str(e.get("input", "")).splitlines()]
            lines += [f"    response: {line}" for line in str(e.get("response", "")).splitlines()]
        lines.append("")
    return lines


def guidance_diff(old: JudgeConfig | None, new_guidance: Mapping[str, Mapping], new_name: str) -> list[tuple[str, str]]:
    """The rubric editor's diff (evals/rubric_edit.line_diff) of the old version's guidance and the new one."""
    old_lines = guidance_lines(old.guidance) if old else []
    return line_diff(old_lines, guidance_lines(new_guidance), old.name if old else "(nothing)", new_name)


def document_examples(stored: Iterable[Mapping]) -> list[dict]:
    return [{f: e[f] for f in EXAMPLE_FIELDS if f in e} for e in stored]


def edited_guidance(base: JudgeConfig, key: str, instructions: str, examples: list[dict]) -> dict[str, dict]:
    """The base's guidance with criterion `key` replaced (an emptied criterion is dropped)."""
    guidance = {
        k: {"instructions": g.get("instructions", ""), "examples": document_examples(g.get("examples", []))}
        for k, g in base.guidance.items()
        if k != key
    }
    if instructions.strip() or examples:
        guidance[key] = {"instructions": instructions.strip(), "examples": document_examples(examples)}
    return guidance


def document(rubric_version: RubricVersion, guidance: dict[str, dict]) -> dict:
    """The guidance document derive_config reads."""
    return {"rubric": rubric_version.ref, "criteria": guidance}
