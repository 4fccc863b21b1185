from django.apps import AppConfig


class WatchConfig(AppConfig):
    name = "watch"
    verbose_name = "The watch on production traffic"

    def ready(self) -> None:
        from . import signals  # noqa: F401 - connects the receivers: settled gold sends the watch's update
