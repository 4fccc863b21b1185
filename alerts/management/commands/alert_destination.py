"""`manage.py alert_destination add|list|remove|test` with --workspace: a workspace's alert destinations from the
command line, under the same rules as the page (alerts/destinations.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from alerts import destinations
from alerts.delivery import enqueue, send_test
from alerts.models import AlertDelivery, AlertDestination, DestinationKind
from alerts.sending import attempt
from evals.workspace_option import add_workspace_argument, chosen_workspace
from evals.workspaces import in_workspace


class Command(BaseCommand):
    help = "Add, list, remove or test a workspace's alert destinations (docs/alerts.md)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add a destination")
        add.add_argument("name")
        add.add_argument("--kind", required=True, choices=DestinationKind.values)
        add.add_argument("--url", default="", help="slack, webhook: the webhook's https:// URL")
        add.add_argument("--addresses", default="", help="email: addresses separated by commas")
        add.add_argument("--secret-env", default="", help="webhook: the variable holding the signing secret")
        sub.add_parser("list", help="list the destinations")
        remove = sub.add_parser("remove", help="remove a destination (its deliveries stay in the log)")
        remove.add_argument("name")
        test = sub.add_parser("test", help="send a test alert now, from this process, and say how it went")
        test.add_argument("name")
        for parser_ in (add, sub.choices["list"], remove, test):
            add_workspace_argument(parser_)

    def handle(self, *args, action: str, **options):
        workspace = chosen_workspace(options.get("workspace"))
        if action == "list":
            for d in in_workspace(AlertDestination, workspace).order_by("name"):
                self.stdout.write(f"{d.name}\t{d.kind}\t{'on' if d.enabled else 'off'}\t{destinations.target(d)}")
            return
        if action == "add":
            try:
                made = destinations.add_destination(
                    workspace=workspace,
                    by=None,
                    name=options["name"],
                    kind=options["kind"],
                    url=options["url"],
                    addresses=options["addresses"],
                    secret_env=options["secret_env"],
                )
            except destinations.DestinationRefused as exc:
                raise CommandError(f"destination {options['name']} not added: {exc}") from None
            self.stdout.write(f"added {made.kind} destination {made.name} to workspace {workspace.slug}")
            return
        found = in_workspace(AlertDestination, workspace).filter(name=options["name"]).first()
        if found is None:
            raise CommandError(f"workspace {workspace.slug} has no alert destination {options['name']!r}")
        if action == "remove":
            destinations.remove_destination(found)
            self.stdout.write(f"removed destination {found.name}; its deliveries stay in the log")
            return
        delivery = send_test(found, sent_by="manage.py alert_destination test", queue=False)
        outcome = attempt(delivery.pk)  # now, here, so the operator sees the answer; retries go to the workers
        if outcome is not None and outcome.retry_in is not None:
            enqueue(delivery.pk, countdown=outcome.retry_in)
        delivery = AlertDelivery.objects.get(pk=delivery.pk)
        said = f"test alert to {found.name}: {delivery.status}"
        if delivery.last_status_code:
            said += f" (HTTP {delivery.last_status_code})"
        if delivery.last_error:
            said += f": {delivery.last_error}"
        if outcome is not None and outcome.retry_in is not None:
            said += f"; a Celery worker tries again in {outcome.retry_in:g} s"
        self.stdout.write(said)
        if delivery.status != "sent" and (outcome is None or outcome.retry_in is None):
            raise CommandError(said)
