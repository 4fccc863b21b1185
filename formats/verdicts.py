"""Verdicts in and out of Icewater: JSONL and CSV both ways, and Google ADK eval results in.

Export writes the current verdicts (judging/current_verdicts.py) of an eval set x rubric version x
judge config, one record per output, criterion and sample:

    {"case_id", "agent_version", "criterion", "sample", "outcome", "evidence", "raw",
     "error_reason", "latency_ms", "tokens_in", "tokens_out", "cache_hit"}

Import reads that format back (only case_id, agent_version, criterion, outcome are required;
evidence and raw are expected, the rest optional), as JSONL or as the CSV the export writes, an
Inspect AI log (formats/inspect_scores.py: each scorer is a criterion, C is PASS, I is FAIL), or
an ADK `.evalset_result.json`, whose rubric-based metrics' per-rubric scores become verdicts:
rubric_id is the criterion key, score 1 is PASS, 0 is FAIL, and a missing score (or a criterion
with no score) is ERROR. An import is atomic with line-numbered errors, creates the judge config
(backend "imported") when it does not exist, and records one finished run, so imported verdicts
read exactly like judged ones. It writes only into an imported judge config: a model or instrument
config's verdicts come only from its own judge runs (`imported_only`). The run keeps how it came in
(`imported_via`: the command or a push) and the file's name. Importing the same verdicts again
changes nothing; a verdict already there with different content is an error (never an overwrite)
unless the user names a new run for the file (`new_run`, `import_verdicts --new-run LABEL`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from django.db import transaction
from django.utils import timezone

from evals import record_fields as f
from evals.models import EvalSet, Output, RubricVersion, Workspace
from evals.problems import Problems, RecordError
from evals.transcript import Transcript
from evals.validators import UnknownName
from formats import export as labeling_export
from formats.export import ExportError, export_scope, write_csv, write_jsonl
from formats.import_summary import ImportReport, plural
from formats.inspect_log import is_inspect_log
from formats.readers import Source
from formats.record_model import AGENT_VERSION_MAX
from judging.current_verdicts import current_verdicts
from judging.models import ErrorKind, JudgeConfig, JudgeRun, Verdict, VerdictOutcome

from . import registry
from .inspect_scores import ScoreMapping
from .verdict_records import EXPORT_COLUMNS, OUTCOMES, VerdictRecord, is_adk_result

JUDGE_NAME_MAX = 200
RUN_LABEL_MAX = 200  # JudgeRun.label
IMPORTED_ERROR = "imported as ERROR (no reason given)"


# -- export ---------------------------------------------------------------------------------------------


def verdict_records(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> Iterator[dict]:
    rows = (
        current_verdicts(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
        .order_by("output__case__case_id", "output__agent_version", "criterion__order", "sample")
        .values_list(
            "output__case__case_id",
            "output__agent_version",
            "criterion__key",
            "sample",
            "outcome",
            "evidence",
            "raw_output",
            "error_reason",
            "latency_ms",
            "tokens_in",
            "tokens_out",
            "cache_hit",
        )
    )
    for row in rows.iterator(chunk_size=2000):
        yield dict(zip(EXPORT_COLUMNS, row, strict=True))


# Every export_data kind: labeling's, plus the verdicts judging owns.
EXPORT_WHAT = (*labeling_export.WHAT, "verdicts")


def export_data(
    *,
    workspace: Workspace,
    eval_set_name: str,
    what: str,
    stream: IO[str],
    fmt: str = "jsonl",
    rubric_ref: str | None = None,
    judge_name: str | None = None,
) -> int:
    """What `manage.py export_data` writes, of `workspace`'s names: verdicts here, cases, labels and gold through
    formats."""
    if what != "verdicts":
        if what not in EXPORT_WHAT:
            raise ExportError(f'--what must be one of {", ".join(EXPORT_WHAT)}, not "{what}"')
        return labeling_export.export_data(
            workspace=workspace, eval_set_name=eval_set_name, what=what, stream=stream, fmt=fmt, rubric_ref=rubric_ref
        )
    eval_set, rv = export_scope(
        workspace=workspace, eval_set_name=eval_set_name, what=what, fmt=fmt, rubric_ref=rubric_ref, known=EXPORT_WHAT
    )
    if not judge_name:
        raise ExportError("--what verdicts needs --judge NAME (the judge config whose verdicts to export)")
    mine = JudgeConfig.objects.filter(workspace=workspace)
    judge = mine.filter(name=judge_name).first()
    if judge is None:
        known = ", ".join(mine.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise ExportError(f'there is no judge config "{judge_name}" (known: {known})')
    assert rv is not None  # export_scope finds one for verdicts, or refuses
    return export_verdicts(eval_set=eval_set, rubric_version=rv, judge_config=judge, fmt=fmt, stream=stream)


def export_verdicts(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, fmt: str, stream: IO[str]
) -> int:
    """Write the current verdicts as JSONL or CSV; return how many records were written."""
    records = verdict_records(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if fmt == "jsonl":
        return write_jsonl(records, stream)
    if fmt == "csv":
        as_text = ({**r, "cache_hit": "true" if r["cache_hit"] else "false"} for r in records)
        return write_csv(as_text, EXPORT_COLUMNS, stream)
    raise ValueError(f"verdicts are exported as jsonl or csv, not {fmt!r}")


# -- import ---------------------------------------------------------------------------------------------


def import_verdicts(
    *,
    source: Source,
    workspace: Workspace,
    eval_set_name: str,
    rubric_ref: str,
    judge_name: str,
    default_agent_version: str = "",
    new_run: str = "",
    score_mapping: ScoreMapping | None = None,
    via: str = JudgeRun.ImportedVia.COMMAND,
) -> ImportReport:
    """Import verdicts as one finished run of `workspace`'s names; all or nothing. Only into an imported judge
    config (or a new name, which creates one in `workspace`): a config that runs is refused before the file is
    read. A name of another workspace is as unknown as one that exists nowhere.

    A verdict already there (same output, criterion, sample) with the same content is skipped; with
    different content it is an error, unless `new_run` names a run of its own for the whole file: then the
    file becomes that run, which supersedes the earlier verdicts item by item as a judged run would.
    `score_mapping`: for an Inspect AI log, which scorer is which criterion and what its values mean.
    """
    problems = Problems(source.name)
    eval_set = EvalSet.objects.filter(workspace=workspace, name=eval_set_name).first()
    if eval_set is None:
        raise problems.fatal(None, "eval set", f'there is no eval set "{eval_set_name}"; import its cases first')
    try:
        rv = RubricVersion.objects.by_ref(rubric_ref, workspace)
        judge_name = f.ident(judge_name, "judge", JUDGE_NAME_MAX)
        if default_agent_version:
            default_agent_version = f.ident(default_agent_version, "agent_version", AGENT_VERSION_MAX)
        if new_run:
            new_run = f.ident(new_run, "new run", RUN_LABEL_MAX)
    except UnknownName as exc:
        raise problems.fatal(None, "rubric", str(exc)) from None
    except RecordError as exc:
        raise problems.fatal(None, exc.field, exc.message) from None
    imported_only(JudgeConfig.objects.filter(workspace=workspace, name=judge_name).first(), problems)
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    options = registry.ReadOptions(
        default_agent_version=default_agent_version, criteria=tuple(keys), score_mapping=score_mapping
    )
    records = list(registry.find(registry.VERDICTS, verdict_format(source)).read(source, problems, options))
    if not records and not problems:
        raise problems.fatal(None, None, "the file has no verdicts")
    resolved = _resolve(records, eval_set, default_agent_version, problems)
    problems.raise_if_any()
    return _write(source, eval_set, rv, judge_name, resolved, new_run, problems, via)


def verdict_format(source: Source) -> str:
    """The name of a verdicts file's format in the registry, from its name first, then its content."""
    if is_inspect_log(source):
        return "inspect"
    if source.suffix == ".csv":
        return "csv"
    return "adk_result" if is_adk_result(source) else "jsonl"


def imported_only(judge: JudgeConfig | None, problems: Problems) -> None:
    """ImportFailed unless `judge` is missing (the import creates it) or imported: the provenance rule."""
    if judge is not None and not judge.takes_imports:
        raise problems.fatal(
            None,
            "judge",
            f'judge config "{judge.name}" is a {judge.get_backend_display()} config: its verdicts come only from its '
            "own judge runs, never from an import or a push. Import these verdicts under another judge config name "
            '(a new name creates one with backend "imported") and calibrate that one',
        )


def _resolve(
    records: list[VerdictRecord], eval_set: EvalSet, default_agent_version: str, problems: Problems
) -> list[tuple[int, VerdictRecord]]:
    """(output id, record) per record; unknown outputs, ambiguous agent versions and repeats are problems."""
    case_ids = {r.case_id for r in records}
    outputs: dict[str, dict[str, int]] = {}
    for pk, case_id, version in Output.objects.filter(case__eval_set=eval_set, case__case_id__in=case_ids).values_list(
        "pk", "case__case_id", "agent_version"
    ):
        outputs.setdefault(case_id, {})[version] = pk
    seen: dict[tuple[int, str, int], int | None] = {}
    resolved = []
    for r in records:
        versions = outputs.get(r.case_id)
        if not versions:
            problems.add(r.line, "case_id", f'no case "{r.case_id}" with an output in eval set "{eval_set.name}"')
            continue
        version = r.agent_version or default_agent_version
        if not version:
            if len(versions) > 1:
                problems.add(
                    r.line,
                    "agent_version",
                    f'is missing, and case "{r.case_id}" has outputs of {", ".join(sorted(versions))}: '
                    "give agent_version on the line or --agent-version",
                )
                continue
            version = next(iter(versions))
        if version not in versions:
            problems.add(
                r.line,
                "agent_version",
                f'case "{r.case_id}" has no output of agent version "{version}" (it has {", ".join(sorted(versions))})',
            )
            continue
        output_id = versions[version]
        r.agent_version = version
        key = (output_id, r.criterion, r.sample)
        if key in seen:
            earlier = f"line {seen[key]}" if seen[key] else "an earlier record"
            problems.add(r.line, "criterion", f"repeats the verdict of {earlier} for this output, criterion and sample")
            continue
        seen[key] = r.line
        resolved.append((output_id, r))
    return resolved


# What "the same verdict" means: every field the export writes (the names as the import reads them).
CONTENT_FIELDS = ("outcome", "evidence", "raw", "error_reason", "latency_ms", "tokens_in", "tokens_out", "cache_hit")
_STORED_FIELDS = ("outcome", "evidence", "raw_output", "error_reason", "latency_ms", "tokens_in", "tokens_out")


def _content(r: VerdictRecord) -> tuple:
    return (r.outcome, r.evidence, r.raw, _reason(r), r.latency_ms, r.tokens_in, r.tokens_out, r.cache_hit)


def _reason(r: VerdictRecord) -> str:
    if r.outcome != VerdictOutcome.ERROR:
        return ""
    return r.error_reason or IMPORTED_ERROR


def _stored(verdicts) -> dict[tuple[int, str, int], tuple[int, tuple]]:
    """(output, criterion key, sample) -> (run id, content) of the given verdicts."""
    rows = verdicts.values_list("output_id", "criterion__key", "sample", "run_id", *_STORED_FIELDS, "cache_hit")
    return {(o, c, s): (run, tuple(content)) for o, c, s, run, *content in rows.iterator(chunk_size=2000)}


def _compare(resolved, stored) -> tuple[list[tuple[int, VerdictRecord]], list[tuple[VerdictRecord, int, list[str]]]]:
    """The records not in `stored`, and (record, run, differing fields) for those there with other content."""
    new, conflicts = [], []
    for output_id, r in resolved:
        old = stored.get((output_id, r.criterion, r.sample))
        if old is None:
            new.append((output_id, r))
            continue
        differing = [n for n, a, b in zip(CONTENT_FIELDS, old[1], _content(r), strict=True) if a != b]
        if differing:
            conflicts.append((r, old[0], differing))
    return new, conflicts


def _plan(resolved, eval_set, rv, judge: JudgeConfig | None, judge_name: str, new_run: str, problems: Problems):
    """(records to write, the named run that already holds them); raises ImportFailed on a conflict."""
    if judge is None:
        return resolved, None
    if not new_run:
        stored = _stored(current_verdicts(eval_set=eval_set, rubric_version=rv, judge_config=judge))
        new, conflicts = _compare(resolved, stored)
        for r, run_id, differing in conflicts:
            problems.add(
                r.line,
                differing[0],
                f'case "{r.case_id}" ({r.agent_version}), criterion "{r.criterion}", sample {r.sample} already has '
                f'a verdict of judge "{judge_name}" (run {run_id}) with a different {", ".join(differing)}; an '
                "import never overwrites a verdict: to keep these verdicts as a run of their own that supersedes "
                "the earlier ones, import the file with --new-run LABEL (or under another --judge)",
            )
        problems.raise_if_any()
        return new, None
    run = JudgeRun.objects.filter(eval_set=eval_set, rubric_version=rv, judge_config=judge, label=new_run).first()
    if run is None:
        return resolved, None
    # The same file as the same named run again changes nothing; anything else would change that run.
    new, conflicts = _compare(resolved, _stored(run.verdicts.all()))
    if new or conflicts or run.verdicts.count() != len(resolved):
        raise problems.fatal(
            None,
            "new run",
            f'judge "{judge_name}" already has a run "{new_run}" (run {run.pk}) with other verdicts; a run does '
            "not change once imported: give this file another --new-run label",
        )
    return [], run


def _write(
    source: Source,
    eval_set: EvalSet,
    rv: RubricVersion,
    judge_name: str,
    resolved,
    new_run: str,
    problems: Problems,
    via: str,
) -> ImportReport:
    criteria = {c.key: c for c in rv.criteria.all()}
    with transaction.atomic():
        judge = (
            JudgeConfig.objects.select_for_update().filter(workspace_id=eval_set.workspace_id, name=judge_name).first()
        )
        imported_only(judge, problems)  # again under the lock: the config may have been made since the first look
        todo, same_run = _plan(resolved, eval_set, rv, judge, judge_name, new_run, problems)
        if not todo:
            where = f' as run {same_run.pk} "{new_run}"' if same_run else ""
            return ImportReport(
                file=source.name,
                summary=f"{source.name}: all {plural(len(resolved), 'verdict')} are already there{where}; "
                "nothing imported.",
                counts={"records": len(resolved), "verdicts_created": 0, "verdicts_unchanged": len(resolved)},
            )
        created_judge = judge is None
        if judge is None:
            judge = JudgeConfig.objects.create(
                workspace_id=eval_set.workspace_id, name=judge_name, backend=JudgeConfig.Backend.IMPORTED
            )
        now = timezone.now()
        run = JudgeRun.objects.create(
            eval_set=eval_set,
            rubric_version=rv,
            judge_config=judge,
            label=new_run,
            status=JudgeRun.Status.DONE,
            mode=JudgeRun.Mode.IMPORT,
            imported_via=via,
            source_name=source.name[-255:],
            started_at=now,
            finished_at=now,
            total_items=len({(o, r.sample) for o, r in todo}),
            expected_verdicts=len(todo),
        )
        transcripts = {
            pk: Transcript(input=input_, tool_calls=list(calls or []), response=response)
            for pk, input_, calls, response in Output.objects.filter(pk__in={o for o, _ in todo}).values_list(
                "pk", "case__input", "tool_calls", "response"
            )
        }
        rows = [
            _verdict(run, judge, rv, criteria[r.criterion], output_id, r, transcripts[output_id])
            for output_id, r in todo
        ]
        Verdict.objects.bulk_create(rows, batch_size=2000)
    by_outcome = {o: sum(1 for _, r in todo if r.outcome == o) for o in OUTCOMES}
    not_found = sum(1 for v in rows if v.evidence_found is False)
    unchanged = len(resolved) - len(todo)
    named = f' "{new_run}"' if new_run else ""
    summary = (
        f'{source.name} -> eval set "{eval_set.name}", {rv.ref}, judge "{judge.name}"'
        f"{' (created, backend imported)' if created_judge else ''}: {plural(len(rows), 'verdict')} imported as run "
        f"{run.pk}{named} ("
        + ", ".join(f"{o} {n}" for o, n in by_outcome.items())
        + ")"
        + (f"; {unchanged:,} already there." if unchanged else ".")
    )
    notes = []
    if not_found:
        notes.append(f"{plural(not_found, 'evidence quote')} not found verbatim in the transcript (flagged).")
    return ImportReport(
        file=source.name,
        summary=summary,
        counts={
            "records": len(resolved),
            "verdicts_created": len(rows),
            "verdicts_unchanged": unchanged,
            "run": run.pk,
        },
        notes=notes,
    )


def _verdict(run, judge, rv, criterion, output_id: int, r: VerdictRecord, transcript: Transcript) -> Verdict:
    is_error = r.outcome == VerdictOutcome.ERROR
    check = r.check_quote and not is_error and r.evidence.strip()
    return Verdict(
        run=run,
        output_id=output_id,
        rubric_version=rv,
        criterion=criterion,
        judge_config=judge,
        judge_config_hash=judge.content_hash,
        model_id=judge.model_id,
        sample=r.sample,
        outcome=r.outcome,
        evidence=r.evidence,
        evidence_found=transcript.contains(r.evidence) if check else None,
        error_kind=ErrorKind.IMPORTED if is_error else "",
        error_reason=_reason(r),
        raw_output=r.raw,
        latency_ms=r.latency_ms,
        tokens_in=r.tokens_in,
        tokens_out=r.tokens_out,
        cache_hit=r.cache_hit,
    )
