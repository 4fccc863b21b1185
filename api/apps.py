from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "JSON API"

    def ready(self) -> None:
        from calibration.lead_group import sync_lead_group

        # Again once the API's permissions exist (calibration's own sync runs before they are made): leads read
        # tokens and pushes in the admin.
        post_migrate.connect(sync_lead_group, sender=self, dispatch_uid="icewater-lead-group-api")
