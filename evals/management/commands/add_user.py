from __future__ import annotations

import getpass
import os

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evals.audit_log import record_membership
from evals.models import Membership, Role, User
from evals.role_groups import sync_role_group
from evals.workspace_option import add_workspace_argument, chosen_workspace


class Command(BaseCommand):
    help = (
        "Create or update an account and its role in one workspace (repeat for others). Password from "
        "ICEWATER_PASSWORD, else prompted."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=[r.value for r in Role], help="the role in the workspace")
        add_workspace_argument(parser)
        parser.add_argument("--staff", action="store_true", help="also allow the Django admin")

    def handle(self, *args, username: str, role: str, staff: bool, workspace: str | None, **options):
        chosen = chosen_workspace(workspace)
        username = username.strip()
        if not username or len(username) > 150 or any(ch.isspace() for ch in username):
            raise CommandError(f"username {username!r} must be 1-150 characters without spaces")
        password = os.environ.get("ICEWATER_PASSWORD")
        if password is None:
            password = getpass.getpass(f"Password for {username}: ")
            if password != getpass.getpass("Again: "):
                raise CommandError("the two passwords differ; nothing was changed")
        user = User.objects.filter(username=username).first() or User(username=username)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(f"password rejected: {' '.join(exc.messages)}; nothing was changed") from None
        with transaction.atomic():
            created = user.pk is None
            user.is_active = True
            if staff:
                user.is_staff = True
            user.set_password(password)
            user.save()
            previous = Membership.objects.filter(user=user, workspace=chosen).values_list("role", flat=True).first()
            Membership.objects.update_or_create(user=user, workspace=chosen, defaults={"role": role})
            record_membership(chosen, None, user, previous, role, how="manage.py add_user")
            sync_role_group(user)  # a lead gets the lead group's admin permissions (evals/role_groups.py)
        self.stdout.write(f"{'created' if created else 'updated'} {username} ({role} in {chosen.slug})")
