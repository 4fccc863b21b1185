"""Load the refund-support demo: users in every role, a rubric, 80 outputs, labels, a judge, its verdicts and
a probe run of it.

Safe to run again: every step goes through the product's own idempotent importers.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

import labeling.demo
from labeling.groups import sync_role_group
from labeling.models import Role, User

# The demo files are labeling's (labeling/demo); the command lives here, at the top, because the demo also
# makes judge configs, runs and probe runs, which labeling may not import.
DEMO_DIR = Path(labeling.demo.__file__).resolve().parent
EVAL_SET = "refund-support-demo"
RUBRIC = "refund-support@1"
JUDGE = "demo-instruments"
DEMO_USERS = [
    ("maria", Role.ANNOTATOR, "labels all day; has finished her share"),
    ("deshawn", Role.ANNOTATOR, "the second annotator on every output"),
    ("ana", Role.ANNOTATOR, "new: her queue is full"),
    ("rita", Role.REVIEWER, "adjudicates disagreements"),
    ("lee", Role.LEAD, "approves rubrics and gating criteria; can open the admin"),
]
# A development password for a local demo only; set ICEWATER_DEMO_PASSWORD to choose another.
DEFAULT_DEMO_PASSWORD = "icewater-demo"


class Command(BaseCommand):
    help = "Load the refund-support demo data (idempotent)."

    def handle(self, *args, **options):
        password = os.environ.get("ICEWATER_DEMO_PASSWORD", DEFAULT_DEMO_PASSWORD)
        with transaction.atomic():
            for username, role, _ in DEMO_USERS:
                user = User.objects.filter(username=username).first() or User(username=username)
                user.role = role
                user.is_active = True
                user.is_staff = role == Role.LEAD
                user.set_password(password)
                user.save()
                sync_role_group(user)
        quiet = {"stdout": open(os.devnull, "w"), "verbosity": 0}
        call_command("import_rubric", str(DEMO_DIR / "rubric.yaml"), **quiet)
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
        call_command("run_judge", "--eval-set", EVAL_SET, "--rubric", RUBRIC, "--judge", JUDGE, "--in-process", **quiet)
        load_probe_run(quiet)
        self.stdout.write(f"Demo loaded: eval set {EVAL_SET}, rubric {RUBRIC}, judge {JUDGE}.")
        self.stdout.write(f"Demo logins (password {password!r}):")
        for username, role, what in DEMO_USERS:
            self.stdout.write(f"  {username:<8} {role.label:<10} {what}")


def load_probe_run(quiet: dict) -> None:
    """A probe run of the demo judge, once: its results differ by criterion (the controls catch the planted
    amount and the removed next step; padding slips past the concision instrument, which counts words)."""
    from judging.models import ProbeRun

    if not ProbeRun.objects.filter(eval_set__name=EVAL_SET, judge_config__name=JUDGE).exists():
        scope = ("--eval-set", EVAL_SET, "--rubric", RUBRIC, "--judge", JUDGE)
        call_command("probe_judge", *scope, "--in-process", **quiet)
