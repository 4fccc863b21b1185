"""A new rubric version made in the browser from an existing one, and its diff against the one before.

Saving goes through rubric_versions.py, as the importer of rubric files does: the edited version is the
rubric document a file would hold, so validation, the content hash and the rule that a version is immutable
once made are one copy for both. A new version is a draft.
"""

from __future__ import annotations

import difflib

from evals.models import RubricVersion

from .problems import Problems
from .rubric_versions import check_rubric, save_rubric_version


def as_text(rubric_version: RubricVersion | None) -> list[str]:
    """The version as lines people can compare: the instruction, then each criterion in order."""
    if rubric_version is None:
        return []
    lines = ["Instruction:", *(rubric_version.instruction or "(none)").splitlines(), ""]
    for c in rubric_version.criteria.order_by("order", "id"):
        lines += [f"Criterion {c.key}:", f"  definition: {c.definition}"]
        lines += [f"  PASS example: {c.pass_example}"] if c.pass_example else []
        lines += [f"  FAIL example: {c.fail_example}"] if c.fail_example else []
        lines += [f"  gold policy: {c.gold_policy}"] if c.gold_policy != "majority" else []
        lines.append("")
    return lines


def previous_version(rubric_version: RubricVersion) -> RubricVersion | None:
    return (
        RubricVersion.objects.filter(rubric_id=rubric_version.rubric_id, created_at__lt=rubric_version.created_at)
        .order_by("-created_at")
        .first()
    )


def diff_lines(old: RubricVersion | None, new: RubricVersion) -> list[tuple[str, str]]:
    """(kind, text) per line of a unified diff: kind is "add", "remove", "hunk" or "same"."""
    return line_diff(as_text(old), as_text(new), old.ref if old else "(nothing)", new.ref)


def line_diff(old: list[str], new: list[str], old_name: str, new_name: str) -> list[tuple[str, str]]:
    """(kind, text) per line of a unified diff of two texts given as lines (the rubric editor's, and the judge
    guidance editor's): kind is "add", "remove", "hunk" or "same"."""
    out = []
    for line in difflib.unified_diff(old, new, old_name, new_name, lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "remove", "@": "hunk"}.get(line[:1], "same")
        out.append((kind, line))
    return out


def save_new_version(*, base: RubricVersion, version: str, instruction: str, criteria: list[dict]) -> RubricVersion:
    """Write a draft `base.rubric`@`version` with these criteria (in order). Raises problems.ImportFailed."""
    document = {"name": base.rubric.name, "version": version, "instruction": instruction, "criteria": criteria}
    problems = Problems("the rubric editor")
    name, version, instruction, criteria = check_rubric(document, problems)
    save_rubric_version(
        workspace=base.rubric.workspace_id,
        name=name,
        version=version,
        instruction=instruction,
        criteria=criteria,
        problems=problems,
    )
    return RubricVersion.objects.select_related("rubric").get(rubric=base.rubric, version=version)


def suggested_version(base: RubricVersion) -> str:
    """The next free name after `base`'s (2 after 1, 1.1.1 after 1.1 if 1.2 exists...)."""
    taken = set(RubricVersion.objects.filter(rubric_id=base.rubric_id).values_list("version", flat=True))
    candidate = base.version
    while candidate in taken:
        candidate = str(int(candidate) + 1) if candidate.isdigit() else f"{candidate}.1"
    return candidate
