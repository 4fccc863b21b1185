from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug

from evals.audit_log import record
from evals.models import AuditAction, Workspace


class Command(BaseCommand):
    help = "Create a workspace (or rename an existing one with --name). Site administrators' work."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="letters, digits, - and _: how addresses, commands and the role map name it")
        parser.add_argument("--name", default="", help="the display name (default: the slug)")

    def handle(self, *args, slug: str, name: str, **options):
        try:
            validate_slug(slug)
        except ValidationError:
            raise CommandError(f"{slug!r} is not a slug: use letters, digits, - and _ only") from None
        if len(slug) > 50 or len(name) > 200:
            raise CommandError("a workspace slug has at most 50 characters and a name at most 200")
        name = name.strip() or slug
        workspace, created = Workspace.objects.get_or_create(slug=slug, defaults={"name": name})
        if created:
            record(
                workspace, None, AuditAction.WORKSPACE_CREATED, f"workspace {slug} created (manage.py add_workspace)"
            )
        if not created and workspace.name != name and options["name"]:
            workspace.name = name
            workspace.save(update_fields=["name"])
            self.stdout.write(f"renamed workspace {slug} to {name!r}")
            return
        self.stdout.write(f"{'created' if created else 'exists:'} workspace {slug} ({workspace.name})")
