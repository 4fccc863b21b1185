"""What makes a rubric version, and writing one: the rules every way in shares.

A rubric document is `{"name", "version", "instruction", "criteria": [{"key", "definition", "pass_example",
"fail_example", "gold_policy"}]}` (gold_policy optional: majority, any_fail or unanimous; see labeling/gold.py),
from a file (formats/rubric_import.py reads JSON or YAML into it) or from the rubric editor (rubric_edit.py).
NAME@VERSION is an immutable instrument: writing the same content again is a no-op, different content under a
version that exists is refused (an edit is a new version, so labels and verdicts keep meaning what they meant).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction

from evals.models import Criterion, GoldPolicy, Rubric, RubricVersion, Workspace, rubric_content_hash
from evals.validators import rubric_part_problem

from . import record_fields as f
from .problems import Problems, RecordError, line_of, suggest

RUBRIC_FIELDS = frozenset({"name", "version", "instruction", "criteria"})
CRITERION_FIELDS = frozenset({"key", "definition", "pass_example", "fail_example", "gold_policy"})
# A criterion key appears in URLs, CSV headers and judge prompts: keep it a slug (models.SlugField).
KEY_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
NAME_MAX, VERSION_MAX, KEY_MAX = 200, 100, 100


def _scalar_text(value: Any, field: str, max_length: int) -> str:
    if isinstance(value, float):
        # YAML reads `version: 1.10` as the number 1.1; refusing beats importing the wrong version.
        raise RecordError(field, f'is the number {value!r}; write it in quotes (e.g. "{value}") so it stays text')
    return f.ident(value, field, max_length)


def _clean_text(value: Any, field: str, required: bool) -> str:
    # Rubric prose comes from YAML block scalars and editors: surrounding whitespace is not content.
    return f.text(value, field, required=required, allow_blank=not required).strip()


def check_rubric(doc: dict, problems: Problems) -> tuple[str, str, str, list[dict]]:
    """The name, version, instruction and criteria of a rubric document; its problems added to `problems`."""
    top = line_of(doc)
    for key in doc.keys() - RUBRIC_FIELDS:
        problems.add(top, str(key), f"unknown field{suggest(str(key), RUBRIC_FIELDS)}")
    name = version = instruction = ""
    for field, max_length in (("name", NAME_MAX), ("version", VERSION_MAX)):
        try:
            value = _scalar_text(doc.get(field), field, max_length)
            problem = rubric_part_problem(value)
            if problem:
                raise RecordError(field, problem)
            name, version = (value, version) if field == "name" else (name, value)
        except RecordError as exc:
            problems.add(top, exc.field, exc.message)
    try:
        instruction = _clean_text(doc.get("instruction"), "instruction", required=False)
    except RecordError as exc:
        problems.add(top, exc.field, exc.message)
    criteria = _read_criteria(doc.get("criteria"), top, problems)
    problems.raise_if_any()
    return name, version, instruction, criteria


def _read_criteria(raw: Any, top: int | None, problems: Problems) -> list[dict]:
    if not isinstance(raw, list) or not raw:
        problems.add(line_of(raw, top), "criteria", "must be a non-empty list of criteria")
        return []
    criteria: list[dict] = []
    first_line: dict[str, int | None] = {}
    line = line_of(raw, top)
    for i, item in enumerate(raw):
        line = line_of(item, line)  # a non-object item has no line of its own: use the one before it
        where = f"criteria[{i}]"
        if not isinstance(item, dict):
            problems.add(line, where, f"must be an object with key and definition, not {f.json_type(item)}")
            continue
        try:
            for key in item.keys() - CRITERION_FIELDS:
                raise RecordError(f"{where}.{key}", f"unknown field{suggest(str(key), CRITERION_FIELDS)}")
            key = f.ident(item.get("key"), f"{where}.key", KEY_MAX)
            if not KEY_RE.match(key):
                raise RecordError(f"{where}.key", f'"{key}" is not a slug: use letters, digits, "-" and "_" only')
            if key in first_line:
                raise RecordError(
                    f"{where}.key", f'"{key}" is already the key of a criterion on line {first_line[key]}'
                )
            first_line[key] = line
            criteria.append(
                {
                    "key": key,
                    "definition": _clean_text(item.get("definition"), f"{where}.definition", required=True),
                    "pass_example": _clean_text(item.get("pass_example"), f"{where}.pass_example", required=False),
                    "fail_example": _clean_text(item.get("fail_example"), f"{where}.fail_example", required=False),
                    "gold_policy": _gold_policy(item.get("gold_policy"), f"{where}.gold_policy"),
                }
            )
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)
    return criteria


def _gold_policy(value: Any, field: str) -> str:
    if value is None:
        return GoldPolicy.MAJORITY.value
    if value in GoldPolicy.values:
        return value
    choices = ", ".join(GoldPolicy.values)
    raise RecordError(
        field, f"{value!r} is not a gold policy{suggest(str(value), GoldPolicy.values)}; use one of {choices}"
    )


def _next_version(version: str) -> str:
    return str(int(version) + 1) if version.isdigit() else f"{version}.1"


def save_rubric_version(
    *,
    workspace: Workspace | int,
    name: str,
    version: str,
    instruction: str,
    criteria: list[dict],
    problems: Problems,
) -> bool:
    """Write NAME@VERSION as a draft in `workspace`; False when it exists there with the same content (nothing
    written). A rubric of the same name in another workspace is another rubric.

    Raises ImportFailed (through `problems`) when the version exists with other content, or when someone
    else created it meanwhile.
    """
    content_hash = rubric_content_hash(instruction, criteria)
    ref = f"{name}@{version}"
    try:
        with transaction.atomic():
            workspace_id = workspace if isinstance(workspace, int) else workspace.pk
            rubric, _ = Rubric.objects.get_or_create(workspace_id=workspace_id, name=name)
            existing = RubricVersion.objects.select_for_update().filter(rubric=rubric, version=version).first()
            if existing is not None:
                if existing.content_hash != content_hash:
                    raise problems.fatal(
                        None,
                        "version",
                        f"{ref} already exists with different content; a rubric edit is a new version: "
                        f'change "version" (e.g. to "{_next_version(version)}") and import again',
                    )
                return False
            rv = RubricVersion.objects.create(
                rubric=rubric, version=version, instruction=instruction, content_hash=content_hash
            )
            Criterion.objects.bulk_create([Criterion(rubric_version=rv, order=i, **c) for i, c in enumerate(criteria)])
    except IntegrityError as exc:
        raise problems.fatal(
            None, None, f"{ref} was created by someone else during the import; try again ({exc})"
        ) from None
    return True
