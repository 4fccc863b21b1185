"""Judge-only guidance: a new version of a judge config with notes and few-shot examples per criterion.

The people's rubric stays as it is (they label against it); what changes is only what the judge is told.
`derive_config` is the one way to write guidance, for the command, the API and the workbench page alike:
it checks everything first and writes in one transaction, so a refused request leaves nothing behind.

The guidance document (a JSON or YAML file, an API body, the page's form):

    {"rubric": "support@2",                       # the rubric version whose criteria it speaks of
     "criteria": {"cites_source": {
         "instructions": "A link to the docs counts as a source.",
         "examples": [{"output_id": 41, "input": "...", "response": "...", "outcome": "FAIL",
                       "quote": "..."}]}}}

An example is an excerpt of one output of the calibration eval set (its input and response, each a verbatim
piece of the transcript), the outcome the people's gold gives it, and a quote, verbatim in the excerpt, that
decides it. It must come from the development split of that eval set (judging/gold_splits.py), which is fixed
here when the first example arrives: the held-out split is what measures the new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from evals.access import has_role
from evals.models import Output, Role, RubricVersion, User
from evals.transcript import Transcript, normalize_ws
from evals.validators import UnknownName
from evals.workspaces import in_workspace
from labeling.gold_loaders import load_item_states

from .gold_splits import SplitRefused, part_of, start_split
from .models import GoldSplit, JudgeConfig

# Bounds: guidance is a few notes and a handful of examples per criterion, not a second transcript store.
MAX_INSTRUCTIONS_CHARS = 4_000
MAX_EXAMPLES_PER_CRITERION = 8
MAX_EXCERPT_CHARS = 4_000
MAX_QUOTE_CHARS = 500
OUTCOMES = ("PASS", "FAIL")
DOCUMENT_KEYS = {"rubric", "criteria"}
CRITERION_KEYS = {"instructions", "examples"}
EXAMPLE_KEYS = {"output_id", "input", "response", "outcome", "quote", "split"}


class GuidanceRefused(Exception):
    """The guidance cannot be written as given; the message says where and why. Nothing was written."""


@dataclass(frozen=True)
class Example:
    output_id: int
    input: str
    response: str
    outcome: str
    quote: str


@dataclass(frozen=True)
class CriterionGuidance:
    instructions: str
    examples: tuple[Example, ...]


@dataclass(frozen=True)
class GuidanceDocument:
    rubric: str  # NAME@VERSION, or "" (the base's rubric version)
    criteria: dict[str, CriterionGuidance]


# -- the document's shape ------------------------------------------------------------------------------


def _text(value: Any, where: str, *, limit: int) -> str:
    if not isinstance(value, str):
        raise GuidanceRefused(f"{where}: must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise GuidanceRefused(f"{where}: {len(value):,} characters, more than the {limit:,} allowed")
    return value


def _unknown(data: Mapping, known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise GuidanceRefused(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def _example(data: Any, where: str) -> Example:
    if not isinstance(data, Mapping):
        raise GuidanceRefused(f"{where}: must be an object with output_id, input, response, outcome and quote")
    _unknown(data, EXAMPLE_KEYS, where)
    missing = [k for k in ("output_id", "response", "outcome", "quote") if k not in data]
    if missing:
        raise GuidanceRefused(f"{where}: missing {', '.join(missing)}")
    output_id = data["output_id"]
    if isinstance(output_id, bool) or not isinstance(output_id, int) or output_id <= 0:
        raise GuidanceRefused(f"{where}.output_id: must be the id of an output (a positive whole number)")
    outcome = _text(data["outcome"], f"{where}.outcome", limit=20).strip().upper()
    if outcome not in OUTCOMES:
        raise GuidanceRefused(f"{where}.outcome: {data['outcome']!r} is not PASS or FAIL")
    example = Example(
        output_id=output_id,
        input=_text(data.get("input", ""), f"{where}.input", limit=MAX_EXCERPT_CHARS),
        response=_text(data["response"], f"{where}.response", limit=MAX_EXCERPT_CHARS),
        outcome=outcome,
        quote=_text(data["quote"], f"{where}.quote", limit=MAX_QUOTE_CHARS).strip(),
    )
    if not normalize_ws(example.response):
        raise GuidanceRefused(f"{where}.response: empty; an example shows the excerpt of the response it grades")
    if not normalize_ws(example.quote):
        raise GuidanceRefused(f"{where}.quote: empty; give the words that decide the outcome, copied verbatim")
    quote = normalize_ws(example.quote)
    if quote not in normalize_ws(example.input) and quote not in normalize_ws(example.response):
        raise GuidanceRefused(
            f"{where}.quote: {example.quote[:80]!r} is not in the example's input or response excerpt; "
            "the quote must be copied verbatim from the excerpt"
        )
    return example


def parse_document(data: Any) -> GuidanceDocument:
    """The guidance document, its shape and bounds checked; GuidanceRefused naming the path otherwise."""
    if not isinstance(data, Mapping):
        raise GuidanceRefused('the guidance must be an object: {"rubric": "NAME@VERSION", "criteria": {...}}')
    _unknown(data, DOCUMENT_KEYS, "guidance")
    rubric = _text(data.get("rubric", ""), "rubric", limit=310).strip()
    criteria_data = data.get("criteria", {})
    if not isinstance(criteria_data, Mapping):
        raise GuidanceRefused("criteria: must be an object mapping criterion keys to their guidance")
    criteria: dict[str, CriterionGuidance] = {}
    for key, value in criteria_data.items():
        where = f"criteria.{key}"
        if not isinstance(value, Mapping):
            raise GuidanceRefused(f"{where}: must be an object with instructions and examples")
        _unknown(value, CRITERION_KEYS, where)
        examples_data = value.get("examples", [])
        if not isinstance(examples_data, list):
            raise GuidanceRefused(f"{where}.examples: must be a list")
        if len(examples_data) > MAX_EXAMPLES_PER_CRITERION:
            raise GuidanceRefused(
                f"{where}.examples: {len(examples_data)} examples, more than the {MAX_EXAMPLES_PER_CRITERION} allowed"
            )
        guidance = CriterionGuidance(
            instructions=_text(value.get("instructions", ""), f"{where}.instructions", limit=MAX_INSTRUCTIONS_CHARS),
            examples=tuple(_example(e, f"{where}.examples[{n}]") for n, e in enumerate(examples_data)),
        )
        if guidance.instructions.strip() or guidance.examples:
            criteria[str(key)] = guidance
    if not criteria:
        raise GuidanceRefused(
            "the guidance is empty: give at least one criterion instructions or an example "
            "(a judge without guidance is the family's first version)"
        )
    return GuidanceDocument(rubric=rubric, criteria=criteria)


# -- checks against the data ----------------------------------------------------------------------------


def _rubric_version(document: GuidanceDocument, base: JudgeConfig) -> RubricVersion:
    if document.rubric:
        try:
            return RubricVersion.objects.by_ref(document.rubric, base.workspace_id)
        except UnknownName as exc:
            raise GuidanceRefused(f"rubric: {exc}") from None
    if base.guidance_rubric_version is not None:
        return base.guidance_rubric_version
    raise GuidanceRefused('rubric: say which rubric version the guidance speaks of ("rubric": "NAME@VERSION")')


def _check_example(
    example: Example, key: str, where: str, rubric_version: RubricVersion, splits: dict[int, GoldSplit], by: User
) -> dict:
    # Outputs of the rubric version's workspace only: another workspace's id is refused as a missing one is.
    outputs = in_workspace(Output, rubric_version.rubric.workspace_id).select_related("case__eval_set")
    output = outputs.filter(pk=example.output_id).first()
    if output is None:
        raise GuidanceRefused(f"{where}.output_id: there is no output {example.output_id}")
    eval_set = output.case.eval_set
    transcript = Transcript.of(output)
    for field in ("input", "response"):
        excerpt = getattr(example, field)
        if normalize_ws(excerpt) and not transcript.contains(excerpt):
            raise GuidanceRefused(
                f"{where}.{field}: not a verbatim excerpt of output {output.pk} (case {output.case.case_id}); "
                "cut the excerpt from the transcript, whitespace aside, without rewording it"
            )
    states = load_item_states(eval_set, rubric_version)
    row = states[(states["output"] == output.pk) & (states["criterion"] == _criterion_id(rubric_version, key))]
    gold = row["gold"].iloc[0] if len(row) and isinstance(row["gold"].iloc[0], str) else None
    if gold is None:
        raise GuidanceRefused(
            f"{where}: output {output.pk} (case {output.case.case_id}) has no gold for {key} under "
            f"{rubric_version.ref}; an example's outcome is the people's gold"
        )
    if gold != example.outcome:
        raise GuidanceRefused(
            f"{where}.outcome: {example.outcome}, but the gold of output {output.pk} for {key} is {gold}; "
            "an example teaches the people's judgement, not another one"
        )
    split = splits.get(eval_set.pk)
    if split is None:
        try:
            split = start_split(eval_set=eval_set, rubric_version=rubric_version, by=by)
        except SplitRefused as exc:
            raise GuidanceRefused(f"{where}: {exc}") from None
        splits[eval_set.pk] = split
    part = part_of(split, output.pk)
    if part != GoldSplit.DEVELOPMENT:
        raise GuidanceRefused(
            f"{where}: output {output.pk} (case {output.case.case_id}) is in the held-out split of {eval_set.name} "
            f"under {rubric_version.ref}; examples may come only from the development split, since the held-out "
            "split is what measures the new version"
        )
    return {
        "output_id": output.pk,
        "eval_set": eval_set.name,
        "split": part,
        "input": example.input,
        "response": example.response,
        "outcome": example.outcome,
        "quote": example.quote,
    }


def _criterion_id(rubric_version: RubricVersion, key: str) -> int:
    return rubric_version.criteria.get(key=key).pk


def next_name(base: JudgeConfig) -> tuple[str, str, int]:
    """(name, family, version) of the next version of base's family: FAMILY-vN, N one more than the highest."""
    family = base.family_name
    versions = JudgeConfig.objects.filter(workspace_id=base.workspace_id, family=family).values_list(
        "version", flat=True
    )
    highest = max(versions, default=base.version)
    version = max(highest, base.version) + 1
    return f"{family}-v{version}", family, version


def derive_config(
    *, base: JudgeConfig, guidance: Any, by: User, rubric_version: RubricVersion | None = None
) -> JudgeConfig:
    """A new version of `base` carrying `guidance` (the document above, or its parsed form); base is unchanged.

    Refused (GuidanceRefused, nothing written) unless `by` is a lead, the base can take guidance, every
    criterion is one of the rubric version's and graded by the model (an instrument judge takes examples only,
    as precedents: backends/instruments.with_precedents), every example is a verbatim excerpt of
    its output with the gold's outcome and a quote from the excerpt, from the development split, and the
    guidance differs from the base's. `rubric_version` overrides the document's "rubric".
    """
    if not has_role(by, base.workspace_id, Role.LEAD):
        raise GuidanceRefused(f"{by.username} is not an active lead; only leads change a judge's guidance")
    if base.backend == JudgeConfig.Backend.IMPORTED:
        raise GuidanceRefused(
            f"judge {base.name} has no prompt ({base.get_backend_display()}); guidance is for a judge that runs here"
        )
    document = guidance if isinstance(guidance, GuidanceDocument) else parse_document(guidance)
    with_notes = [k for k, g in document.criteria.items() if g.instructions.strip()]
    if with_notes and not base.reads_instructions:
        # Instruments read no text: their examples are precedents (instruments.with_precedents), notes would be
        # stored and silently ignored.
        raise GuidanceRefused(
            f"criteria: {', '.join(with_notes)} given instructions, but {base.name} is deterministic (instruments) "
            "and reads no instructions; give it examples only, which it applies as precedents"
        )
    rubric_version = rubric_version or _rubric_version(document, base)
    if rubric_version.rubric.workspace_id != base.workspace_id:  # as unknown as a version that does not exist
        raise GuidanceRefused(f"rubric: unknown rubric version {rubric_version.ref!r}")
    known = list(rubric_version.criteria.order_by("order").values_list("key", flat=True))
    unknown = [k for k in document.criteria if k not in known]
    if unknown:
        raise GuidanceRefused(
            f"criteria: {', '.join(unknown)} not in {rubric_version.ref} (its criteria: {', '.join(known)})"
        )
    by_instrument = [k for k in document.criteria if k in base.instruments]
    if by_instrument and base.reads_instructions:
        raise GuidanceRefused(
            f"criteria: {', '.join(by_instrument)} graded by an instrument in {base.name}, which reads no prompt"
        )
    name, family, version = next_name(base)
    if JudgeConfig.objects.filter(workspace_id=base.workspace_id, name=name).exists():
        raise GuidanceRefused(f"a judge config named {name} exists already (not a version of {base.name})")
    with transaction.atomic():
        # The split is fixed here, with the first example: inside the transaction, so a refusal undoes it too.
        splits: dict[int, GoldSplit] = {}
        stored = {
            key: {
                "instructions": g.instructions.strip(),
                "examples": [
                    _check_example(e, key, f"criteria.{key}.examples[{n}]", rubric_version, splits, by)
                    for n, e in enumerate(g.examples)
                ],
            }
            for key, g in document.criteria.items()
        }
        if stored == base.guidance and rubric_version.pk == base.guidance_rubric_version_id:
            raise GuidanceRefused(f"the guidance is the same as {base.name}'s; nothing to make a new version of")
        config = JudgeConfig(
            **{f: getattr(base, f) for f in JudgeConfig.SETTINGS},  # its settings; not name, guidance or lineage
            name=name,
            family=family,
            version=version,
            workspace_id=base.workspace_id,  # a version of a family lives where its base does
            derived_from=base,
            guidance=stored,
            guidance_rubric_version=rubric_version,
            created_by=by,
        )
        try:
            with transaction.atomic():
                config.save()
        except IntegrityError:
            # Another lead derived a version of this family a moment ago and took the name.
            raise GuidanceRefused(f"{name} was made meanwhile by someone else; derive again") from None
        if not base.family:
            # The first version names its family too, so the family is one query (values are not hashed).
            JudgeConfig.objects.filter(pk=base.pk).update(family=family)
    return config


def as_document(config: JudgeConfig) -> dict:
    """A config's guidance as a document (what `derive` reads back), with each example's split and eval set."""
    return {
        "judge": config.name,
        "family": config.family_name,
        "version": config.version,
        "derived_from": config.derived_from.name if config.derived_from else None,
        "content_hash": config.content_hash,
        "rubric": config.guidance_rubric_version.ref if config.guidance_rubric_version else None,
        "criteria": config.guidance,
    }
