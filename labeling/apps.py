from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Eval sets, rubrics and human labels"

    def ready(self) -> None:
        from django.db.models.signals import pre_save

        from .accounts import end_sessions_when_activity_changes
        from .models import User

        pre_save.connect(end_sessions_when_activity_changes, sender=User, dispatch_uid="labeling-end-sessions")
