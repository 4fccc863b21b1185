"""Open an eval set's labeling queue under a rubric version, or move it to another one (a lead's decision).

python manage.py open_queue --eval-set refund-support-demo --rubric refund-support@1 --by lee
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from evals.access import has_role
from evals.models import EvalSet, Role, RubricVersion, User
from evals.validators import UnknownName
from evals.workspace_option import add_workspace_argument, chosen_workspace
from labeling.queue import QueueError, current_queue, move_queue


class Command(BaseCommand):
    help = "Open or move the labeling queue of an eval set to a rubric version (NAME@VERSION). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True)
        parser.add_argument("--rubric", required=True, help="NAME@VERSION")
        parser.add_argument("--by", required=True, help="username of the lead who decides it")
        parser.add_argument("--reason", default="")
        add_workspace_argument(parser)

    def handle(self, *args, eval_set: str, rubric: str, by: str, reason: str, **options):
        workspace = chosen_workspace(options["workspace"])
        found = EvalSet.objects.filter(workspace=workspace, name=eval_set).first()
        if found is None:
            raise CommandError(f'there is no eval set "{eval_set}"; import its cases first')
        try:
            version = RubricVersion.objects.by_ref(rubric, workspace)
        except UnknownName as exc:
            raise CommandError(str(exc)) from None
        lead = User.objects.filter(username=by).first()
        if lead is None or not has_role(lead, found.workspace_id, Role.LEAD):
            raise CommandError(
                f'"{by}" is not an active lead of workspace {workspace.slug}: only a lead opens or moves a '
                "labeling queue"
            )
        queue = current_queue(found)
        if queue is not None and queue.rubric_version_id == version.pk:
            self.stdout.write(f"{found.name} is already labeled under {version.ref}; nothing changed.")
            return
        try:
            move_queue(eval_set=found, rubric_version=version, by=lead, reason=reason)
        except QueueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{found.name} is now labeled under {version.ref}.")
