from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration, approvals and the release gate"

    def ready(self) -> None:
        # An audit plan's stored figures go stale when its labels or gold change (issue 37).
        from calibration.audits import figures_triggers
        from calibration.report import report_triggers

        figures_triggers.connect()
        # And a large eval set's stored report when its labels, gold, judge runs or gating marks change.
        report_triggers.connect()
