"""Builders for calibration tests: annotations, gold labels, judge configs, runs and verdicts.

Plain functions with explicit arguments, like tests/factories.py. `calibration_set` builds a
whole eval set from a compact table, so a test can state its data in one readable literal.
"""

from __future__ import annotations

from itertools import count

from django.utils import timezone

from evals.models import Criterion, Output, Role, RubricVersion, User
from judging.models import JudgeConfig, JudgeRun, Verdict
from labeling.models import Annotation, GoldLabel, Label

from .factories import make_output, make_user

_seq = count(1)


def annotator(name: str) -> User:
    return User.objects.filter(username=name).first() or make_user(name, Role.ANNOTATOR)


def annotate(
    output: Output,
    rubric_version: RubricVersion,
    user: User,
    slot: int,
    outcomes: dict[str, str],
    evidence: dict[str, str] | None = None,
    submitted: bool = True,
) -> Annotation:
    ann = Annotation.objects.create(
        output=output,
        rubric_version=rubric_version,
        annotator=user,
        slot=slot,
        status=Annotation.Status.SUBMITTED if submitted else Annotation.Status.DRAFT,
        submitted_at=timezone.now() if submitted else None,
    )
    criteria = {c.key: c for c in rubric_version.criteria.all()}
    for key, outcome in outcomes.items():
        Label.objects.create(
            annotation=ann, criterion=criteria[key], outcome=outcome, evidence=(evidence or {}).get(key, "NONE")
        )
    return ann


def adjudicate(
    output: Output,
    rubric_version: RubricVersion,
    key: str,
    outcome: str,
    by: User,
    rationale: str = "decided",
    revision: int = 1,
) -> GoldLabel:
    return GoldLabel.objects.create(
        output=output,
        rubric_version=rubric_version,
        criterion=rubric_version.criteria.get(key=key),
        outcome=outcome,
        decided_by=by,
        rationale=rationale,
        revision=revision,
    )


def make_judge(name: str | None = None, model_id: str = "judge-model-1", **fields) -> JudgeConfig:
    fields.setdefault("backend", JudgeConfig.Backend.IMPORTED)
    return JudgeConfig.objects.create(name=name or f"judge-{next(_seq)}", model_id=model_id, **fields)


def make_run(eval_set, rubric_version, judge: JudgeConfig, agent_version: str = "") -> JudgeRun:
    return JudgeRun.objects.create(
        eval_set=eval_set,
        rubric_version=rubric_version,
        judge_config=judge,
        agent_version=agent_version,
        status=JudgeRun.Status.DONE,
    )


def add_verdict(
    run: JudgeRun,
    output: Output,
    key: str,
    outcome: str,
    sample: int = 0,
    evidence: str = "NONE",
    evidence_found: bool | None = True,
    raw_output: str = "",
) -> Verdict:
    criterion = Criterion.objects.get(rubric_version=run.rubric_version, key=key)
    return Verdict.objects.create(
        run=run,
        output=output,
        rubric_version=run.rubric_version,
        criterion=criterion,
        judge_config=run.judge_config,
        judge_config_hash=run.judge_config.content_hash,
        model_id=run.judge_config.model_id,
        sample=sample,
        outcome=outcome,
        evidence=evidence,
        evidence_found=evidence_found,
        raw_output=raw_output or f'{{"criterion": "{key}", "verdict": "{outcome}"}}',
    )


def calibration_set(eval_set, rubric_version, judge, rows: list[dict], agent_version: str = "default") -> list[Output]:
    """One output per row. A row maps a criterion key to a tuple (A, B, judge) or (A, B, judge, adjudicated);
    None leaves that part out. Annotators are `amy` (A) and `bo` (B); the adjudicator is `rey`.
    """
    amy, bo = annotator("amy"), annotator("bo")
    rey = User.objects.filter(username="rey").first() or make_user("rey", Role.REVIEWER)
    run = make_run(eval_set, rubric_version, judge)
    outputs = []
    for i, row in enumerate(rows):
        output = make_output(eval_set, case_id=f"c{next(_seq)}-{i}", agent_version=agent_version)
        a = {k: v[0] for k, v in row.items() if v[0] is not None}
        b = {k: v[1] for k, v in row.items() if v[1] is not None}
        if a:
            annotate(output, rubric_version, amy, 1, a)
        if b:
            annotate(output, rubric_version, bo, 2, b)
        for key, parts in row.items():
            if parts[2] is not None:
                add_verdict(run, output, key, parts[2])
            if len(parts) > 3 and parts[3] is not None:
                adjudicate(output, rubric_version, key, parts[3], rey)
        outputs.append(output)
    return outputs


def _bulk_outputs(eval_set, count: int, agent_version: str = "default", prefix: str = "b") -> list[Output]:
    from evals.models import Case

    tag = next(_seq)
    cases = Case.objects.bulk_create(
        [Case(eval_set=eval_set, case_id=f"{prefix}{tag}-{i}", input=f"question {i}") for i in range(count)]
    )
    return Output.objects.bulk_create(
        [Output(case=c, agent_version=agent_version, response=f"answer {i}") for i, c in enumerate(cases)]
    )


def bulk_calibration(eval_set, rubric_version, judge, cells: dict[str, tuple[int, int, int, int]]) -> list[Output]:
    """Fast: for each criterion key, (true pass, false pass, false fail, true fail) items where both
    annotators agree on the gold outcome and the judge gives the verdict of the cell."""
    pairs = {
        key: [("PASS", "PASS")] * tp + [("FAIL", "PASS")] * fp + [("PASS", "FAIL")] * fn + [("FAIL", "FAIL")] * tn
        for key, (tp, fp, fn, tn) in cells.items()
    }
    outputs = _bulk_outputs(eval_set, max(len(p) for p in pairs.values()))
    amy, bo = annotator("amy"), annotator("bo")
    now = timezone.now()
    anns = Annotation.objects.bulk_create(
        [
            Annotation(
                output=o,
                rubric_version=rubric_version,
                annotator=who,
                slot=slot,
                status="submitted",
                source="import",
                submitted_at=now,
            )
            for o in outputs
            for slot, who in ((1, amy), (2, bo))
        ]
    )
    by_output = {}
    for ann in anns:
        by_output.setdefault(ann.output_id, []).append(ann)
    criteria = {c.key: c for c in rubric_version.criteria.all()}
    run = make_run(eval_set, rubric_version, judge)
    labels, verdicts = [], []
    for key, items in pairs.items():
        for output, (gold, verdict) in zip(outputs, items, strict=False):
            labels += [
                Label(annotation=a, criterion=criteria[key], outcome=gold, evidence="NONE")
                for a in by_output[output.id]
            ]
            verdicts.append(_verdict(run, output, criteria[key], verdict))
    Label.objects.bulk_create(labels)
    Verdict.objects.bulk_create(verdicts)
    analyze()
    return outputs


def _verdict(run: JudgeRun, output: Output, criterion: Criterion, outcome: str) -> Verdict:
    return Verdict(
        run=run,
        output=output,
        rubric_version=run.rubric_version,
        criterion=criterion,
        judge_config=run.judge_config,
        judge_config_hash=run.judge_config.content_hash,
        model_id=run.judge_config.model_id,
        outcome=outcome,
        evidence="NONE",
        evidence_found=True,
    )


def bulk_verdicts(
    eval_set, rubric_version, judge, outcomes: dict[str, dict[str, int]], agent_version: str = "default"
) -> list[Output]:
    """Release-candidate data, no humans: per criterion key, how many verdicts of each outcome."""
    sizes = {key: sum(counts.values()) for key, counts in outcomes.items()}
    outputs = _bulk_outputs(eval_set, max(sizes.values()), agent_version=agent_version, prefix="rc")
    criteria = {c.key: c for c in rubric_version.criteria.all()}
    run = make_run(eval_set, rubric_version, judge, agent_version=agent_version)
    verdicts = []
    for key, counts in outcomes.items():
        sequence = [outcome for outcome, k in counts.items() for _ in range(k)]
        verdicts += [_verdict(run, o, criteria[key], v) for o, v in zip(outputs, sequence, strict=False)]
    Verdict.objects.bulk_create(verdicts)
    analyze()
    return outputs


def mark_as_gating(
    rubric_version,
    judge,
    keys: list[str],
    eval_set,
    by: User | None = None,
    calibration: tuple[int, int, int, int] | None = None,
    **policy,
) -> None:
    """Approve the rubric version and mark criteria gating directly (for gate tests, not approval tests).
    `policy`: min_pass_rate, max_error_rate, confidence (the model's defaults otherwise) and decide_on:
    the observed Wilson bound unless given (most gate tests are about it); `calibration`: the calibration
    cells (true pass, false pass, false fail, true fail) the mark relied on, stored in its figures."""
    policy.setdefault("decide_on", "wilson_lower")
    cells = (
        dict(zip(("true_pass", "false_pass", "false_fail", "true_fail"), calibration, strict=True))
        if calibration
        else {}
    )
    from calibration.models import GatingMark

    by = by or User.objects.filter(username="lee").first() or make_user("lee", Role.LEAD)
    RubricVersion.objects.filter(pk=rubric_version.pk).update(
        status=RubricVersion.Status.APPROVED, approved_by=by, approved_at=timezone.now(), approval_reason="tests"
    )
    rubric_version.refresh_from_db()
    for key in keys:
        GatingMark.objects.create(
            rubric_version=rubric_version,
            judge_config=judge,
            criterion=rubric_version.criteria.get(key=key),
            rubric_content_hash=rubric_version.content_hash,
            judge_config_hash=judge.content_hash,
            calibration_eval_set=eval_set,
            tier="gate",
            reason="calibrated in tests",
            figures=cells,
            marked_by=by,
            **policy,
        )


def analyze() -> None:
    """Refresh PostgreSQL's planner statistics after a bulk load in a test.

    The test database's tables were analyzed while empty, so right after thousands of rows arrive the
    planner still believes each table holds one row and may nest full scans inside each other
    (minutes instead of milliseconds for the report's joins). Production gets the same from
    autovacuum shortly after an import; a test cannot wait for it.
    """
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "ANALYZE labeling_case, labeling_output, labeling_annotation, labeling_label, labeling_goldlabel, "
                "judging_judgerun, judging_verdict"
            )


def rejudge(eval_set, rubric_version, judge, outputs: list[Output], key: str, outcomes: list[str]) -> JudgeRun:
    """A run of `judge` giving outputs[i] the verdict outcomes[i] on criterion `key` (a second version's run)."""
    run = make_run(eval_set, rubric_version, judge)
    criterion = rubric_version.criteria.get(key=key)
    Verdict.objects.bulk_create([_verdict(run, o, criterion, v) for o, v in zip(outputs, outcomes, strict=True)])
    return run
