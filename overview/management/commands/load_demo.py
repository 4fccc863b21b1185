"""Load the refund-support demo: users in every role, a rubric, 360 outputs, labels, judges, the instrument
judge's verdicts and a probe run of it, in the workspace refund-support; and a second, small workspace
(overview/demo/billing.py) whose rubric has the same name, where one of the refund team's annotators is the lead.

Safe to run again: every step goes through the product's own idempotent importers.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

import overview.demo
from evals.models import Case, Membership, Output, Role, User, Workspace
from evals.role_groups import sync_role_group
from formats.planner import analyze
from judging.models import JudgeRun, Verdict
from labeling.models import Annotation, GoldLabel, Label
from overview.demo.billing import (
    BILLING_EVAL_SET,
    BILLING_RUBRIC,
    BILLING_WORKSPACE,
    BILLING_WORKSPACE_NAME,
    load_billing_demo,
)
from overview.demo.logins import DEFAULT_DEMO_PASSWORD, DEMO_USERS, DEMO_WORKSPACE, DEMO_WORKSPACE_NAME

# The demo's files: cases, labels and the instrument judge (overview/demo/generate.py writes them).
DEMO_DIR = Path(overview.demo.__file__).resolve().parent
EVAL_SET = "refund-support-demo"
RUBRIC = "refund-support@1"
JUDGE = "demo-instruments"
# The judge's second version (docs/judging.md, "Precedent matching"): examples for one criterion, taken from
# the development split's false passes, measured on the held-out split. The split's seed is fixed so the
# demo's figures are the same on every machine.
JUDGE_V2 = "demo-instruments-v2"
IMPROVED = "within_policy"
SPLIT_SEED = 20261202
# Ready for whoever sets OPENAI_API_KEY (one of the judge key allowlist's names); never run by the demo.
LLM_JUDGE = "demo-gpt"
LLM_KEY_ENV = "OPENAI_API_KEY"  # the api_key_env of judge-llm.json
# The probe run judges each output once per probe: 80 of the 360 (as many as the demo had before it grew)
# show every probe's flips and keep `make run` to about a minute.
PROBE_SAMPLE = 80


class Command(BaseCommand):
    help = "Load the refund-support demo data and the billing team's small workspace (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--audit",
            action="store_true",
            help="also make the README walk's decisions (approve, mark correct_amount gating at 0.85) if nobody "
            "has, and add a release candidate with a partly labeled audit plan (overview/demo/audit.py)",
        )

    def handle(self, *args, **options):
        password = os.environ.get("ICEWATER_DEMO_PASSWORD", DEFAULT_DEMO_PASSWORD)
        before = demo_rows()
        refuse_a_demo_from_before_workspaces()
        with transaction.atomic():
            workspace, made = Workspace.objects.get_or_create(
                slug=DEMO_WORKSPACE, defaults={"name": DEMO_WORKSPACE_NAME}
            )
            for username, role, _ in DEMO_USERS:
                # An account that exists is left as it is: `make run` loads the demo at every start, and must not
                # give back the public password, or the access, that someone took from it before sharing the server.
                # It joins the workspace only when the workspace is made now (nobody can have removed it yet).
                existing = User.objects.filter(username=username).first()
                if existing is not None:
                    if made:
                        Membership.objects.get_or_create(user=existing, workspace=workspace, defaults={"role": role})
                        sync_role_group(existing)
                    continue
                user = User(username=username, is_staff=role == Role.LEAD)
                user.set_password(password)
                user.save()
                Membership.objects.create(user=user, workspace=workspace, role=role)
                sync_role_group(user)
        # Every command below works in the refund team's workspace (the billing team's: load_billing_demo).
        quiet = {"stdout": open(os.devnull, "w"), "verbosity": 0, "workspace": DEMO_WORKSPACE}
        try:
            call_command("import_rubric", str(DEMO_DIR / "rubric.yaml"), **quiet)
        except CommandError as exc:
            if "already exists with different content" not in str(exc):
                raise
            # A data folder made by an earlier demo (the demo rubric changed under the same version).
            raise CommandError(
                f"this database holds an earlier Icewater demo whose {RUBRIC} differs from the current one; "
                "load the demo into a fresh database (for `make run`: remove the data folder, `rm -rf data`, "
                "or set ICEWATER_DATA_DIR to an empty folder). Nothing was imported."
            ) from exc
        call_command("import_cases", "--eval-set", EVAL_SET, str(DEMO_DIR / "cases.jsonl"), **quiet)
        call_command(
            "import_labels", "--eval-set", EVAL_SET, "--rubric", RUBRIC, str(DEMO_DIR / "labels.jsonl"), **quiet
        )
        # The lead opens the labeling queue on this rubric version; ana finds work waiting.
        call_command(
            "open_queue",
            "--eval-set",
            EVAL_SET,
            "--rubric",
            RUBRIC,
            "--by",
            "lee",
            "--reason",
            "demo: label the refund-support outputs",
            **quiet,
        )
        call_command("add_judge", str(DEMO_DIR / "judge.json"), **quiet)
        llm_refused = ""
        try:  # refused (and nothing written) where the operator's key allowlist leaves out its variable
            call_command("add_judge", str(DEMO_DIR / "judge-llm.json"), **quiet)
        except CommandError as exc:
            llm_refused = str(exc)
        load_judge_run(quiet)
        load_probe_run(quiet)
        load_second_version(quiet)
        load_billing_demo(quiet)
        what = (
            f"workspace {DEMO_WORKSPACE}: eval set {EVAL_SET}, rubric {RUBRIC}, judge {JUDGE}; workspace "
            f"{BILLING_WORKSPACE}: eval set {BILLING_EVAL_SET}, its own rubric {BILLING_RUBRIC}"
        )
        if options.get("audit"):
            from overview.demo.audit import load_audit_demo

            plan = load_audit_demo(workspace=workspace, eval_set=EVAL_SET, rubric=RUBRIC, judge=JUDGE, quiet=quiet)
            what += f"; audit plan {plan.pk} of correct_amount on {plan.eval_set.name} (Audits)"
        if before[0] and demo_rows() == before:  # `make run` again on the same data folder
            self.stdout.write(f"Demo already loaded, nothing added: {what}.")
        else:
            # Each import alone stays under analyze_after_import's threshold, together they are thousands of
            # rows in tables that may have been analyzed while empty: the first Home or report would plan
            # nested scans (a minute per query when load_demo runs inside a transaction, as in tests).
            analyze(Case, Output, Annotation, Label, GoldLabel, JudgeRun, Verdict)
            self.stdout.write(f"Demo loaded: {what}.")
        if llm_refused:
            self.stdout.write(f"Judge {LLM_JUDGE} not added: {llm_refused}")
        else:
            self.stdout.write(f"Judge {LLM_JUDGE} (an OpenAI model) runs once {LLM_KEY_ENV} is set.")
        self.stdout.write(f"Demo logins (password {password!r} unless changed since they were made):")
        for username, role, what in DEMO_USERS:
            self.stdout.write(f"  {username:<8} {role.label:<10} {what}")
        self.stdout.write(
            f"  maria is also the lead of {BILLING_WORKSPACE_NAME} ({BILLING_WORKSPACE}): the header's switcher "
            "moves between her two workspaces"
        )


def refuse_a_demo_from_before_workspaces() -> None:
    """A data folder whose demo was loaded before workspaces holds it in the workspace `default` (the migration
    put it there): loading it again into refund-support would make a second copy beside it, which the demo's
    accounts (left as they are) could not reach. Refused, as an earlier demo's rubric is, with what to do."""
    from evals.models import EvalSet

    if Workspace.objects.filter(slug=DEMO_WORKSPACE).exists():
        return
    if EvalSet.objects.filter(name=EVAL_SET).exclude(workspace__slug=DEMO_WORKSPACE).exists():
        raise CommandError(
            f"this database holds an Icewater demo from before workspaces (eval set {EVAL_SET} in another "
            "workspace); load the demo into a fresh database (for `make run`: remove the data folder, `rm -rf data`, "
            "or set ICEWATER_DATA_DIR to an empty folder). Nothing was imported."
        )


def demo_rows() -> tuple[int, ...]:
    """How many of each thing the demo makes there are: the same before and after a load that added nothing."""
    from evals.models import EvalSet, Output, RubricVersion
    from judging.models import JudgeConfig, JudgeRun, ProbeRun, Verdict
    from labeling.models import Annotation, Label, LabelingQueue

    models = (
        EvalSet,
        Output,
        RubricVersion,
        Annotation,
        Label,
        LabelingQueue,
        JudgeConfig,
        JudgeRun,
        ProbeRun,
        Verdict,
    )
    return tuple(model.objects.count() for model in models)


def load_judge_run(quiet: dict) -> None:
    """The demo judge's run, once: a restart finds its verdicts there and judges nothing again."""
    from judging.models import JudgeRun

    runs = JudgeRun.objects.filter(
        eval_set__workspace__slug=DEMO_WORKSPACE, eval_set__name=EVAL_SET, judge_config__name=JUDGE, probe_run=None
    )
    if not runs.filter(status=JudgeRun.Status.DONE).exists():
        call_command("run_judge", "--eval-set", EVAL_SET, "--rubric", RUBRIC, "--judge", JUDGE, "--in-process", **quiet)


def load_probe_run(quiet: dict) -> None:
    """A probe run of the demo judge, once: its results differ by criterion (the control catches the planted
    amount; padding slips past the concision instrument, which counts words)."""
    from judging.models import ProbeRun

    mine = ProbeRun.objects.filter(eval_set__workspace__slug=DEMO_WORKSPACE)
    if not mine.filter(eval_set__name=EVAL_SET, judge_config__name=JUDGE).exists():
        scope = ("--eval-set", EVAL_SET, "--rubric", RUBRIC, "--judge", JUDGE)
        call_command("probe_judge", *scope, "--sample", str(PROBE_SAMPLE), "--in-process", **quiet)


def load_second_version(quiet: dict) -> None:
    """The loop once, as a lead runs it on the workbench: fix the split, take the suggested examples (the
    development split's false passes on IMPROVED, one per distinct quote of the people), derive version 2,
    re-run it on development, and promote it: run it on the held-out split, which counts as one look, as the
    workbench's promote does.
    Once: a restart finds version 2 and its run there."""
    from calibration.workbench.suggested_examples import suggest_examples
    from evals.models import EvalSet, RubricVersion
    from evals.transcript import normalize_ws
    from judging.gold_splits import part_outputs, record_look, start_split
    from judging.guidance import derive_config
    from judging.models import GoldSplit, JudgeConfig, JudgeRun

    workspace = Workspace.objects.get(slug=DEMO_WORKSPACE)
    base = JudgeConfig.objects.get(workspace=workspace, name=JUDGE)
    eval_set = EvalSet.objects.get(workspace=workspace, name=EVAL_SET)
    rubric_version = RubricVersion.objects.by_ref(RUBRIC, workspace)
    lead = User.objects.get(username="lee")
    version = JudgeConfig.objects.filter(workspace=workspace, name=JUDGE_V2).first()
    if version is None:
        split = start_split(eval_set=eval_set, rubric_version=rubric_version, by=lead, seed=SPLIT_SEED)
        found = suggest_examples(
            eval_set=eval_set,
            rubric_version=rubric_version,
            judge_config=base,
            criterion=rubric_version.criteria.get(key=IMPROVED),
            outputs=part_outputs(split, GoldSplit.DEVELOPMENT),
        )
        examples, quotes = [], set()
        for s in found.items:
            if s.false_pass and normalize_ws(s.quote).lower() not in quotes:
                quotes.add(normalize_ws(s.quote).lower())
                examples.append(s.as_example())
        version = derive_config(
            base=base, guidance={"rubric": RUBRIC, "criteria": {IMPROVED: {"examples": examples}}}, by=lead
        )
        record_look(split=split, by=lead, configs=[version], via="demo: promote")
    # The re-run on development (what the workbench compares before promoting), then the held-out run.
    for part in (GoldSplit.DEVELOPMENT, GoldSplit.HELD_OUT):
        runs = JudgeRun.objects.filter(eval_set=eval_set, judge_config=version, split_part=part)
        if not runs.filter(status=JudgeRun.Status.DONE).exists():
            scope = ("--eval-set", EVAL_SET, "--rubric", RUBRIC, "--judge", JUDGE_V2, "--split", part)
            call_command("run_judge", *scope, "--in-process", **quiet)
