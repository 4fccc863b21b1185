"""Plain-Python builders for test data: every function here writes model rows. Keep them boring: explicit
arguments, sensible defaults. Helpers that drive pages or runs stay in the tests' `*_helpers.py` modules.

In the order of the apps: people, eval sets, rubric versions and outputs (`evals`); labeling queues,
annotations and gold (`labeling`); judge configs, runs and verdicts (`judging`); whole calibration sets
and gating marks (`calibration`). `calibration_set` builds an eval set from a compact table, so a test can
state its data in one readable literal.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import count

from django.utils import timezone

from evals.models import (
    Case,
    Criterion,
    EvalSet,
    Membership,
    Output,
    Role,
    Rubric,
    RubricVersion,
    User,
    Workspace,
    rubric_content_hash,
)
from judging import runner
from judging.models import JudgeConfig, JudgeRun, Verdict
from labeling.models import Annotation, GoldLabel, Label, LabelingQueue

from .fake_llm import FakeLLM
from .judging_helpers import KEY_ENV

_seq = count(1)

# --- evals: people, eval sets, rubric versions, outputs ----------------------------------------------

DEFAULT_CRITERIA = [
    {
        "key": "correct_amount",
        "definition": "The refund amount stated matches the amount in the reference.",
        "pass_example": "Your refund of $40.00 is on its way.",
        "fail_example": "Your refund of $45.00 is on its way (reference says $40.00).",
    },
    {
        "key": "next_step",
        "definition": "The customer is told what happens next and when.",
        "pass_example": "You will see the money within 5 business days.",
        "fail_example": "Refund processed.",
    },
]
# The agent's answer every default output gives (right on both default criteria; reference: $40.00).
RESPONSE = "I have issued a refund of $40.00. You will see it within 5 business days."


def default_workspace() -> Workspace:
    """The workspace tests work in unless they say otherwise (a database from before workspaces gets `default`)."""
    found, _ = Workspace.objects.get_or_create(slug="default", defaults={"name": "Default workspace"})
    return found


def make_workspace(slug: str | None = None, name: str = "") -> Workspace:
    slug = slug or f"ws-{next(_seq)}"
    return Workspace.objects.create(slug=slug, name=name or slug)


def make_user(
    username: str | None = None,
    role: str = Role.ANNOTATOR,
    password: str = "pw-for-tests-1",
    workspace: Workspace | None = None,
) -> User:
    """An account with `role` in `workspace` (the default one unless given)."""
    user = User(username=username or f"user{next(_seq)}")
    user.set_password(password)
    user.save()
    Membership.objects.create(user=user, workspace=workspace or default_workspace(), role=role)
    return user


def set_role(user: User, role: str, workspace: Workspace | None = None) -> None:
    """Give `user` `role` in `workspace` (the default one unless given), as a lead would on the Members page."""
    Membership.objects.update_or_create(user=user, workspace=workspace or default_workspace(), defaults={"role": role})
    user.forget_workspace_roles()


def annotator(name: str) -> User:
    """The annotator `name`, made on first use."""
    return User.objects.filter(username=name).first() or make_user(name, Role.ANNOTATOR)


def make_eval_set(name: str | None = None, workspace: Workspace | None = None) -> EvalSet:
    return EvalSet.objects.create(name=name or f"set-{next(_seq)}", workspace=workspace or default_workspace())


def make_rubric_version(
    name: str | None = None,
    version: str = "1",
    criteria: list[dict] | None = None,
    instruction: str = "Grade it.",
    workspace: Workspace | None = None,
) -> RubricVersion:
    criteria = DEFAULT_CRITERIA if criteria is None else criteria
    rubric, _ = Rubric.objects.get_or_create(
        name=name or f"rubric-{next(_seq)}", workspace=workspace or default_workspace()
    )
    rv = RubricVersion.objects.create(
        rubric=rubric,
        version=version,
        instruction=instruction,
        content_hash=rubric_content_hash(instruction, criteria),
    )
    for i, c in enumerate(criteria):
        Criterion.objects.create(rubric_version=rv, order=i, **c)
    return rv


def six_criteria() -> list[dict]:
    return [
        {
            "key": f"crit_{i}",
            "definition": f"Criterion number {i} holds.",
            "pass_example": f"pass {i}",
            "fail_example": f"fail {i}",
        }
        for i in range(1, 7)
    ]


def make_output(
    eval_set: EvalSet,
    case_id: str | None = None,
    agent_version: str = "default",
    input: str = "I was charged twice for order 1234. Can I get a refund?",
    reference: str = "Refund $40.00 for the duplicate charge.",
    response: str = RESPONSE,
    tool_calls: list | None = None,
) -> Output:
    case, _ = Case.objects.get_or_create(
        eval_set=eval_set, case_id=case_id or f"case-{next(_seq)}", defaults={"input": input, "reference": reference}
    )
    if tool_calls is None:
        tool_calls = [{"name": "lookup_order", "args": {"order_id": "1234"}, "response": {"duplicate_charge": 40.0}}]
    return Output.objects.create(case=case, agent_version=agent_version, response=response, tool_calls=tool_calls)


def _bulk_outputs(eval_set, count: int, agent_version: str = "default", prefix: str = "b") -> list[Output]:
    tag = next(_seq)
    cases = Case.objects.bulk_create(
        [Case(eval_set=eval_set, case_id=f"{prefix}{tag}-{i}", input=f"question {i}") for i in range(count)]
    )
    return Output.objects.bulk_create(
        [Output(case=c, agent_version=agent_version, response=f"answer {i}") for i, c in enumerate(cases)]
    )


# --- labeling: queues, annotations, gold --------------------------------------------------------------


def open_queue(eval_set: EvalSet, rubric_version: RubricVersion, by: User | None = None) -> LabelingQueue:
    by = by or User.objects.filter(role="lead").first() or make_user("queue-lead", "lead")
    LabelingQueue.objects.filter(eval_set=eval_set, is_current=True).update(is_current=False)
    return LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rubric_version, opened_by=by)


def labeling_setup(n_outputs: int = 1, criteria: list[dict] | None = None, lead: User | None = None):
    """An eval set with `n_outputs` outputs, a rubric version, and its queue open."""
    eval_set = make_eval_set()
    rv = make_rubric_version(criteria=criteria)
    outputs = [make_output(eval_set, case_id=f"case-{i:03d}") for i in range(1, n_outputs + 1)]
    open_queue(eval_set, rv, lead)
    return eval_set, rv, outputs


def annotate(
    output: Output,
    rubric_version: RubricVersion,
    user: User,
    slot: int,
    outcomes: dict[str, str],
    evidence: dict[str, str] | None = None,
    submitted: bool = True,
    reserved_until: datetime | None = None,
) -> Annotation:
    """An annotation in `slot` with one label per criterion key of `outcomes` (a draft unreserved unless told)."""
    ann = Annotation.objects.create(
        output=output,
        rubric_version=rubric_version,
        annotator=user,
        slot=slot,
        status=Annotation.Status.SUBMITTED if submitted else Annotation.Status.DRAFT,
        submitted_at=timezone.now() if submitted else None,
        reserved_until=reserved_until,
    )
    criteria = {c.key: c for c in rubric_version.criteria.all()}
    for key, outcome in outcomes.items():
        Label.objects.create(
            annotation=ann, criterion=criteria[key], outcome=outcome, evidence=(evidence or {}).get(key, "NONE")
        )
    return ann


def annotate_directly(
    output: Output,
    rubric_version: RubricVersion,
    annotator: User,
    answers: dict[str, tuple[str, str]],
    *,
    slot: int | None = None,
    submit: bool = True,
) -> Annotation:
    """Write an annotation straight to the database (for tests about reading, not about the forms): the next
    free slot unless given; a draft is reserved for 30 minutes, as the queue would."""
    if slot is None:
        slot = Annotation.objects.filter(output=output, rubric_version=rubric_version).count() + 1
    return annotate(
        output,
        rubric_version,
        annotator,
        slot,
        {key: outcome for key, (outcome, _) in answers.items()},
        evidence={key: evidence for key, (_, evidence) in answers.items()},
        submitted=submit,
        reserved_until=None if submit else timezone.now() + timedelta(minutes=30),
    )


def all_answers(rubric_version: RubricVersion, outcome: str = "PASS", evidence: str = "NONE") -> dict:
    """`annotate_directly`'s answers: the same outcome and evidence on every criterion."""
    return {c.key: (outcome, evidence) for c in Criterion.objects.filter(rubric_version=rubric_version)}


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


# --- judging: judge configs, runs, verdicts -----------------------------------------------------------


def make_judge(
    name: str | None = None, model_id: str = "judge-model-1", workspace: Workspace | None = None, **fields
) -> JudgeConfig:
    """A judge config whose verdicts tests write themselves (backend `imported` unless given)."""
    fields.setdefault("backend", JudgeConfig.Backend.IMPORTED)
    return JudgeConfig.objects.create(
        name=name or f"judge-{next(_seq)}", model_id=model_id, workspace=workspace or default_workspace(), **fields
    )


def make_llm_judge(fake: FakeLLM | None = None, name: str = "judge", backend: str = "openai", **fields) -> JudgeConfig:
    """A judge config that runs: an OpenAI or Anthropic backend with the tests' key variable, pointed at the fake
    LLM server when one is given; an instrument or imported backend has neither model nor key."""
    defaults: dict = {"model_id": "judge-model-2026-01", "api_key_env": KEY_ENV, "timeout_s": 5.0, "max_retries": 2}
    if fake is not None:
        defaults["base_url"] = fake.openai_base_url if backend == "openai" else fake.anthropic_base_url
    if backend in ("instrument", "imported"):
        defaults = {"model_id": "", "api_key_env": ""}
    defaults.update(fields)
    defaults.setdefault("workspace", default_workspace())
    return JudgeConfig.objects.create(name=name, backend=backend, **defaults)


def make_scope(
    judge: JudgeConfig,
    *,
    responses: list[str] | None = None,
    rubric=None,
    eval_set=None,
    agent_version: str = "default",
) -> runner.Scope:
    """What a run of `judge` covers: one output per response (case-001, ...) in a new eval set unless given."""
    eval_set = eval_set or make_eval_set()
    rubric = rubric or make_rubric_version()
    for i, response in enumerate(responses or [RESPONSE]):
        make_output(eval_set, case_id=f"case-{i + 1:03d}", response=response, agent_version=agent_version)
    return runner.Scope(eval_set, rubric, judge, "")


# The probe tests' rubric and instrument judge, whose flip rates are known by hand.
PROBE_CRITERIA = [
    {"key": "correct_amount", "definition": "The amount stated matches the reference."},
    {"key": "next_step", "definition": "Says when the money arrives."},
    {"key": "substance", "definition": "A substantial answer."},
    {"key": "amount_noted", "definition": "Mentions the amount."},
]
PROBE_INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": r"within \d+ business days"},
    # Fooled by padding by design: a long answer passes, whatever it says.
    "substance": {"kind": "min_length", "min_words": 30},
    # Ignores its input: only a negative control can show it.
    "amount_noted": {"kind": "constant", "outcome": "PASS"},
}
WRONG_AMOUNT = "I have issued a refund of $45.00. You will see it within 5 business days."
NO_NEXT_STEP = "Refund of $40.00 done."
PROBE_RESPONSES = [RESPONSE] * 6 + [WRONG_AMOUNT] * 2 + [NO_NEXT_STEP] * 2


def make_instrumented(name: str = "refund", eval_set=None, judge: str = "instruments") -> runner.Scope:
    """10 outputs, the four probe criteria above (rubric NAME@1) and the instrument judge JUDGE."""
    config = make_llm_judge(name=judge, backend="instrument", instruments=PROBE_INSTRUMENTS)
    rubric = make_rubric_version(name=name, criteria=PROBE_CRITERIA)
    return make_scope(config, responses=PROBE_RESPONSES, rubric=rubric, eval_set=eval_set)


def make_run(eval_set, rubric_version, judge: JudgeConfig, agent_version: str = "") -> JudgeRun:
    """A finished run, for verdicts written by the test."""
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
    verdict = _verdict(
        run,
        output,
        criterion,
        outcome,
        sample=sample,
        evidence=evidence,
        evidence_found=evidence_found,
        raw_output=raw_output or f'{{"criterion": "{key}", "verdict": "{outcome}"}}',
    )
    verdict.save(force_insert=True)
    return verdict


def _verdict(run: JudgeRun, output: Output, criterion: Criterion, outcome: str, **fields) -> Verdict:
    """An unsaved verdict of `run` (for bulk_create): no evidence quoted unless `fields` say otherwise."""
    return Verdict(
        run=run,
        output=output,
        rubric_version=run.rubric_version,
        criterion=criterion,
        judge_config=run.judge_config,
        judge_config_hash=run.judge_config.content_hash,
        model_id=run.judge_config.model_id,
        outcome=outcome,
        **{"evidence": "NONE", "evidence_found": True, **fields},
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


def rejudge(eval_set, rubric_version, judge, outputs: list[Output], key: str, outcomes: list[str]) -> JudgeRun:
    """A run of `judge` giving outputs[i] the verdict outcomes[i] on criterion `key` (a second version's run)."""
    run = make_run(eval_set, rubric_version, judge)
    criterion = rubric_version.criteria.get(key=key)
    Verdict.objects.bulk_create([_verdict(run, o, criterion, v) for o, v in zip(outputs, outcomes, strict=True)])
    return run


# --- calibration: whole calibration sets, gating marks ------------------------------------------------


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
