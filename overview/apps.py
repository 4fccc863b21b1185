from django.apps import AppConfig
from django.db.models.signals import post_migrate


class OverviewConfig(AppConfig):
    name = "overview"
    verbose_name = "Home, progress and the pages that read several apps"

    def ready(self) -> None:
        from .lead_permissions import sync_lead_group

        # After overview's own post_migrate: by then every app before it in INSTALLED_APPS has its permissions.
        post_migrate.connect(sync_lead_group, sender=self, dispatch_uid="icewater-lead-group")
