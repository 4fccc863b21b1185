"""The demo's second workspace: a small billing team, so that a newcomer sees the switch and the separation.

Its rubric is called refund-support@1, as the refund team's is, with other criteria (names are unique within a
workspace, not across them); six cases, one output each, and a labeling queue its lead opened. maria is an
annotator of the refund team and the lead of this one: signed in as her, the header's switcher moves between
the two, and each workspace shows only its own eval sets, rubric and queue. deshawn labels in both.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command

from evals.models import Membership, Role, User, Workspace
from evals.role_groups import sync_role_group

BILLING_DIR = Path(__file__).resolve().parent / "billing"
BILLING_WORKSPACE = "billing"
BILLING_WORKSPACE_NAME = "Billing team"
BILLING_EVAL_SET = "billing-demo"
BILLING_RUBRIC = "refund-support@1"  # the same name as the refund team's rubric
# (username, role in the billing workspace): the refund team's demo accounts with a second membership.
BILLING_MEMBERS = [("maria", Role.LEAD), ("deshawn", Role.ANNOTATOR)]


def load_billing_demo(quiet: dict) -> Workspace:
    """Make the billing workspace with its members, rubric, cases and queue. Idempotent: the imports are, and
    the members are added only when the workspace is made, so a lead who removed one later is not overruled."""
    workspace, made = Workspace.objects.get_or_create(slug=BILLING_WORKSPACE, defaults={"name": BILLING_WORKSPACE_NAME})
    if made:
        for username, role in BILLING_MEMBERS:
            user = User.objects.filter(username=username).first()
            if user is not None:
                Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": role})
                sync_role_group(user)  # maria leads here: she joins the admin's lead group
    here = {**quiet, "workspace": BILLING_WORKSPACE}
    call_command("import_rubric", str(BILLING_DIR / "rubric.yaml"), **here)
    call_command("import_cases", "--eval-set", BILLING_EVAL_SET, str(BILLING_DIR / "cases.jsonl"), **here)
    lead = next(name for name, role in BILLING_MEMBERS if role == Role.LEAD)
    if Membership.objects.filter(
        workspace=workspace, user__username=lead, user__is_active=True, role=Role.LEAD
    ).exists():
        reason = "demo: label the billing agent's refunds"
        scope = ("--eval-set", BILLING_EVAL_SET, "--rubric", BILLING_RUBRIC)
        call_command("open_queue", *scope, "--by", lead, "--reason", reason, **here)
    return workspace
