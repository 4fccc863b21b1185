from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Accounts, eval sets and rubrics"

    def ready(self) -> None:
        from django.db.models.signals import pre_save

        from evals.accounts import end_sessions_when_activity_changes

        from .models import User

        pre_save.connect(end_sessions_when_activity_changes, sender=User, dispatch_uid="labeling-end-sessions")
