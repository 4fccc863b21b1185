from django.apps import AppConfig


class PeriodicConfig(AppConfig):
    name = "periodic"
    verbose_name = "Periodic work"
