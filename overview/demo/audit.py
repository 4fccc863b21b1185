"""The audit demo (`manage.py load_demo --audit`, issue 22): a release candidate with a partly labeled audit plan.

It makes the README walk's two decisions if nobody has (approve refund-support@1, mark correct_amount gating
at minimum 0.85), then adds a release candidate, agent version v1.5 (generate.py's requests under another
seed), judges it with the demo judge, opens its labeling queue and starts a stratified audit plan of
correct_amount on it with a fixed seed (the design a lead gets by default). Two batches of BATCH go to the
queue, the order's next outputs whatever the judge said of them; maria's and deshawn's labels (with rita's gold
where they disagreed, every third disagreement still waiting) on the first batch and the first LABELED - BATCH of
the second arrive through the label import. Enough for the interval and the forecast, not for a decision.

Everything goes through the product's own functions and importers; it runs once (a second call finds the
plan and adds nothing).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from django.core.management import call_command

from calibration.audits.plans import release_plan_next, start_plan
from calibration.gate.approvals import approve_rubric_version, mark_gating
from calibration.models import AuditPlan, GatingMark
from calibration.stats.policy import GateThresholds
from evals.models import EvalSet, RubricVersion, User, Workspace
from judging.models import JudgeConfig
from labeling.models import AuditOrderItem

from .generate import build

CANDIDATE = "refund-support-rc2"
AGENT_VERSION = "v1.5"
CANDIDATE_SEED = 20261202  # the candidate's requests (generate.py's scenarios under another seed)
REQUESTS = 150
ORDER_SEED = 22  # the audit order's seed, kept with the plan
KEY = "correct_amount"
MIN_PASS_RATE = 0.85  # the README walk's minimum
BATCH = 25
RELEASED = 2 * BATCH
LABELED = 36


def released_case_ids(plan: AuditPlan) -> list[str]:
    """The case ids a stratified plan released, in release order (its path through each stratum's order)."""
    plan.refresh_from_db(fields=["path"])
    items = AuditOrderItem.objects.filter(order=plan.order).order_by("position")
    by_stratum: tuple[list[str], list[str]] = ([], [])
    for case_id, stratum in zip(items.values_list("output__case__case_id", flat=True), plan.strata, strict=True):
        by_stratum[int(stratum)].append(case_id)
    taken = [0, 0]
    released = []
    for stratum in plan.path:
        released.append(by_stratum[int(stratum)][taken[int(stratum)]])
        taken[int(stratum)] += 1
    return released


def load_audit_demo(*, workspace: Workspace, eval_set: str, rubric: str, judge: str, quiet: dict) -> AuditPlan:
    """`quiet`: the call_command options of the demo's commands, `workspace` among them."""
    existing = AuditPlan.objects.filter(eval_set__workspace=workspace, eval_set__name=CANDIDATE).first()
    if existing is not None:
        return existing
    lead = User.objects.get(username="lee")
    rubric_version = RubricVersion.objects.by_ref(rubric, workspace)
    judge_config = JudgeConfig.objects.get(workspace=workspace, name=judge)
    if rubric_version.status == RubricVersion.Status.DRAFT:
        approve_rubric_version(
            rubric_version=rubric_version, by=lead, reason="demo: definitions read well; people agree"
        )
        rubric_version.refresh_from_db()
    if not GatingMark.objects.for_instrument(rubric_version, judge_config).filter(criterion__key=KEY).exists():
        mark_gating(
            rubric_version=rubric_version,
            judge_config=judge_config,
            eval_set=EvalSet.objects.get(workspace=workspace, name=eval_set),
            keys=[KEY],
            by=lead,
            reason="demo: the instrument checks the reference's amount, which is what people check",
            policy=GateThresholds(min_pass_rate=MIN_PASS_RATE),
        )
    outputs, labels = build(
        seed=CANDIDATE_SEED, requests=REQUESTS, labeled=REQUESTS, versions=(AGENT_VERSION,), prefix="rc2"
    )
    with tempfile.TemporaryDirectory() as folder:
        cases = Path(folder) / "cases.jsonl"
        cases.write_text("".join(json.dumps(row) + "\n" for row in outputs))
        call_command("import_cases", "--eval-set", CANDIDATE, str(cases), **quiet)
        call_command(
            "run_judge", "--eval-set", CANDIDATE, "--rubric", rubric, "--judge", judge, "--in-process", **quiet
        )
        reason = "demo: the release candidate v1.5"
        call_command(
            "open_queue", "--eval-set", CANDIDATE, "--rubric", rubric, "--by", "lee", "--reason", reason, **quiet
        )
        candidate = EvalSet.objects.get(workspace=workspace, name=CANDIDATE)
        plan = start_plan(
            criterion=rubric_version.criteria.get(key=KEY),
            eval_set=candidate,
            judge_config=judge_config,
            by=lead,
            seed=ORDER_SEED,
            design=AuditPlan.Design.STRATIFIED,
        )
        for batch, labeled in ((1, BATCH), (2, LABELED - BATCH)):
            release_plan_next(plan=plan, by=lead, k=BATCH)
            wanted = set(released_case_ids(plan)[(batch - 1) * BATCH :][:labeled])
            given = Path(folder) / f"labels-{batch}.jsonl"
            given.write_text("".join(json.dumps(row) + "\n" for row in labels if row["case_id"] in wanted))
            call_command("import_labels", "--eval-set", CANDIDATE, "--rubric", rubric, str(given), **quiet)
    return plan
