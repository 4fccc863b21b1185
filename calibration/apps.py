from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration, approvals and the release gate"

    def ready(self) -> None:
        from .lead_group import sync_lead_group

        # After calibration's own migrations: by then every app before it in INSTALLED_APPS has its permissions.
        post_migrate.connect(sync_lead_group, sender=self, dispatch_uid="icewater-lead-group")
