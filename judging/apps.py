from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judges and verdicts"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the provenance check
