from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration, approvals and the release gate"

    def ready(self) -> None:
        # An audit plan's stored figures go stale when its labels or gold change (issue 37).
        from calibration.audits import figures_triggers

        figures_triggers.connect()
